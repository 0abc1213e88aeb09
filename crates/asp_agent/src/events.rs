//! What the agent reports while it works: [`AgentEvent`]s (tool calls, arguments,
//! outputs, verdicts, model replies, tokens) and the symbolic state after every call.
//! `asp run` prints the events, agent_node turns them into action feedback, and the
//! [`GoalReport`] keeps them all for reports and evaluation.

use std::sync::Mutex;

use asp_core::{FailureKind, ObjectKey, State, ToolOutput};
use asp_llm::{Usage, UsageTotals};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::Verdict;
use crate::planner::Plan;

/// A tool call's arguments as `key=value, …` (any other JSON as it is), the way traces,
/// action feedback and reports show them.
pub fn args_text(args: &Value) -> String {
    match args.as_object() {
        Some(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        None => args.to_string(),
    }
}

/// Which agent drove the goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// Tool calling with an LLM.
    Llm,
    /// The offline goal grammar over the same tools.
    Offline,
}

/// How an unusable model reply was handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remedy {
    /// Fixed locally (JSON extracted or repaired, a tool call recovered from text).
    Repaired,
    /// The model was asked again.
    Reasked,
    /// Given to the model as a failed tool result.
    Rejected,
}

/// Which guard refused a call before it reached the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Guard {
    /// No such tool, or not offered on this robot.
    UnknownTool,
    /// A skill outside `/**.safety.allowed_skills`, or a tool not available here.
    NotAllowed,
    /// Arguments that are not JSON or do not match the schema.
    InvalidArguments,
    /// An object key that is not in the inventory.
    UnknownObject,
    /// A gripper precondition (empty to grasp, holding to place/drop).
    Precondition,
}

impl Guard {
    pub fn from_kind(kind: FailureKind) -> Self {
        match kind {
            FailureKind::UnknownTool => Guard::UnknownTool,
            FailureKind::NotAllowed => Guard::NotAllowed,
            FailureKind::UnknownObject => Guard::UnknownObject,
            FailureKind::Precondition => Guard::Precondition,
            _ => Guard::InvalidArguments,
        }
    }
}

/// How a goal ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GoalStatus {
    /// The agent finished: the model answered "SUCCESS: …", or the offline agent ran
    /// every subtask. Whether the world is as asked is the verifier's call: see the
    /// verdicts in the trace.
    Completed,
    /// The agent stopped without finishing.
    Failed { error: GoalError },
    /// Cancelled by the caller.
    Cancelled,
}

impl GoalStatus {
    pub fn is_completed(&self) -> bool {
        matches!(self, GoalStatus::Completed)
    }
}

/// Why a goal failed: a code for programs, a message for people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalError {
    pub code: GoalErrorCode,
    pub message: String,
}

/// Failure codes of a goal (stable; the `/asp/execute` result carries them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalErrorCode {
    /// `limits.max_tool_calls` reached.
    ToolCallCap,
    /// The model repeated a call that had failed `1 + limits.max_retries_per_call` times
    /// in a row (or the offline agent ran out of retries for a step).
    RetryLimit,
    /// More unusable model replies than `limits.max_malformed_replies`.
    MalformedOutput,
    /// The model server failed (after the client's retries).
    ModelUnavailable,
    /// The model gave up ("FAILURE: …").
    ModelGaveUp,
    /// The goal could not be decomposed into subtasks (offline agent).
    Unplannable,
    /// A subtask could not be done (offline agent): an object not found, a skill failed.
    SubtaskFailed,
    /// Refused before planning: the goal is empty.
    GoalEmpty,
    /// Refused before planning: the goal is only whitespace.
    GoalBlank,
    /// Refused before planning: longer than `limits.max_goal_chars`.
    GoalTooLong,
    /// Refused before planning: the goal holds a control character.
    GoalControlCharacter,
    /// Refused: no word of the goal names an action the offline planner knows ("hello",
    /// "make me a coffee"); the LLM agent leaves this to the model.
    GoalNoVerb,
    /// Refused: the action is outside the skills (wash, cook, fold).
    GoalUnsupported,
    /// Refused: the goal would harm someone or something (fire, hitting, the living in
    /// appliances, metal in sockets).
    GoalUnsafe,
    /// Refused: the action has nothing to act on ("open it" with nothing named before).
    GoalNoObject,
    /// Not acted on: a verb was matched by meaning with too little confidence; the
    /// message asks back "did you mean …?" so the goal can be said again.
    GoalUnclear,
}

