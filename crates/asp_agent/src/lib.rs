//! The ASP agent (SPEC §1.2–1.3, §1.7, §4.1).
//!
//! [`Agent::run_goal`] takes a goal in plain language and drives the tools until it is
//! done, fails or is cancelled, with one of two brains:
//! - [`Brain::Llm`]: an LLM with tool calling over any OpenAI-compatible server (the
//!   planner's subtasks are given to it as a guide);
//! - [`Brain::Offline`]: the offline goal grammar and a fixed strategy per subtask — no
//!   model server needed.
//!
//! Both go through the same machinery ([`runtime`]): guards that keep unknown tools,
//! bad arguments, unknown object keys and disallowed skills away from the robot;
//! gripper preconditions; a cap on tool calls; a limit on retries of a failing call;
//! remapping after a failure that leaves object positions unknown; the symbolic state
//! published after every call; [`AgentEvent`]s for every step; cancellation that
//! reaches the running tool. The robot side is a [`ToolBackend`].

pub mod backend;
pub mod events;
pub mod goal_input;
mod llm_agent;
mod offline;
pub mod planner;
pub mod prompts;
pub mod question;
pub mod runtime;
pub mod testing;
pub mod tools;

use std::sync::Arc;
use std::time::{Duration, Instant};

use asp_config::AspConfig;
use asp_config::sections::agent::LlmBackend;
use asp_core::State;
use asp_llm::{LlmClient, LlmError};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info, info_span, warn};

pub use backend::{
    ActionReport, Found, ToolBackend, ToolContext, ToolFailure, ToolResult, Verdict,
};
pub use events::{
    AgentEvent, AgentKind, EventSink, GoalError, GoalErrorCode, GoalReport, GoalStatus, Guard,
    NullSink, Recorder, RemapPhase, Remedy, StateSink, args_text,
};
pub use planner::understand::GoalGrammar;
pub use planner::{Plan, PlanError, PlanSource, Preposition, Subtask, Verb};
pub use runtime::AgentSettings;
pub use tools::{ToolName, ToolRequest};

use crate::events::AgentEvent as Ev;
use crate::llm_agent::{DriveEnd, ModelUse};
use crate::runtime::{GoalRuntime, Stop};

/// What decides the next tool call.
#[derive(Debug, Clone)]
pub enum Brain {
    /// The offline goal grammar, fixed strategy per subtask.
    Offline,
    /// An LLM with tool calling.
    Llm(Arc<LlmClient>),
}

/// Errors building an agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// The agent: a brain, a backend, settings, sinks, and the symbolic state that carries
/// over from goal to goal (what is held, what is known).
pub struct Agent {
    backend: Arc<dyn ToolBackend>,
    settings: AgentSettings,
    brain: Brain,
    state: tokio::sync::Mutex<State>,
    state_sink: Arc<dyn StateSink>,
    event_sink: Arc<dyn EventSink>,
    /// The offline goal grammar: the offline brain's planner and the LLM planner's
    /// fallback.
    grammar: Arc<GoalGrammar>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("brain", &self.brain)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Agent {
    pub fn new(backend: Arc<dyn ToolBackend>, settings: AgentSettings, brain: Brain) -> Self {
        Self {
            backend,
            settings,
            brain,
            state: tokio::sync::Mutex::new(State::default()),
            state_sink: Arc::new(NullSink),
            event_sink: Arc::new(NullSink),
            grammar: Arc::new(GoalGrammar::lexical()),
        }
    }

    /// Uses `grammar` to read goals (e.g. one that matches words by meaning); the
    /// default has its word lists only.
    pub fn with_grammar(mut self, grammar: Arc<GoalGrammar>) -> Self {
        self.grammar = grammar;
        self
    }

    /// How this agent reads goals without a model server.
    pub fn grammar(&self) -> &GoalGrammar {
        &self.grammar
    }

    /// The offline plan of `goal`.
    pub fn offline_plan(&self, goal: &str) -> Result<Plan, PlanError> {
        planner::understand::subtasks::plan_of(goal, self.grammar.understand(goal))
    }

    /// The object (category and attributes), room and storey a question's object phrase
    /// names, as the goal grammar reads an object phrase ("the red stapler in the office
    /// upstairs" → "red stapler", "office", upstairs); the phrase itself when the grammar
    /// reads none.
    fn asked_about(&self, phrase: &str) -> (String, asp_core::Within) {
        match self
            .offline_plan(&format!("pick up {phrase}"))
            .map(|plan| plan.subtasks.into_iter().next())
        {
            Ok(Some(first)) => {
                let within = first.within();
                (first.object, within)
            }
            _ => (phrase.to_owned(), asp_core::Within::anywhere()),
        }
    }

    /// The agent `agent_node.llm.backend` asks for (the LLM client reads its key from the
    /// environment variable the configuration names).
    pub fn from_config(cfg: &AspConfig, backend: Arc<dyn ToolBackend>) -> Result<Self, AgentError> {
        let brain = match cfg.agent_node.llm.backend {
            LlmBackend::Offline => Brain::Offline,
            LlmBackend::Openai => {
                Brain::Llm(Arc::new(LlmClient::from_config(&cfg.agent_node.llm)?))
            }
        };
        Ok(Self::new(backend, AgentSettings::from_config(cfg), brain))
    }

    pub fn with_state_sink(mut self, sink: Arc<dyn StateSink>) -> Self {
        self.state_sink = sink;
        self
    }

    pub fn with_event_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.event_sink = sink;
        self
    }

