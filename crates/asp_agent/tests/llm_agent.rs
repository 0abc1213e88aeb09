//! The LLM agent against a real OpenAI-compatible server on 127.0.0.1 (the scripted
//! server) and the in-memory table-top world: normal runs, tool errors and retries,
//! hallucinated tools and arguments, keys outside the inventory, disallowed skills,
//! 429/500/timeouts, garbage and malformed output, remapping, cancellation, the call cap.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use asp_agent::testing::TableWorld;
use asp_agent::{AgentEvent, GoalErrorCode, GoalStatus, Guard, PlanSource, Remedy, ToolFailure};
use asp_core::{Failure, FailureKind, Skill};
use asp_llm_testkit::{Reply, ScriptedServer, Step, call, raw_call};
use common::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn world() -> Arc<TableWorld> {
    Arc::new(TableWorld::tabletop())
}

#[tokio::test]
async fn a_normal_run_moves_the_mug_into_the_bowl() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        ))
        .expect_tool_offered("object_retrieval")
        .expect_tool_offered("drop")
        .expect_message_contains("Goal: pick up the mug and put it in the bowl")
        .expect_message_contains("1. pick up the mug")
        .expect_message_contains("SUCCESS:")
        .expect(
            "go_to and recall_memory are not offered on a tabletop",
            |r| {
                let names = r.tool_names();
                if names.contains(&"go_to".to_owned())
                    || names.contains(&"recall_memory".to_owned())
                {
                    Err(format!("offered: {names:?}"))
                } else {
                    Ok(())
                }
            },
        ),
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "bowl"}),
        ))
        .expect_last_tool_result_contains("red_mug_0"),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains("bowl_0"),
        Step::reply(Reply::tool_call("drop", json!({"obj": "bowl_0"})))
            .expect_last_tool_result_contains(r#""held_object":"red_mug_0""#),
        Step::reply(Reply::text("SUCCESS: the mug is in the bowl."))
            .expect_last_tool_result_contains(r#""held_object":null"#),
    ])
    .await
    .unwrap();
    let w = world();
    let (agent, rec) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug and put it in the bowl").await;
    server.verify().unwrap();
    assert_eq!(report.status, GoalStatus::Completed, "{}", report.summary);
    assert_eq!(report.summary, "SUCCESS: the mug is in the bowl.");
    assert_eq!(
        w.object("mug").unwrap().resting,
        Some(("in".into(), "bowl".into()))
    );
    assert_eq!(w.held(), None);
    assert_eq!(report.tool_calls, 4);
    assert_eq!(report.final_state.held_object, None);
    assert_eq!(
        report
            .final_state
            .inventory
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>(),
        ["red_mug_0", "bowl_0"]
    );
    // usage and cost per goal: 5 replies of 100 + 20 tokens at 2.5 / 10 $ per million
    assert_eq!(report.usage.requests, 5);
    assert_eq!(report.usage.prompt_tokens, 500);
    assert!((report.usage.cost_usd - 5.0 * 450e-6).abs() < 1e-12);
    // the state was published after every call
    let states = rec.states();
    assert_eq!(states.len(), 4);
    assert_eq!(
        states[2].held_object.as_ref().unwrap().as_str(),
        "red_mug_0"
    );
    assert_eq!(states[3], report.final_state);
    // verdicts travel in the trace
    assert_eq!(report.verdicts().len(), 2);
    // the event stream: started, planned, then replies and call pairs, finished last
    let events = rec.events();
    assert!(matches!(
        events.first(),
        Some(AgentEvent::GoalStarted { .. })
    ));
    assert!(matches!(events.get(1), Some(AgentEvent::Planned { .. })));
    assert!(matches!(
        events.last(),
        Some(AgentEvent::GoalFinished { .. })
    ));
    assert_eq!(events, report.events);
    let calls: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCalled { .. }))
        .collect();
    assert_eq!(calls.len(), 4);
    // the agent remembers the state for the next goal
    assert_eq!(agent.state().await, report.final_state);
}