/// One thing that happened during a goal. Serialised as JSON lines by `asp run --json`
/// and in reports; field names are stable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    GoalStarted {
        goal_id: String,
        goal: String,
        agent: AgentKind,
        /// The model, for the LLM agent.
        model: Option<String>,
        state: State,
    },
    /// The planner's decomposition.
    Planned { goal_id: String, plan: Plan },
    /// A model reply (LLM agent and LLM planner).
    ModelReply {
        goal_id: String,
        /// 1-based reply number within the goal.
        turn: u32,
        /// Wall time awaiting the HTTP answer, retries included.
        latency_ms: f64,
        attempts: u32,
        usage: Option<Usage>,
        /// Text content, if any.
        text: Option<String>,
        /// Names of the tools called.
        tool_calls: Vec<String>,
        finish_reason: String,
    },
    /// An unusable part of a model reply and what was done about it.
    ModelOutputProblem {
        goal_id: String,
        turn: u32,
        problem: String,
        remedy: Remedy,
    },
    /// A tool call, before any guard.
    ToolCalled {
        goal_id: String,
        /// 1-based index within the goal.
        index: u32,
        call_id: String,
        tool: String,
        args: Value,
    },
    /// The result of a tool call, with the state after it (also published).
    ToolFinished {
        goal_id: String,
        index: u32,
        call_id: String,
        tool: String,
        output: ToolOutput,
        /// Set when a guard refused the call: the backend never saw it.
        guard: Option<Guard>,
        verdicts: Vec<Verdict>,
        duration_ms: f64,
        state: State,
    },
    /// The map is stale (SPEC §1.7): the inventory was cleared (the held object kept) and
    /// the map will be rebuilt, or was rebuilt.
    Remap {
        goal_id: String,
        /// `cleared` after the failure, `rebuilt` before the next retrieval.
        phase: RemapPhase,
        forgotten: Vec<ObjectKey>,
        reason: String,
    },
    /// A choice no check can confirm: a phrase that singles one object out of several
    /// ("the cup on the left") when only one was found, even after looking again. The
    /// goal may still complete, but it is never reported verified.
    Unconfirmed { goal_id: String, reason: String },
    GoalFinished {
        goal_id: String,
        status: GoalStatus,
        /// The model's final answer or the offline agent's summary.
        summary: String,
        tool_calls: u32,
        usage: UsageTotals,
        duration_ms: f64,
        state: State,
    },
}

/// The two steps of a remap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemapPhase {
    Cleared,
    Rebuilt,
}

/// Everything about one goal, returned by [`crate::Agent::run_goal`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoalReport {
    pub goal_id: String,
    pub goal: String,
    pub agent: AgentKind,
    pub status: GoalStatus,
    pub summary: String,
    pub plan: Option<Plan>,
    pub final_state: State,
    /// Tool calls made, rejected ones included.
    pub tool_calls: u32,
    pub usage: UsageTotals,
    pub duration_ms: f64,
    /// Time spent in the LLM client (HTTP, JSON, backoff waits), ms (0 offline).
    pub model_wait_ms: f64,
    /// Of that, time on the network and in the model server only, ms.
    pub model_http_ms: f64,
    /// Time spent inside the backend, ms.
    pub backend_ms: f64,
    pub events: Vec<AgentEvent>,
}

impl GoalReport {
    /// Every verdict of the goal, in order.
    pub fn verdicts(&self) -> Vec<&Verdict> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::ToolFinished { verdicts, .. } => Some(verdicts),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// The choices the goal rests on that no check could confirm, in order.
    pub fn unconfirmed(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::Unconfirmed { reason, .. } => Some(reason.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The (tool, args, output) of every call, in order.
    pub fn tool_trace(&self) -> Vec<(&str, &Value, &ToolOutput)> {
        let mut args = std::collections::HashMap::new();
        let mut out = Vec::new();
        for e in &self.events {
            match e {
                AgentEvent::ToolCalled { index, args: a, .. } => {
                    args.insert(*index, a);
                }
                AgentEvent::ToolFinished {
                    index,
                    tool,
                    output,
                    ..
                } => {
                    if let Some(a) = args.get(index) {
                        out.push((tool.as_str(), *a, output));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// Receives the symbolic state after every tool call (agent_node publishes it on
/// `/asp/state`, latched).
pub trait StateSink: Send + Sync {
    fn publish(&self, goal_id: &str, state: &State);
}

/// Receives events as they happen (agent_node: action feedback; `asp run`: printing).
/// Must not block: queue and return.
pub trait EventSink: Send + Sync {
    fn emit(&self, event: &AgentEvent);
}

/// Discards everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl StateSink for NullSink {
    fn publish(&self, _: &str, _: &State) {}
}

impl EventSink for NullSink {
    fn emit(&self, _: &AgentEvent) {}
}

/// The latest state, for one consumer that wants only the newest value.
impl StateSink for tokio::sync::watch::Sender<State> {
    fn publish(&self, _: &str, state: &State) {
        self.send_replace(state.clone());
    }
}

/// Every event, in order; a closed receiver is ignored.
impl EventSink for tokio::sync::mpsc::UnboundedSender<AgentEvent> {
    fn emit(&self, event: &AgentEvent) {
        let _ = self.send(event.clone());
    }
}

/// Every state, in order; a closed receiver is ignored.
impl StateSink for tokio::sync::mpsc::UnboundedSender<State> {
    fn publish(&self, _: &str, state: &State) {
        let _ = self.send(state.clone());
    }
}

/// Keeps what it receives (tests, tools).
#[derive(Debug, Default)]
pub struct Recorder {
    pub states: Mutex<Vec<State>>,
    pub events: Mutex<Vec<AgentEvent>>,
}

impl Recorder {
    pub fn states(&self) -> Vec<State> {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
    pub fn events(&self) -> Vec<AgentEvent> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl StateSink for Recorder {
    fn publish(&self, _: &str, state: &State) {
        self.states
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(state.clone());
    }
}

impl EventSink for Recorder {
    fn emit(&self, event: &AgentEvent) {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(event.clone());
    }
}