    pub fn kind(&self) -> AgentKind {
        match self.brain {
            Brain::Offline => AgentKind::Offline,
            Brain::Llm(_) => AgentKind::Llm,
        }
    }

    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }

    /// The symbolic state between goals.
    pub async fn state(&self) -> State {
        self.state.lock().await.clone()
    }

    /// Replaces the symbolic state (e.g. empty after the map was rebuilt elsewhere).
    pub async fn set_state(&self, state: State) {
        *self.state.lock().await = state;
    }

    /// Carries out `goal`. Goals run one at a time (a second call waits for the first);
    /// `cancel` stops the goal and the running tool.
    pub async fn run_goal(
        &self,
        goal_id: impl Into<String>,
        goal: &str,
        cancel: CancellationToken,
    ) -> GoalReport {
        let goal_id = goal_id.into();
        let mut state = self.state.lock().await;
        let span = info_span!("goal", goal_id = %goal_id, agent = ?self.kind());
        let report = self
            .run_locked(goal_id, goal, cancel, state.clone())
            .instrument(span)
            .await;
        *state = report.final_state.clone();
        report
    }

    async fn run_locked(
        &self,
        goal_id: String,
        goal: &str,
        cancel: CancellationToken,
        state: State,
    ) -> GoalReport {
        let started = Instant::now();
        let mut rt = GoalRuntime::new(
            self.backend.as_ref(),
            &self.settings,
            goal_id.clone(),
            state,
            cancel,
            self.state_sink.as_ref(),
            self.event_sink.as_ref(),
        );
        // a refused goal may be megabytes of anything: events and logs show its start
        let shown = goal_input::shown(goal);
        rt.emit(Ev::GoalStarted {
            goal_id: goal_id.clone(),
            goal: shown.clone(),
            agent: self.kind(),
            model: match &self.brain {
                Brain::Llm(c) => Some(c.model().to_owned()),
                Brain::Offline => None,
            },
            state: rt.state.clone(),
        });
        info!(goal = %shown, "goal started");
        let mut model = ModelUse::default();
        let refused = goal_input::check_goal(goal, self.settings.max_goal_chars).err();
        let (plan, end) = match &self.brain {
            _ if let Some(r) = refused => {
                warn!(code = ?r.code(), "goal refused: {}", r.message());
                (
                    None,
                    DriveEnd::Failed(
                        GoalError {
                            code: r.code(),
                            message: r.message(),
                        },
                        String::new(),
                    ),
                )
            }
            Brain::Offline if let Some(phrase) = question::where_question(goal) => {
                let (object, within) = self.asked_about(&phrase);
                info!(object, within = %within, "a question of where something is");
                let end = offline::answer_where(&mut rt, &object, &within).await;
                (None, end)
            }
            Brain::Offline => match self.offline_plan(goal) {
                Ok(plan) => {
                    rt.emit(Ev::Planned {
                        goal_id: goal_id.clone(),
                        plan: plan.clone(),
                    });
                    let end = offline::drive(&mut rt, &plan).await;
                    (Some(plan), end)
                }
                Err(e) => (
                    None,
                    DriveEnd::Failed(
                        GoalError {
                            code: match e.kind {
                                planner::PlanErrorKind::NoVerb => GoalErrorCode::GoalNoVerb,
                                planner::PlanErrorKind::Unsupported => {
                                    GoalErrorCode::GoalUnsupported
                                }
                                planner::PlanErrorKind::Unsafe => GoalErrorCode::GoalUnsafe,
                                planner::PlanErrorKind::NoObject => GoalErrorCode::GoalNoObject,
                                planner::PlanErrorKind::Unclear => GoalErrorCode::GoalUnclear,
                                planner::PlanErrorKind::Other => GoalErrorCode::Unplannable,
                            },
                            message: match e.kind {
                                planner::PlanErrorKind::Unclear => e.message.clone(),
                                _ => format!("cannot plan the goal: {}", e.message),
                            },
                        },
                        String::new(),
                    ),
                ),
            },
            Brain::Llm(client) => {
                let plan = if self.settings.planner_use_llm {
                    let outcome = tokio::select! {
                        biased;
                        () = rt.cancel.cancelled() => None,
                        o = planner::llm::plan_with_llm(client, goal, self.settings.planner_max_regenerations, &self.grammar) => Some(o),
                    };
                    match outcome {
                        None => Err(Stop::Cancelled),
                        Some(o) => {
                            for a in &o.attempts {
                                match &a.response {
                                    Ok(resp) => model.record(&mut rt, client, resp, a.latency),
                                    Err(_) => model.wait += a.latency,
                                }
                                if let Some(problem) = &a.problem {
                                    rt.emit(Ev::ModelOutputProblem {
                                        goal_id: goal_id.clone(),
                                        turn: model.turns,
                                        problem: format!("planner: {problem}"),
                                        remedy: Remedy::Reasked,
                                    });
                                }
                            }
                            Ok(o.plan.ok())
                        }
                    }
                } else {
                    Ok(self.offline_plan(goal).ok())
                };
                match plan {
                    Err(stop) => (None, DriveEnd::Stopped(stop)),
                    Ok(plan) => {
                        if let Some(p) = &plan {
                            rt.emit(Ev::Planned {
                                goal_id: goal_id.clone(),
                                plan: p.clone(),
                            });
                        }
                        let end =
                            llm_agent::drive(&mut rt, client, goal, plan.as_ref(), &mut model)
                                .await;
                        (plan, end)
                    }
                }
            }
        };
        let (status, summary) = match end {
            DriveEnd::Completed(s) => (GoalStatus::Completed, s),
            DriveEnd::Failed(error, s) => {
                let summary = if s.is_empty() {
                    error.message.clone()
                } else {
                    s
                };
                (GoalStatus::Failed { error }, summary)
            }
            DriveEnd::Stopped(Stop::Cancelled) => (GoalStatus::Cancelled, "cancelled".to_owned()),
            DriveEnd::Stopped(Stop::ToolCallCap { limit }) => {
                let error = GoalError {
                    code: GoalErrorCode::ToolCallCap,
                    message: format!(
                        "the goal used all {limit} tool calls (agent_node.limits.max_tool_calls) without finishing"
                    ),
                };
                (
                    GoalStatus::Failed {
                        error: error.clone(),
                    },
                    error.message,
                )
            }
            DriveEnd::Stopped(Stop::RetryLimit { call, failures }) => {
                let error = GoalError {
                    code: GoalErrorCode::RetryLimit,
                    message: format!(
                        "{call} failed {failures} times in a row and was requested again (agent_node.limits.max_retries_per_call = {})",
                        self.settings.max_retries_per_call
                    ),
                };
                (
                    GoalStatus::Failed {
                        error: error.clone(),
                    },
                    error.message,
                )
            }
        };
        let duration = started.elapsed();
        rt.emit(Ev::GoalFinished {
            goal_id: goal_id.clone(),
            status: status.clone(),
            summary: summary.clone(),
            tool_calls: rt.calls,
            usage: model.usage,
            duration_ms: ms(duration),
            state: rt.state.clone(),
        });
        info!(status = ?status, tool_calls = rt.calls, "goal finished");
        GoalReport {
            goal_id,
            goal: shown,
            agent: self.kind(),
            status,
            summary,
            plan,
            final_state: rt.state.clone(),
            tool_calls: rt.calls,
            usage: model.usage,
            duration_ms: ms(duration),
            model_wait_ms: ms(model.wait),
            model_http_ms: ms(model.http),
            backend_ms: ms(rt.backend_time),
            events: std::mem::take(&mut rt.events),
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
