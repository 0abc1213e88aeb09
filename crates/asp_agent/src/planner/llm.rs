//! The LLM path of the planner (SPEC §4.1): ask for the subtasks as JSON, parse and
//! validate them; on a problem, ask again with a hint that names what was wrong or
//! missing; after `max_regenerations` regenerations (or a model failure), fall back to
//! the offline goal grammar.

use std::time::{Duration, Instant};

use asp_llm::repair::parse_lenient;
use asp_llm::{ChatRequest, ChatResponse, LlmClient, LlmError, Message};
use serde::Deserialize;
use serde_json::Value;

use super::phrases::split_part_pub;
use super::{Plan, PlanError, PlanSource, Preposition, Subtask, Verb, add_implied_steps};
use crate::prompts;

/// One request of the planner, for the trace.
#[derive(Debug, Clone)]
pub struct PlannerAttempt {
    pub response: Result<ChatResponse, LlmError>,
    pub latency: Duration,
    /// What was wrong with the answer, if anything.
    pub problem: Option<String>,
}

/// The planner's outcome: the plan (or why none) and every request made.
#[derive(Debug)]
pub struct PlannerOutcome {
    pub plan: Result<Plan, PlanError>,
    pub attempts: Vec<PlannerAttempt>,
}

#[derive(Debug, Deserialize)]
struct RawPlan {
    subtasks: Vec<RawSubtask>,
}

#[derive(Debug, Deserialize)]
struct RawSubtask {
    verb: Option<String>,
    object: Option<String>,
    part: Option<String>,
    location: Option<String>,
    location_part: Option<String>,
    /// The rooms of the object and of the location, when the goal names them.
    room: Option<String>,
    location_room: Option<String>,
    preposition: Option<String>,
    action: Option<String>,
    /// Attributes ruled out ("not the red one").
    #[serde(default, rename = "not")]
    excluded: Option<Vec<String>>,
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty() && s != "null" && s != "none")
}