#[tokio::test]
async fn several_calls_in_one_reply_each_get_their_result() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_calls(vec![
            call("object_retrieval", json!({"query": "red mug"})),
            call("object_retrieval", json!({"query": "bowl"})),
        ])),
        Step::reply(Reply::text("SUCCESS: found both")).expect("two results, ids matched", |r| {
            let msgs = r.messages();
            let n = msgs.len();
            let ids: Vec<_> = msgs[n - 2..]
                .iter()
                .map(|m| m["tool_call_id"].as_str().unwrap_or("").to_owned())
                .collect();
            let asked: Vec<_> = msgs[n - 3]["tool_calls"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|c| c["id"].as_str().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            if ids == asked && ids.len() == 2 {
                Ok(())
            } else {
                Err(format!("{ids:?} vs {asked:?}"))
            }
        }),
    ])
    .await
    .unwrap();
    let (agent, _) = llm_agent(&server, world(), settings());
    let report = run(&agent, "find the mug and the bowl").await;
    server.verify().unwrap();
    assert!(report.status.is_completed());
    assert_eq!(report.final_state.inventory.len(), 2);
}

#[tokio::test]
async fn repeated_call_ids_are_made_unique() {
    let same_id = |name: &str, args: serde_json::Value| {
        Reply::tool_calls(vec![asp_llm_testkit::ScriptedCall {
            id: Some("call_0".into()),
            ..call(name, args)
        }])
    };
    let server = ScriptedServer::start(vec![
        Step::reply(same_id("object_retrieval", json!({"query": "red mug"}))),
        Step::reply(same_id("object_retrieval", json!({"query": "bowl"}))),
        Step::reply(Reply::text("SUCCESS")).expect("unique ids, each answered", |r| {
            let asked: Vec<String> = r
                .messages()
                .iter()
                .filter_map(|m| m["tool_calls"][0]["id"].as_str().map(str::to_owned))
                .collect();
            let answered: Vec<String> = r
                .messages()
                .iter()
                .filter_map(|m| m["tool_call_id"].as_str().map(str::to_owned))
                .collect();
            if asked.len() == 2 && asked[0] != asked[1] && asked == answered {
                Ok(())
            } else {
                Err(format!("{asked:?} / {answered:?}"))
            }
        }),
    ])
    .await
    .unwrap();
    let (agent, _) = llm_agent(&server, world(), settings());
    assert!(
        run(&agent, "find the mug and the bowl")
            .await
            .status
            .is_completed()
    );
    server.verify().unwrap();
}

#[tokio::test]
async fn guards_keep_bad_calls_away_from_the_robot() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        ))
        .expect("pinch_pull not offered", |r| {
            let t = r.tool_names();
            if t.contains(&"pinch_pull".to_owned()) || !t.contains(&"grasp".to_owned()) {
                Err(format!("{t:?}"))
            } else {
                Ok(())
            }
        }),
        Step::reply(Reply::tool_call("teleport", json!({"obj": "red_mug_0"}))),
        Step::reply(Reply::tool_call("grasp", json!({"object": "red_mug_0"})))
            .expect_last_tool_result_contains("no tool named \\\"teleport\\\""),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_7"})))
            .expect_last_tool_result_contains("invalid arguments"),
        Step::reply(Reply::tool_call("pinch_pull", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains("red_mug_7 is not in the inventory"),
        Step::reply(Reply::tool_call("place", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains("allowed_skills"),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "Red Mug"})))
            .expect_last_tool_result_contains("needs a held object"),
        Step::reply(Reply::text("FAILURE: I keep making mistakes"))
            .expect_last_tool_result_contains("is not an object key"),
    ])
    .await
    .unwrap();
    let w = world();
    let mut s = settings();
    s.allowed_skills = vec![Skill::Grasp, Skill::Place, Skill::Drop];
    let (agent, rec) = llm_agent(&server, w.clone(), s);
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::ModelGaveUp);
    assert_eq!(
        guards(&report),
        vec![
            Guard::UnknownTool,
            Guard::InvalidArguments,
            Guard::UnknownObject,
            Guard::NotAllowed,
            Guard::Precondition,
            Guard::InvalidArguments,
        ]
    );
    // the backend saw the retrieval and nothing else
    assert_eq!(w.calls(), vec!["object_retrieval(red mug)"]);
    assert_eq!(w.held(), None);
    // rejected calls count and still publish the state
    assert_eq!(report.tool_calls, 7);
    assert_eq!(rec.states().len(), 7);
}

