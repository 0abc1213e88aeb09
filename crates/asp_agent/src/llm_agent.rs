//! The LLM agent (SPEC §1.2–1.3): the model sees the system prompt, the goal with the
//! plan and the state, and the tools; it calls tools until it answers with text. Every
//! call goes through the shared [`GoalRuntime`]. Unusable replies (garbage bodies,
//! arguments that are not JSON, empty or truncated replies) are repaired where possible
//! and otherwise re-asked, up to `limits.max_malformed_replies`; then the goal fails.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use asp_core::{Failure, FailureKind, ToolOutput};
use asp_llm::repair::{Recovery, parse_lenient, parse_object_lenient};
use asp_llm::{ChatRequest, ChatResponse, FinishReason, LlmClient, Message, ToolCall, UsageTotals};
use serde_json::Value;
use tracing::debug;

use crate::events::{AgentEvent, GoalError, GoalErrorCode, Remedy};
use crate::planner::Plan;
use crate::prompts;
use crate::runtime::{GoalRuntime, Stop};
use crate::tools::ToolName;

/// How a driver ended.
#[derive(Debug)]
pub(crate) enum DriveEnd {
    Completed(String),
    Failed(GoalError, String),
    Stopped(Stop),
}

/// Model use of one goal.
#[derive(Debug, Default)]
pub(crate) struct ModelUse {
    pub usage: UsageTotals,
    /// Time inside the client's `chat` (HTTP, JSON, backoff).
    pub wait: Duration,
    /// Time on the network and in the server only.
    pub http: Duration,
    pub turns: u32,
}

impl ModelUse {
    pub fn record(
        &mut self,
        rt: &mut GoalRuntime<'_>,
        client: &LlmClient,
        resp: &ChatResponse,
        latency: Duration,
    ) {
        self.turns += 1;
        self.wait += latency;
        self.http += resp.http_time;
        self.usage.record(resp.usage, &client.pricing());
        rt.emit(AgentEvent::ModelReply {
            goal_id: rt.goal_id.clone(),
            turn: self.turns,
            latency_ms: latency.as_secs_f64() * 1e3,
            attempts: resp.attempts,
            usage: resp.usage,
            text: resp.content.clone(),
            tool_calls: resp.tool_calls.iter().map(|c| c.name.clone()).collect(),
            finish_reason: finish_reason_name(&resp.finish_reason),
        });
    }
}

fn finish_reason_name(f: &FinishReason) -> String {
    match f {
        FinishReason::Stop => "stop".into(),
        FinishReason::ToolCalls => "tool_calls".into(),
        FinishReason::Length => "length".into(),
        FinishReason::ContentFilter => "content_filter".into(),
        FinishReason::Unknown => "unknown".into(),
        FinishReason::Other(s) => s.clone(),
    }
}

/// The goal message: goal, plan, state.
pub(crate) fn goal_message(goal: &str, plan: Option<&Plan>, rt: &GoalRuntime<'_>) -> String {
    let plan_text = plan
        .map(|p| {
            format!(
                "{}\n\n",
                prompts::message("plan", &[("subtasks", &p.numbered())])
            )
        })
        .unwrap_or_default();
    let state = serde_json::to_string(&rt.state).unwrap_or_default();
    prompts::message(
        "goal",
        &[("goal", goal), ("plan", &plan_text), ("state", &state)],
    )
}

/// The tool result message for the model: success, feedback and the value.
fn tool_message(output: &ToolOutput) -> String {
    let mut v = serde_json::json!({
        "success": output.success,
        "feedback_msg": output.feedback_msg,
        "output": output.output,
    });
    if let Some(obj) = v.as_object_mut()
        && output.failure.as_ref().is_some_and(|f| f.retryable)
    {
        obj.insert("retryable".into(), Value::Bool(true));
    }
    v.to_string()
}

/// A tool call written as text: `{"name": ..., "arguments": {...}}` (optionally in
/// `<tool_call>` tags or fences), as some local servers return when their tool parser
/// is off.
fn tool_call_in_text(text: &str, offered: &[ToolName]) -> Option<(String, Value)> {
    let (obj, _) = parse_object_lenient(text).ok()?;
    let name = obj
        .get("name")
        .or_else(|| obj.get("tool"))
        .or_else(|| obj.get("function"))?
        .as_str()?
        .to_owned();
    if !offered.iter().any(|t| t.as_str() == name) {
        return None;
    }
    let args = obj
        .get("arguments")
        .or_else(|| obj.get("parameters"))
        .or_else(|| obj.get("args"))
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let args = match args {
        Value::String(s) => parse_lenient(&s).ok()?.0,
        v => v,
    };
    Some((name, args))
}