/// Validates the model's plan; the error names what is missing or wrong.
pub fn validate(value: Value) -> Result<Vec<Subtask>, String> {
    let value = match value {
        Value::Array(a) => serde_json::json!({"subtasks": a}),
        v => v,
    };
    let raw: RawPlan = serde_json::from_value(value)
        .map_err(|e| format!("the JSON is not of the form {{\"subtasks\": [...]}} ({e})"))?;
    if raw.subtasks.is_empty() {
        return Err("the plan has no subtasks".into());
    }
    let verbs = super::Verb::ALL
        .iter()
        .map(|v| v.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let mut out = Vec::new();
    for (i, r) in raw.subtasks.into_iter().enumerate() {
        let n = i + 1;
        let verb_text = non_empty(r.verb).ok_or_else(|| format!("subtask {n} has no verb"))?;
        let verb = Verb::parse(&verb_text).ok_or_else(|| {
            format!("subtask {n} has the verb {verb_text:?}, which is not one of {verbs}")
        })?;
        let object = non_empty(r.object)
            .ok_or_else(|| format!("subtask {n} ({}) names no object", verb.as_str()))?;
        // the whole object, the part separately
        let (object, split) = split_part_pub(&object);
        let part = non_empty(r.part).or(split);
        let mut st = Subtask::new(verb, object).with_part(part);
        st.action = non_empty(r.action);
        st.room = non_empty(r.room);
        st.excluded = r
            .excluded
            .unwrap_or_default()
            .into_iter()
            .filter_map(|a| non_empty(Some(a)))
            .collect();
        if verb == Verb::Place {
            let location = non_empty(r.location)
                .ok_or_else(|| format!("subtask {n} (place) has no location: say on or in what"))?;
            let (location, lsplit) = split_part_pub(&location);
            st.location = Some(location);
            st.location_part = non_empty(r.location_part).or(lsplit);
            st.location_room = non_empty(r.location_room);
            st.preposition = Some(match non_empty(r.preposition).as_deref() {
                Some("in" | "into" | "inside") => Preposition::In,
                Some("on" | "onto" | "on top of") | None => Preposition::On,
                Some(other) => {
                    return Err(format!(
                        "subtask {n} (place) has the preposition {other:?}; use \"on\" or \"in\""
                    ));
                }
            });
        }
        out.push(st);
    }
    Ok(out)
}

/// Plans `goal` with the model, regenerating with hints, then falling back to the
/// offline `grammar`.
pub async fn plan_with_llm(
    client: &LlmClient,
    goal: &str,
    max_regenerations: u32,
    grammar: &super::understand::GoalGrammar,
) -> PlannerOutcome {
    let mut req = ChatRequest {
        messages: vec![
            Message::system(prompts::PLANNER),
            Message::user(format!("Instruction: {goal}")),
        ],
        ..Default::default()
    };
    let mut attempts = Vec::new();
    let mut last_problem = String::new();
    for regeneration in 0..=max_regenerations {
        let started = Instant::now();
        let response = client.chat(&req).await;
        let latency = started.elapsed();
        let resp = match response {
            Ok(r) => r,
            Err(e) => {
                last_problem = e.to_string();
                attempts.push(PlannerAttempt {
                    response: Err(e),
                    latency,
                    problem: Some(last_problem.clone()),
                });
                // the client has retried already: fall back (SPEC §4.2)
                break;
            }
        };
        let text = resp.content.clone().unwrap_or_default();
        let result = parse_lenient(&text)
            .map_err(|e| format!("the answer is not JSON ({e})"))
            .and_then(|(v, _)| validate(v));
        match result {
            Ok(subtasks) => {
                attempts.push(PlannerAttempt {
                    response: Ok(resp),
                    latency,
                    problem: None,
                });
                return PlannerOutcome {
                    plan: Ok(Plan {
                        goal: goal.to_owned(),
                        subtasks: add_implied_steps(subtasks),
                        source: PlanSource::Llm {
                            regenerations: regeneration,
                        },
                    }),
                    attempts,
                };
            }
            Err(problem) => {
                last_problem = problem.clone();
                attempts.push(PlannerAttempt {
                    response: Ok(resp),
                    latency,
                    problem: Some(problem.clone()),
                });
                req.messages.push(Message::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                });
                req.messages.push(Message::user(prompts::message(
                    "planner_hint",
                    &[("problem", &problem)],
                )));
            }
        }
    }
    let tries = attempts.len() as u32;
    let plan = super::understand::subtasks::plan_of(goal, grammar.understand(goal)).map(|mut p| {
        p.source = PlanSource::GrammarAfterLlm {
            attempts: tries,
            last_problem,
        };
        p
    });
    PlannerOutcome { plan, attempts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_names_the_problem() {
        let cases: &[(Value, &str)] = &[
            (json!({"steps": []}), "subtasks"),
            (json!({"subtasks": []}), "no subtasks"),
            (
                json!({"subtasks": [{"verb": "locate", "object": "mug"}]}),
                "locate",
            ),
            (
                json!({"subtasks": [{"verb": "pick_up"}]}),
                "names no object",
            ),
            (
                json!({"subtasks": [{"verb": "place", "object": "mug"}]}),
                "no location",
            ),
            (
                json!({"subtasks": [{"verb": "place", "object": "mug", "location": "shelf", "preposition": "under"}]}),
                "under",
            ),
        ];
        for (v, needle) in cases {
            let e = validate(v.clone()).unwrap_err();
            assert!(e.contains(needle), "{v}: {e}");
        }
    }

    #[test]
    fn validation_normalises() {
        let st = validate(json!([
            {"verb": "Pick up", "object": "the red book near the butter", "part": null},
            {"verb": "open", "object": "the top drawer of the cabinet", "location": "x"},
            {"verb": "place", "object": "book", "location": "the cabinet", "preposition": "into", "action": "null"}
        ]))
        .unwrap();
        assert_eq!(st[0].object, "red book near the butter");
        assert_eq!(
            (st[1].object.as_str(), st[1].part.as_deref()),
            ("cabinet", Some("top drawer"))
        );
        assert_eq!(st[1].location, None, "only place has a location");
        assert_eq!(st[2].preposition, Some(Preposition::In));
        assert_eq!(st[2].action, None);
    }
}