#[tokio::test]
async fn a_failed_call_is_retried_at_most_three_times() {
    let steps = std::iter::once(Step::reply(Reply::tool_call(
        "object_retrieval",
        json!({"query": "red mug"}),
    )))
    .chain((0..5).map(|i| {
        let step = Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"})));
        // after the fourth failure the model is told what to do instead
        if i == 4 {
            step.expect_last_tool_result_contains("give the final answer starting with")
        } else {
            step
        }
    }));
    let server = ScriptedServer::start(steps).await.unwrap();
    let w = world();
    for _ in 0..4 {
        w.fail_next(
            "grasp",
            ToolFailure::new(FailureKind::Planning, "no collision-free plan").with_failure(
                Failure::new(FailureKind::Planning)
                    .with_code(99999)
                    .retryable(),
            ),
        );
    }
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::RetryLimit);
    // 1 try + 3 retries reached the robot; the fifth request was refused
    assert_eq!(
        w.calls().iter().filter(|c| c.starts_with("grasp")).count(),
        4
    );
    let results = report.tool_trace();
    assert_eq!(results.len(), 5);
    assert!(!results[1].2.feedback_msg.contains("will not be run again"));
    assert!(
        results[4]
            .2
            .feedback_msg
            .contains("failed 4 times in a row")
    );
    // what the model is told to do next stays between the agent and the model
    assert!(
        results
            .iter()
            .all(|r| !r.2.feedback_msg.contains("FAILURE")),
        "{results:?}"
    );
    let GoalStatus::Failed { error } = &report.status else {
        unreachable!()
    };
    assert!(error.message.contains("grasp"), "{}", error.message);
}

#[tokio::test]
async fn a_retry_that_works_completes_the_goal() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"}))),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains("\"retryable\":true"),
        Step::reply(Reply::text("SUCCESS: holding the mug")),
    ])
    .await
    .unwrap();
    let w = world();
    w.fail_next(
        "grasp",
        ToolFailure::new(FailureKind::Planning, "IK failed")
            .with_failure(Failure::new(FailureKind::Planning).retryable()),
    );
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed());
    assert_eq!(w.held().as_deref(), Some("mug"));
}

#[tokio::test]
async fn a_failure_that_loses_the_map_clears_the_inventory_and_remaps() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"}))),
        // the feedback and the notice are two sentences
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains(
                "nothing in the gripper after closing. Object positions are now unknown: the inventory was cleared",
            ),
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        ))
        .expect_last_tool_result_contains("not in the inventory"),
        // the rebuilt map gives the mug, found where it was, its key back
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"})))
            .expect_last_tool_result_contains("red_mug_0"),
        Step::reply(Reply::text("SUCCESS: done")),
    ])
    .await
    .unwrap();
    let w = world();
    w.fail_next(
        "grasp",
        ToolFailure::new(
            FailureKind::Execution,
            "nothing in the gripper after closing",
        )
        .holding(false)
        .with_failure(Failure::new(FailureKind::Execution).needs_remap()),
    );
    let (agent, rec) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed(), "{}", report.summary);
    assert_eq!(w.remaps(), 1);
    // the map is rebuilt before the next retrieval, not before
    let calls = w.calls();
    let remap_at = calls.iter().position(|c| c == "remap()").unwrap();
    assert_eq!(calls[remap_at + 1], "object_retrieval(red mug)");
    assert_eq!(calls[remap_at - 1], "grasp(red_mug_0)");
    // the published state after the failure had an empty inventory
    assert!(rec.states()[1].inventory.is_empty());
    let phases: Vec<_> = report
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Remap {
                phase, forgotten, ..
            } => Some((*phase, forgotten.len())),
            _ => None,
        })
        .collect();
    assert_eq!(
        phases,
        vec![
            (asp_agent::RemapPhase::Cleared, 1),
            (asp_agent::RemapPhase::Rebuilt, 0)
        ]
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_by_the_client() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::rate_limited(0)),
        Step::reply(Reply::error(502, "bad gateway")),
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::error(500, "oops")),
        Step::reply(Reply::text("SUCCESS: found it")),
    ])
    .await
    .unwrap();
    let (agent, _) = llm_agent(&server, world(), settings());
    let report = run(&agent, "find the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed());
    let attempts: Vec<u32> = report
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModelReply { attempts, .. } => Some(*attempts),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, vec![3, 2]);
}