/// Runs the tool-calling loop until the model answers with text, or a limit, a model
/// failure or a cancel ends it.
pub(crate) async fn drive(
    rt: &mut GoalRuntime<'_>,
    client: &LlmClient,
    goal: &str,
    plan: Option<&Plan>,
    model: &mut ModelUse,
) -> DriveEnd {
    let tools: Vec<_> = rt.offered().iter().map(|t| t.spec()).collect();
    let mut req = ChatRequest {
        messages: vec![
            Message::system(prompts::system(
                rt.settings.max_tool_calls,
                rt.settings.max_retries_per_call,
                rt.settings.mobile,
            )),
            Message::user(goal_message(goal, plan, rt)),
        ],
        tools,
        ..Default::default()
    };
    let mut malformed: u32 = 0;
    let max_malformed = rt.settings.max_malformed_replies;
    let mut seen_ids: HashSet<String> = HashSet::new();
    loop {
        let started = Instant::now();
        let resp = tokio::select! {
            biased;
            () = rt.cancel.cancelled() => return DriveEnd::Stopped(Stop::Cancelled),
            r = client.chat(&req) => r,
        };
        let latency = started.elapsed();
        let resp = match resp {
            Ok(r) => r,
            Err(e) if e.is_bad_response() => {
                model.wait += latency;
                malformed += 1;
                let problem = e.to_string();
                let over = malformed > max_malformed;
                rt.emit(AgentEvent::ModelOutputProblem {
                    goal_id: rt.goal_id.clone(),
                    turn: model.turns + 1,
                    problem: problem.clone(),
                    remedy: Remedy::Reasked,
                });
                if over {
                    return malformed_failure(malformed, &problem);
                }
                continue;
            }
            Err(e) => {
                model.wait += latency;
                return DriveEnd::Failed(
                    GoalError {
                        code: GoalErrorCode::ModelUnavailable,
                        message: e.to_string(),
                    },
                    String::new(),
                );
            }
        };
        model.record(rt, client, &resp, latency);

        let mut calls: Vec<(ToolCall, Result<Value, String>)> = Vec::new();
        for call in &resp.tool_calls {
            let parsed = parse_lenient(&call.arguments);
            let args = match parsed {
                Ok((v, how)) => {
                    if how != Recovery::Verbatim {
                        rt.emit(AgentEvent::ModelOutputProblem {
                            goal_id: rt.goal_id.clone(),
                            turn: model.turns,
                            problem: format!(
                                "{} arguments {:?} were not plain JSON",
                                call.name, call.arguments
                            ),
                            remedy: Remedy::Repaired,
                        });
                    }
                    Ok(v)
                }
                Err(e) => Err(e),
            };
            // some servers repeat ids ("call_0" every turn): keep them unique per goal so
            // each result answers exactly one call
            let id = if seen_ids.insert(call.id.clone()) {
                call.id.clone()
            } else {
                let fresh = format!("{}_t{}_{}", call.id, model.turns, calls.len());
                seen_ids.insert(fresh.clone());
                fresh
            };
            let normalised = ToolCall {
                id,
                name: call.name.clone(),
                arguments: match &args {
                    Ok(v) => v.to_string(),
                    Err(_) => call.arguments.clone(),
                },
            };
            calls.push((normalised, args));
        }

        if calls.is_empty() {
            let text = resp.content.clone().unwrap_or_default();
            // a tool call written as text: recover it
            if let Some((name, args)) = tool_call_in_text(&text, rt.offered()) {
                rt.emit(AgentEvent::ModelOutputProblem {
                    goal_id: rt.goal_id.clone(),
                    turn: model.turns,
                    problem: "the tool call came as text".into(),
                    remedy: Remedy::Repaired,
                });
                let id = format!("text_call_{}", model.turns);
                calls.push((
                    ToolCall {
                        id,
                        name,
                        arguments: args.to_string(),
                    },
                    Ok(args),
                ));
            } else {
                let problem = if resp.finish_reason == FinishReason::Length {
                    Some((
                        "reask_truncated",
                        "the reply was cut off (finish_reason length)",
                    ))
                } else if text.trim().is_empty() {
                    Some(("reask_empty", "the reply was empty"))
                } else {
                    None
                };
                if let Some((message, problem)) = problem {
                    malformed += 1;
                    rt.emit(AgentEvent::ModelOutputProblem {
                        goal_id: rt.goal_id.clone(),
                        turn: model.turns,
                        problem: problem.into(),
                        remedy: Remedy::Reasked,
                    });
                    if malformed > max_malformed {
                        return malformed_failure(malformed, problem);
                    }
                    if !text.trim().is_empty() {
                        req.messages.push(resp.to_message());
                    }
                    req.messages
                        .push(Message::user(prompts::message(message, &[])));
                    continue;
                }
                return final_answer(text);
            }
        }

        // the assistant message with the (normalised) calls, then one result per call
        req.messages.push(Message::Assistant {
            content: resp.content.clone(),
            tool_calls: calls.iter().map(|(c, _)| c.clone()).collect(),
        });
        let mut action_failed = false;
        for (call, args) in calls {
            if action_failed {
                req.messages.push(Message::tool_result(
                    &call.id,
                    tool_message(&ToolOutput::fail(
                        rt.state.clone(),
                        Failure::new(FailureKind::Precondition),
                        prompts::message("skipped_after_failure", &[]),
                    )),
                ));
                continue;
            }
            if let Err(problem) = &args {
                malformed += 1;
                rt.emit(AgentEvent::ModelOutputProblem {
                    goal_id: rt.goal_id.clone(),
                    turn: model.turns,
                    problem: format!("{} arguments are not JSON: {problem}", call.name),
                    remedy: Remedy::Rejected,
                });
                if malformed > max_malformed {
                    return malformed_failure(malformed, problem);
                }
            }
            let outcome = match rt.call_from_model(&call.id, &call.name, args).await {
                Ok(o) => o,
                Err(stop) => return DriveEnd::Stopped(stop),
            };
            if !outcome.output.success && outcome.tool.is_some_and(ToolName::is_action) {
                action_failed = true;
            }
            debug!(tool = %call.name, success = outcome.output.success, "tool result");
            let mut for_model = outcome.output.clone();
            if outcome.retry_limit_reached {
                for_model.feedback_msg.push(' ');
                for_model
                    .feedback_msg
                    .push_str(&prompts::message("retry_limit_advice", &[]));
            }
            req.messages
                .push(Message::tool_result(&call.id, tool_message(&for_model)));
        }
    }
}

