//! The agent's own overhead per tool call: goal wall time minus the time on the network
//! and in the model server (the scripted server on 127.0.0.1) minus the time inside the
//! backend (the in-memory world), divided by the tool calls. What remains is the loop:
//! guards, state updates, events, building the request JSON (the whole conversation,
//! every turn) and parsing the answer.
//!
//! `cargo bench -p asp_agent --bench overhead` prints a table; target: under 1 ms per call.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use asp_agent::testing::TableWorld;
use asp_agent::{Agent, AgentSettings, Brain, GoalReport};
use asp_config::sections::agent::LlmConfig;
use asp_llm::{ClientSettings, LlmClient};
use asp_llm_testkit::{Reply, Responder, ScriptedServer};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A model that cycles through a pick-and-place with a spatial query, `calls` tool calls
/// in all, then answers "SUCCESS".
fn responder(calls: usize) -> Responder {
    Arc::new(move |r| {
        let done = r.tool_results().len();
        if done >= calls {
            return Reply::text("SUCCESS: done");
        }
        match done % 5 {
            0 => Reply::tool_call("object_retrieval", json!({"query": "red mug"})),
            1 => Reply::tool_call("object_retrieval", json!({"query": "bowl"})),
            2 => Reply::tool_call("distance_between", json!({"a": "red_mug_0", "b": "bowl_0"})),
            3 => Reply::tool_call("grasp", json!({"obj": "red_mug_0"})),
            _ => Reply::tool_call("drop", json!({"obj": "bowl_0"})),
        }
    })
}

struct Row {
    agent: &'static str,
    calls_per_goal: usize,
    goals: usize,
    per_call_us: Vec<f64>,
    http_share: f64,
}

fn settings(calls: usize) -> AgentSettings {
    AgentSettings {
        max_tool_calls: calls as u32 + 10,
        planner_use_llm: false,
        ..AgentSettings::default()
    }
}

fn overhead_per_call_us(r: &GoalReport) -> f64 {
    let own = r.duration_ms - r.model_http_ms - r.backend_ms;
    own * 1e3 / f64::from(r.tool_calls.max(1))
}

async fn llm_row(calls: usize, goals: usize) -> Row {
    let server = ScriptedServer::start_with(vec![], Some(responder(calls)))
        .await
        .unwrap();
    let mut cs = ClientSettings::from_config(&LlmConfig::default());
    cs.base_url = server.base_url();
    cs.timeout = Duration::from_secs(10);
    let client = Arc::new(LlmClient::new(cs, None).unwrap());
    let mut per_call = Vec::new();
    let mut http = 0.0;
    let mut total = 0.0;
    // one warm-up goal (connection set-up, allocations)
    for g in 0..=goals {
        let world = Arc::new(TableWorld::tabletop());
        let agent = Agent::new(world, settings(calls), Brain::Llm(client.clone()));
        let r = agent
            .run_goal(
                format!("bench-{g}"),
                "put the mug in the bowl",
                CancellationToken::new(),
            )
            .await;
        assert!(r.status.is_completed(), "{:?}", r.status);
        assert_eq!(r.tool_calls as usize, calls);
        if g > 0 {
            per_call.push(overhead_per_call_us(&r));
            http += r.model_http_ms;
            total += r.duration_ms;
        }
    }
    Row {
        agent: "llm (scripted server)",
        calls_per_goal: calls,
        goals,
        per_call_us: per_call,
        http_share: http / total,
    }
}

async fn offline_row(goals: usize) -> Row {
    let mut per_call = Vec::new();
    let mut calls = 0;
    for g in 0..=goals {
        let world = Arc::new(TableWorld::tabletop());
        let agent = Agent::new(world, settings(100), Brain::Offline);
        let r = agent
            .run_goal(
                format!("bench-{g}"),
                "put the egg that is near the tomato in the pan",
                CancellationToken::new(),
            )
            .await;
        assert!(r.status.is_completed(), "{:?}", r.status);
        calls = r.tool_calls as usize;
        if g > 0 {
            per_call.push(overhead_per_call_us(&r));
        }
    }
    Row {
        agent: "offline",
        calls_per_goal: calls,
        goals,
        per_call_us: per_call,
        http_share: 0.0,
    }
}

fn stats(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let median = v[v.len() / 2];
    let p90 = v[(v.len() * 9 / 10).min(v.len() - 1)];
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (mean, median, p90)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rows = rt.block_on(async {
        vec![
            llm_row(10, 20).await,
            llm_row(40, 10).await,
            llm_row(200, 3).await,
            offline_row(200).await,
        ]
    });
    println!("agent overhead per tool call (goal time − model HTTP time − backend time) / calls");
    println!(
        "{:<24} {:>10} {:>6} {:>12} {:>12} {:>12} {:>10}",
        "agent", "calls/goal", "goals", "mean µs", "median µs", "p90 µs", "HTTP share"
    );
    for mut r in rows {
        let (mean, median, p90) = stats(&mut r.per_call_us);
        println!(
            "{:<24} {:>10} {:>6} {:>12.1} {:>12.1} {:>12.1} {:>9.0}%",
            r.agent,
            r.calls_per_goal,
            r.goals,
            mean,
            median,
            p90,
            r.http_share * 100.0
        );
    }
}