#[tokio::test]
async fn a_server_that_keeps_failing_fails_the_goal() {
    let server = ScriptedServer::start((0..4).map(|_| Step::reply(Reply::error(500, "down"))))
        .await
        .unwrap();
    let w = world();
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::ModelUnavailable);
    assert!(report.summary.contains("HTTP 500") && report.summary.contains("down"));
    assert!(w.calls().is_empty());
}

#[tokio::test]
async fn timeouts_are_retried_then_fail_the_goal() {
    let slow = || Step::reply(Reply::text("SUCCESS").delayed(Duration::from_secs(3)));
    let server = ScriptedServer::start(vec![slow(), slow()]).await.unwrap();
    let mut cs = client_settings(&server);
    cs.timeout = Duration::from_millis(200);
    cs.max_retries = 1;
    let (agent, _) = llm_agent_with(cs, world(), settings());
    let report = run(&agent, "pick up the mug").await;
    assert_eq!(failed_with(&report), GoalErrorCode::ModelUnavailable);
    assert!(
        report.summary.contains("no answer within 0.2 s"),
        "{}",
        report.summary
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn garbage_replies_are_reasked_then_fail_the_goal() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::garbage("<html>502 Bad Gateway</html>")),
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::garbage("{\"choices\": [")),
        Step::reply(Reply::garbage("")),
    ])
    .await
    .unwrap();
    let (agent, _) = llm_agent(&server, world(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::MalformedOutput);
    assert!(
        report.summary.contains("3 unusable replies"),
        "{}",
        report.summary
    );
    let reasked = report
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                AgentEvent::ModelOutputProblem {
                    remedy: Remedy::Reasked,
                    ..
                }
            )
        })
        .count();
    assert_eq!(reasked, 3);
    assert_eq!(report.tool_calls, 1);
}

#[tokio::test]
async fn malformed_arguments_are_repaired_or_rejected() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_calls(vec![raw_call(
            "object_retrieval",
            "{'query': 'red mug',}",
        )])),
        Step::reply(Reply::tool_calls(vec![raw_call(
            "grasp",
            "grasp the red mug please",
        )]))
        .expect_last_tool_result_contains("red_mug_0"),
        Step::reply(Reply::tool_calls(vec![raw_call(
            "grasp",
            "```json\n{\"obj\": \"red_mug_0\"}\n```",
        )]))
        .expect_last_tool_result_contains("not valid JSON"),
        Step::reply(Reply::text("SUCCESS: holding it")).expect(
            "the history carries repaired arguments",
            |r| {
                let repaired = r.messages().iter().any(|m| {
                    m["tool_calls"][0]["function"]["arguments"] == r#"{"query":"red mug"}"#
                });
                if repaired {
                    Ok(())
                } else {
                    Err("no repaired arguments".into())
                }
            },
        ),
    ])
    .await
    .unwrap();
    let w = world();
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed(), "{}", report.summary);
    assert_eq!(
        w.calls(),
        vec!["object_retrieval(red mug)", "grasp(red_mug_0)"]
    );
    let remedies: Vec<Remedy> = report
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ModelOutputProblem { remedy, .. } => Some(*remedy),
            _ => None,
        })
        .collect();
    assert_eq!(
        remedies,
        vec![Remedy::Repaired, Remedy::Rejected, Remedy::Repaired]
    );
    assert_eq!(guards(&report), vec![Guard::InvalidArguments]);
}