fn malformed_failure(count: u32, problem: &str) -> DriveEnd {
    DriveEnd::Failed(
        GoalError {
            code: GoalErrorCode::MalformedOutput,
            message: format!(
                "the model gave {count} unusable replies (limits.max_malformed_replies allows {}); last problem: {problem}",
                count.saturating_sub(1)
            ),
        },
        String::new(),
    )
}

/// The model's final text: "SUCCESS: …" completes, "FAILURE: …" fails; other text is
/// taken as completion (the verifier's verdicts decide success either way).
fn final_answer(text: String) -> DriveEnd {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    if upper.starts_with("FAILURE") {
        let reason = t.split_once(':').map_or(t, |(_, r)| r).trim().to_owned();
        DriveEnd::Failed(
            GoalError {
                code: GoalErrorCode::ModelGaveUp,
                message: format!("the model gave up: {reason}"),
            },
            t.to_owned(),
        )
    } else {
        DriveEnd::Completed(t.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Skill;

    #[test]
    fn tool_calls_written_as_text_are_recovered() {
        let offered = crate::tools::offered_tools(&Skill::ALL, false);
        let (n, a) = tool_call_in_text(
            "<tool_call>{\"name\": \"grasp\", \"arguments\": {\"obj\": \"mug_0\"}}</tool_call>",
            &offered,
        )
        .unwrap();
        assert_eq!((n.as_str(), a["obj"].as_str()), ("grasp", Some("mug_0")));
        let (n, a) = tool_call_in_text(
            r#"{"name": "object_retrieval", "parameters": "{\"query\": \"mug\"}"}"#,
            &offered,
        )
        .unwrap();
        assert_eq!(
            (n.as_str(), a["query"].as_str()),
            ("object_retrieval", Some("mug"))
        );
        assert!(tool_call_in_text("{\"name\": \"teleport\"}", &offered).is_none());
        assert!(tool_call_in_text("SUCCESS: done", &offered).is_none());
    }

    #[test]
    fn final_answers() {
        assert!(matches!(
            final_answer("SUCCESS: done".into()),
            DriveEnd::Completed(_)
        ));
        assert!(matches!(
            final_answer("All done.".into()),
            DriveEnd::Completed(_)
        ));
        match final_answer("FAILURE: no mug here".into()) {
            DriveEnd::Failed(e, _) => {
                assert_eq!(e.code, GoalErrorCode::ModelGaveUp);
                assert!(e.message.contains("no mug here"));
            }
            other => panic!("{other:?}"),
        }
    }
}
