//! Helpers shared by the agent's integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use asp_agent::testing::TableWorld;
use asp_agent::{
    Agent, AgentEvent, AgentSettings, Brain, GoalErrorCode, GoalReport, GoalStatus, Guard, Recorder,
};
use asp_config::sections::agent::LlmConfig;
use asp_llm::{ClientSettings, LlmClient};
use asp_llm_testkit::ScriptedServer;
use tokio_util::sync::CancellationToken;

/// Settings for tests: defaults, the grammar's plan as the guide (no planner request).
pub fn settings() -> AgentSettings {
    AgentSettings {
        planner_use_llm: false,
        ..AgentSettings::default()
    }
}

pub fn client_settings(server: &ScriptedServer) -> ClientSettings {
    let mut s = ClientSettings::from_config(&LlmConfig::default());
    s.base_url = server.base_url();
    s.model = "scripted".into();
    s.timeout = Duration::from_secs(5);
    s.backoff_initial = Duration::from_millis(2);
    s.backoff_max = Duration::from_millis(10);
    s
}

pub fn llm_agent(
    server: &ScriptedServer,
    world: Arc<TableWorld>,
    settings: AgentSettings,
) -> (Agent, Arc<Recorder>) {
    llm_agent_with(client_settings(server), world, settings)
}

pub fn llm_agent_with(
    client: ClientSettings,
    world: Arc<TableWorld>,
    settings: AgentSettings,
) -> (Agent, Arc<Recorder>) {
    let client = Arc::new(LlmClient::new(client, None).unwrap());
    let rec = Arc::new(Recorder::default());
    let agent = Agent::new(world, settings, Brain::Llm(client))
        .with_state_sink(rec.clone())
        .with_event_sink(rec.clone());
    (agent, rec)
}

pub fn offline_agent(world: Arc<TableWorld>, settings: AgentSettings) -> (Agent, Arc<Recorder>) {
    let rec = Arc::new(Recorder::default());
    let agent = Agent::new(world, settings, Brain::Offline)
        .with_state_sink(rec.clone())
        .with_event_sink(rec.clone());
    (agent, rec)
}

pub async fn run(agent: &Agent, goal: &str) -> GoalReport {
    agent
        .run_goal("goal-1", goal, CancellationToken::new())
        .await
}

/// The error code of a failed goal (panics, with the summary, on any other end).
pub fn failed_with(report: &GoalReport) -> GoalErrorCode {
    match &report.status {
        GoalStatus::Failed { error } => error.code,
        other => panic!("expected a failure, got {other:?}: {}", report.summary),
    }
}

/// The guards that refused calls, in order.
pub fn guards(report: &GoalReport) -> Vec<Guard> {
    report
        .events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolFinished { guard: Some(g), .. } => Some(*g),
            _ => None,
        })
        .collect()
}

/// `tool(args) -> success` for every call.
pub fn trace(report: &GoalReport) -> Vec<String> {
    report
        .tool_trace()
        .iter()
        .map(|(t, a, o)| format!("{t}({a}) -> {}", o.success))
        .collect()
}