#[tokio::test]
async fn too_many_malformed_arguments_fail_the_goal() {
    let server = ScriptedServer::start(
        (0..3).map(|_| Step::reply(Reply::tool_calls(vec![raw_call("grasp", "{{{{")]))),
    )
    .await
    .unwrap();
    let w = world();
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "pick up the mug").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::MalformedOutput);
    assert!(w.calls().is_empty());
}

#[tokio::test]
async fn empty_truncated_and_textual_replies() {
    let server = ScriptedServer::start(vec![
        // empty: re-asked
        Step::reply(Reply::text("")),
        // a tool call written as text (a local server without a tool parser): recovered
        Step::reply(Reply::text(
            "<tool_call>{\"name\": \"object_retrieval\", \"arguments\": {\"query\": \"red mug\"}}</tool_call>",
        ))
        .expect_message_contains("neither a tool call nor text"),
        // cut off: re-asked
        Step::reply(
            Reply::text("SUCCESS: I have fou").map_completion(|c| c.finish_reason("length")),
        )
        .expect_last_tool_result_contains("red_mug_0"),
        Step::reply(Reply::text("SUCCESS: found the mug")).expect_message_contains("cut off"),
    ])
    .await
    .unwrap();
    let w = world();
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    let report = run(&agent, "find the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed(), "{}", report.summary);
    assert_eq!(report.summary, "SUCCESS: found the mug");
    assert_eq!(w.calls(), vec!["object_retrieval(red mug)"]);
}

#[tokio::test]
async fn the_tool_call_cap_ends_the_goal() {
    let responder: asp_llm_testkit::Responder = Arc::new(|r| {
        Reply::tool_call(
            "object_retrieval",
            json!({"query": format!("thing {}", r.index)}),
        )
    });
    let server = ScriptedServer::start_with(vec![], Some(responder))
        .await
        .unwrap();
    let w = world();
    let mut s = settings();
    s.max_tool_calls = 3;
    let (agent, _) = llm_agent(&server, w.clone(), s);
    let report = run(&agent, "look around").await;
    assert_eq!(failed_with(&report), GoalErrorCode::ToolCallCap);
    assert_eq!(report.tool_calls, 3);
    assert_eq!(w.calls().len(), 3);
    assert!(
        report.summary.contains("max_tool_calls"),
        "{}",
        report.summary
    );
}

#[tokio::test]
async fn cancel_stops_the_running_skill() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"}))),
    ])
    .await
    .unwrap();
    let w = world();
    w.set_skill_delay(Duration::from_secs(60), true);
    let (agent, rec) = llm_agent(&server, w.clone(), settings());
    let agent = Arc::new(agent);
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel) = (agent.clone(), cancel.clone());
        tokio::spawn(async move { agent.run_goal("g", "pick up the mug", cancel).await })
    };
    // wait until the grasp is running, then cancel
    while !w.calls().iter().any(|c| c.starts_with("grasp")) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let report = task.await.unwrap();
    assert_eq!(report.status, GoalStatus::Cancelled);
    assert_eq!(w.cancelled_calls(), 1, "the backend saw the cancel");
    assert_eq!(w.held(), None);
    let last = report
        .tool_trace()
        .last()
        .map(|(t, _, o)| (t.to_string(), (*o).clone()))
        .unwrap();
    assert_eq!(last.0, "grasp");
    assert_eq!(
        last.1.failure.as_ref().unwrap().kind,
        FailureKind::Cancelled
    );
    assert!(matches!(
        rec.events().last(),
        Some(AgentEvent::GoalFinished { .. })
    ));
}

#[tokio::test]
async fn a_tool_that_ignores_cancel_is_abandoned_after_the_grace_period() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"}))),
    ])
    .await
    .unwrap();
    let w = world();
    w.set_skill_delay(Duration::from_secs(60), false);
    let mut s = settings();
    s.cancel_grace = Duration::from_millis(50);
    let (agent, _) = llm_agent(&server, w.clone(), s);
    let agent = Arc::new(agent);
    let cancel = CancellationToken::new();
    let task = {
        let (agent, cancel) = (agent.clone(), cancel.clone());
        tokio::spawn(async move { agent.run_goal("g", "pick up the mug", cancel).await })
    };
    while !w.calls().iter().any(|c| c.starts_with("grasp")) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cancel.cancel();
    let report = task.await.unwrap();
    assert_eq!(report.status, GoalStatus::Cancelled);
    let out = report.tool_trace().last().unwrap().2.clone();
    assert!(
        out.feedback_msg.contains("did not return within 0.05 s"),
        "{}",
        out.feedback_msg
    );
}

#[tokio::test]
async fn cancel_while_waiting_for_the_model() {
    let server = ScriptedServer::start(vec![Step::reply(
        Reply::text("SUCCESS").delayed(Duration::from_secs(30)),
    )])
    .await
    .unwrap();
    let (agent, _) = llm_agent(&server, world(), settings());
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        c2.cancel();
    });
    let report = agent.run_goal("g", "pick up the mug", cancel).await;
    assert_eq!(report.status, GoalStatus::Cancelled);
    assert_eq!(report.tool_calls, 0);
}

#[tokio::test]
async fn the_llm_planner_regenerates_with_a_hint() {
    let plan = json!({"subtasks": [
        {"verb": "pick_up", "object": "mug", "part": null, "location": null, "location_part": null, "preposition": null, "action": null},
        {"verb": "place", "object": "mug", "part": null, "location": "bowl", "location_part": null, "preposition": "in", "action": null}
    ]});
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::text("First I will locate the mug, then move it."))
            .expect_message_contains("closed set")
            .expect_message_contains("Instruction: put the mug in the bowl"),
        Step::reply(Reply::text(
            r#"{"subtasks": [{"verb": "move", "object": "mug"}]}"#,
        ))
        .expect_message_contains("could not be used: the answer is not JSON"),
        Step::reply(Reply::text(&plan.to_string())).expect_message_contains("\"move\""),
        Step::reply(Reply::text("SUCCESS: nothing to do"))
            .expect_message_contains("1. pick up the mug\n2. place the mug in the bowl")
            .expect_tool_offered("grasp"),
    ])
    .await
    .unwrap();
    let mut s = settings();
    s.planner_use_llm = true;
    let (agent, _) = llm_agent(&server, world(), s);
    let report = run(&agent, "put the mug in the bowl").await;
    server.verify().unwrap();
    assert_eq!(
        report.plan.as_ref().unwrap().source,
        PlanSource::Llm { regenerations: 2 }
    );
    // the planner's replies count towards the goal's usage
    assert_eq!(report.usage.requests, 4);
}

#[tokio::test]
async fn the_llm_planner_falls_back_to_the_grammar() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::text("no idea")),
        Step::reply(Reply::text("still no idea")),
        Step::reply(Reply::text("SUCCESS: ok"))
            .expect_message_contains("2. place the mug in the bowl"),
    ])
    .await
    .unwrap();
    let mut s = settings();
    s.planner_use_llm = true;
    s.planner_max_regenerations = 1;
    let (agent, _) = llm_agent(&server, world(), s);
    let report = run(&agent, "put the mug in the bowl").await;
    server.verify().unwrap();
    let plan = report.plan.unwrap();
    assert!(
        matches!(&plan.source, PlanSource::GrammarAfterLlm { attempts: 2, last_problem } if last_problem.contains("not JSON")),
        "{:?}",
        plan.source
    );
}

#[tokio::test]
async fn state_carries_over_between_goals() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        )),
        Step::reply(Reply::tool_call("grasp", json!({"obj": "red_mug_0"}))),
        Step::reply(Reply::text("SUCCESS")),
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "plate"}),
        ))
        .expect_message_contains(r#""held_object":"red_mug_0""#),
        Step::reply(Reply::tool_call("place", json!({"obj": "plate_0"}))),
        Step::reply(Reply::text("SUCCESS")),
    ])
    .await
    .unwrap();
    let w = world();
    let (agent, _) = llm_agent(&server, w.clone(), settings());
    assert!(run(&agent, "pick up the mug").await.status.is_completed());
    let second = run(&agent, "put it on the plate").await;
    server.verify().unwrap();
    assert!(second.status.is_completed());
    assert_eq!(
        w.object("mug").unwrap().resting,
        Some(("on".into(), "plate".into()))
    );
}

#[tokio::test]
async fn agents_are_built_from_the_configuration() {
    use asp_config::AspConfig;
    use asp_config::sections::agent::LlmBackend;

    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "object_retrieval",
            json!({"query": "red mug"}),
        ))
        .expect("configured model", |r| {
            if r.body["model"] == "local-model" {
                Ok(())
            } else {
                Err(r.body["model"].to_string())
            }
        })
        .expect("pinch_pull withheld by the safety section", |r| {
            if r.tool_names().contains(&"pinch_pull".to_owned()) {
                Err("offered".into())
            } else {
                Ok(())
            }
        }),
        Step::reply(Reply::text("SUCCESS: found it")),
    ])
    .await
    .unwrap();
    let mut cfg = AspConfig::default();
    cfg.agent_node.llm.backend = LlmBackend::Openai;
    cfg.agent_node.llm.base_url = server.base_url();
    cfg.agent_node.llm.model = "local-model".into();
    cfg.agent_node.llm.api_key_env = String::new(); // a local server without keys
    cfg.agent_node.planner.use_llm = false;
    cfg.common.safety.allowed_skills = vec![Skill::Grasp, Skill::Place, Skill::Drop];
    let agent = asp_agent::Agent::from_config(&cfg, world()).unwrap();
    assert_eq!(agent.kind(), asp_agent::AgentKind::Llm);
    let report = run(&agent, "find the mug").await;
    server.verify().unwrap();
    assert!(report.status.is_completed());
    assert_eq!(server.requests()[0].authorization, None);

    // a key variable that is not set is an error naming it
    cfg.agent_node.llm.api_key_env = "ASP_AGENT_TEST_UNSET_KEY".into();
    let err = asp_agent::Agent::from_config(&cfg, world()).unwrap_err();
    assert!(
        err.to_string().contains("ASP_AGENT_TEST_UNSET_KEY"),
        "{err}"
    );

    // the default configuration is the offline agent
    let agent = asp_agent::Agent::from_config(&AspConfig::default(), world()).unwrap();
    assert_eq!(agent.kind(), asp_agent::AgentKind::Offline);
    assert_eq!(agent.settings().max_tool_calls, 40);
}

/// On a mobile robot the model may ask the building memory where things are: the call
/// is parsed like object_retrieval's, reaches the robot side, moves nothing, and its
/// answer (here: this world keeps no memory) goes back to the model.
#[tokio::test]
async fn the_model_asks_the_building_memory_on_a_mobile_robot() {
    let server = ScriptedServer::start(vec![
        Step::reply(Reply::tool_call(
            "recall_memory",
            json!({"query": "red mug", "room": null}),
        ))
        .expect_tool_offered("recall_memory")
        .expect_message_contains("answer from\n  recall_memory without moving"),
        Step::reply(Reply::text("FAILURE: I have no memory of a red mug."))
            .expect_last_tool_result_contains("keeps no building memory"),
    ])
    .await
    .unwrap();
    let w = world();
    let mobile = asp_agent::AgentSettings {
        mobile: true,
        ..settings()
    };
    let (agent, _) = llm_agent(&server, w.clone(), mobile);
    let report = run(&agent, "where did you see the red mug?").await;
    server.verify().unwrap();
    assert_eq!(failed_with(&report), GoalErrorCode::ModelGaveUp);
    assert_eq!(
        trace(&report),
        [r#"recall_memory({"query":"red mug","room":null}) -> false"#]
    );
    assert!(w.calls().is_empty(), "{:?}", w.calls());
}
