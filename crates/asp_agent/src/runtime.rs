//! The loop machinery both agents share: every tool call goes through [`GoalRuntime`],
//! which applies the guards (unknown tool, bad arguments, disallowed skill, key not in the
//! inventory, gripper preconditions), the call cap and the retry limit, calls the backend
//! with the cancellation token, updates the symbolic state (remapping when a failure
//! says the map is stale), publishes it, and records events — one `tracing` span per
//! call.

use std::collections::HashMap;
use std::future::Future;
use std::time::{Duration, Instant};

use asp_config::AspConfig;
use asp_core::{
    Failure, FailureKind, GripperPrecondition, ObjectKey, Skill, State, ToolOutput, ToolValue,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info_span};

use crate::backend::{ActionReport, ToolBackend, ToolContext, ToolFailure, Verdict};
use crate::events::{AgentEvent, EventSink, Guard, RemapPhase, StateSink};
use crate::prompts;
use crate::tools::{Rejection, ToolName, ToolRequest, offered_tools};

/// The agent's settings in typed form (from `agent_node` and `/**.safety`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSettings {
    /// Tool calls per goal, rejected ones included.
    pub max_tool_calls: u32,
    /// Consecutive failures of the same call allowed beyond the first.
    pub max_retries_per_call: u32,
    /// Unusable model replies repaired or re-asked before the goal fails.
    pub max_malformed_replies: u32,
    /// How long a cancelled tool may take to return.
    pub cancel_grace: Duration,
    /// `/**.safety.allowed_skills`: skill tools outside it are neither offered nor run.
    pub allowed_skills: Vec<Skill>,
    /// Offer go_to (and use it offline).
    pub mobile: bool,
    /// Decompose with the LLM first (LLM agent).
    pub planner_use_llm: bool,
    pub planner_max_regenerations: u32,
    /// Longest goal accepted, in characters.
    pub max_goal_chars: usize,
}

impl AgentSettings {
    pub fn from_config(cfg: &AspConfig) -> Self {
        let a = &cfg.agent_node;
        Self {
            max_tool_calls: a.limits.max_tool_calls,
            max_retries_per_call: a.limits.max_retries_per_call,
            max_malformed_replies: a.limits.max_malformed_replies,
            cancel_grace: Duration::from_secs_f64(a.limits.cancel_grace_s.max(0.0)),
            allowed_skills: cfg.common.safety.allowed_skills.clone(),
            mobile: a.mobile,
            planner_use_llm: a.planner.use_llm,
            planner_max_regenerations: a.planner.max_regenerations,
            max_goal_chars: a.limits.max_goal_chars as usize,
        }
    }

    /// The tools offered to the model and accepted from it.
    pub fn offered_tools(&self) -> Vec<ToolName> {
        offered_tools(&self.allowed_skills, self.mobile)
    }
}

impl Default for AgentSettings {
    fn default() -> Self {
        Self::from_config(&AspConfig::default())
    }
}

/// Why the runtime ends a goal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Stop {
    Cancelled,
    ToolCallCap { limit: u32 },
    RetryLimit { call: String, failures: u32 },
}

/// The result of one call as the driver sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallOutcome {
    pub output: ToolOutput,
    /// The tool, when the name was known.
    pub tool: Option<ToolName>,
    pub guard: Option<Guard>,
    /// This exact call failed as often as it may: the model is told what to do next
    /// (the output itself says only what happened: results and events are for people).
    pub retry_limit_reached: bool,
}

/// Per-goal state of the machinery.
pub(crate) struct GoalRuntime<'a> {
    backend: &'a dyn ToolBackend,
    pub settings: &'a AgentSettings,
    offered: Vec<ToolName>,
    pub state: State,
    pub goal_id: String,
    pub calls: u32,
    /// Failures of each call (tool + arguments) since it last succeeded.
    failures: HashMap<String, u32>,
    remap_pending: bool,
    pub cancel: CancellationToken,
    state_sink: &'a dyn StateSink,
    event_sink: &'a dyn EventSink,
    pub events: Vec<AgentEvent>,
    pub backend_time: Duration,
    /// The keys the latest successful object_retrieval returned, best first.
    pub last_retrieval: Vec<ObjectKey>,
    /// The latest object_retrieval ran and matched nothing (not a backend failure).
    pub nothing_matched: bool,
    /// The storey this goal's relative storeys ("upstairs") count from: the one its
    /// first such retrieval was counted from (where the base then stood), so that a
    /// retry from upstairs still looks upstairs of where the goal began.
    storeys_counted_from: Option<u32>,
}

impl<'a> GoalRuntime<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        backend: &'a dyn ToolBackend,
        settings: &'a AgentSettings,
        goal_id: String,
        state: State,
        cancel: CancellationToken,
        state_sink: &'a dyn StateSink,
        event_sink: &'a dyn EventSink,
    ) -> Self {
        Self {
            backend,
            settings,
            offered: settings.offered_tools(),
            state,
            goal_id,
            calls: 0,
            failures: HashMap::new(),
            remap_pending: false,
            cancel,
            state_sink,
            event_sink,
            events: Vec::new(),
            backend_time: Duration::ZERO,
            last_retrieval: Vec::new(),
            nothing_matched: false,
            storeys_counted_from: None,
        }
    }

    pub fn offered(&self) -> &[ToolName] {
        &self.offered
    }

    pub fn emit(&mut self, event: AgentEvent) {
        self.event_sink.emit(&event);
        self.events.push(event);
    }

    /// A call from the model: `args` is the parsed JSON or why it is not JSON.
    pub async fn call_from_model(
        &mut self,
        call_id: &str,
        name: &str,
        args: Result<Value, String>,
    ) -> Result<CallOutcome, Stop> {
        let (args_value, parsed) = match args {
            Ok(v) => {
                let parsed = ToolRequest::parse(name, &v, &self.offered);
                (v, parsed)
            }
            Err(problem) => (
                Value::Null,
                Err(Rejection {
                    kind: FailureKind::InvalidArgument,
                    message: prompts::message("bad_json_arguments", &[("problem", &problem)]),
                }),
            ),
        };
        self.run(call_id, name, args_value, parsed).await
    }

    /// A typed call (offline agent): the same guards, minus parsing.
    pub async fn call(&mut self, call_id: &str, req: ToolRequest) -> Result<CallOutcome, Stop> {
        let name = req.tool().as_str();
        let args = req.args_json();
        let parsed = if self.offered.contains(&req.tool()) {
            Ok(req)
        } else {
            // same wording as for the model
            ToolRequest::parse(name, &args, &self.offered)
        };
        self.run(call_id, name, args, parsed).await
    }

    async fn run(
        &mut self,
        call_id: &str,
        name: &str,
        args: Value,
        parsed: Result<ToolRequest, Rejection>,
    ) -> Result<CallOutcome, Stop> {
        if self.cancel.is_cancelled() {
            return Err(Stop::Cancelled);
        }
        if self.calls >= self.settings.max_tool_calls {
            return Err(Stop::ToolCallCap {
                limit: self.settings.max_tool_calls,
            });
        }
        let signature = format!("{name}({args})");
        let limit = 1 + self.settings.max_retries_per_call;
        if let Some(&n) = self.failures.get(&signature)
            && n >= limit
        {
            return Err(Stop::RetryLimit {
                call: signature,
                failures: n,
            });
        }
        self.calls += 1;
        let index = self.calls;
        let span = info_span!("tool_call", goal_id = %self.goal_id, index, tool = name, call_id);
        async move {
            self.emit(AgentEvent::ToolCalled {
                goal_id: self.goal_id.clone(),
                index,
                call_id: call_id.to_owned(),
                tool: name.to_owned(),
                args,
            });
            let started = Instant::now();
            let tool = parsed.as_ref().ok().map(ToolRequest::tool);
            let checked = parsed.and_then(|req| self.check(&req).map(|()| req));
            let (mut output, guard, verdicts, cancelled) = match checked {
                Err(rej) => {
                    debug!(kind = ?rej.kind, message = %rej.message, "tool call refused");
                    let out =
                        ToolOutput::fail(self.state.clone(), Failure::new(rej.kind), rej.message);
                    (out, Some(Guard::from_kind(rej.kind)), Vec::new(), false)
                }
                Ok(req) => {
                    let (out, verdicts, cancelled) = self.execute(index, call_id, req).await;
                    (out, None, verdicts, cancelled)
                }
            };
            let mut retry_limit_reached = false;
            // consecutive failures of the same call (SPEC §1.3)
            if output.success {
                self.failures.remove(&signature);
            } else {
                let n = self.failures.entry(signature).or_insert(0);
                *n += 1;
                let n = *n;
                if n >= limit && !cancelled {
                    retry_limit_reached = true;
                    output.feedback_msg.push(' ');
                    output.feedback_msg.push_str(&prompts::message(
                        "retry_limit_reached",
                        &[("failures", &n.to_string())],
                    ));
                }
            }
            self.state_sink.publish(&self.goal_id, &self.state);
            self.emit(AgentEvent::ToolFinished {
                goal_id: self.goal_id.clone(),
                index,
                call_id: call_id.to_owned(),
                tool: name.to_owned(),
                output: output.clone(),
                guard,
                verdicts,
                duration_ms: started.elapsed().as_secs_f64() * 1e3,
                state: self.state.clone(),
            });
            if cancelled {
                return Err(Stop::Cancelled);
            }
            Ok(CallOutcome {
                output,
                tool,
                guard,
                retry_limit_reached,
            })
        }
        .instrument(span)
        .await
    }

    /// Inventory and gripper preconditions.
    fn check(&self, req: &ToolRequest) -> Result<(), Rejection> {
        for key in req.objects() {
            if !self.state.in_inventory(key) {
                let known = if self.state.inventory.is_empty() {
                    "the inventory is empty".to_owned()
                } else {
                    format!(
                        "the inventory holds {}",
                        self.state
                            .inventory
                            .iter()
                            .map(ObjectKey::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                return Err(Rejection {
                    kind: FailureKind::UnknownObject,
                    message: format!(
                        "{key} is not in the inventory ({known}); find it with object_retrieval first"
                    ),
                });
            }
        }
        if let ToolRequest::Skill { skill, obj } = req {
            match (skill.gripper_precondition(), &self.state.held_object) {
                (GripperPrecondition::Empty, Some(held)) => {
                    return Err(Rejection {
                        kind: FailureKind::Precondition,
                        message: format!(
                            "{skill} needs an empty gripper, but it holds {held}; place or drop {held} first"
                        ),
                    });
                }
                (GripperPrecondition::Holding, None) => {
                    return Err(Rejection {
                        kind: FailureKind::Precondition,
                        message: format!(
                            "{skill} needs a held object, but the gripper is empty; grasp the object first"
                        ),
                    });
                }
                (GripperPrecondition::Holding, Some(held)) if held == obj => {
                    return Err(Rejection {
                        kind: FailureKind::Precondition,
                        message: format!(
                            "{skill}({obj}): {obj} is the held object; name the object to put it on or in"
                        ),
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn context(&self, index: u32, call_id: &str) -> ToolContext {
        ToolContext {
            goal_id: self.goal_id.clone(),
            call_index: index,
            call_id: call_id.to_owned(),
            state: self.state.clone(),
            cancel: self.cancel.child_token(),
        }
    }

    /// Awaits a backend future; on cancel, gives it `cancel_grace` to return.
    async fn guarded<T>(
        &mut self,
        fut: impl Future<Output = Result<T, ToolFailure>>,
    ) -> (Result<T, ToolFailure>, bool) {
        let started = Instant::now();
        tokio::pin!(fut);
        let out = tokio::select! {
            biased;
            // a tool that saw the cancel and returned counts as cancelled too
            r = &mut fut => (r, self.cancel.is_cancelled()),
            () = self.cancel.cancelled() => {
                let grace = self.settings.cancel_grace;
                match tokio::time::timeout(grace, &mut fut).await {
                    Ok(r) => (r, true),
                    Err(_) => (
                        Err(ToolFailure::cancelled(format!(
                            "cancelled; the tool did not return within {} s of the cancel",
                            grace.as_secs_f64()
                        ))),
                        true,
                    ),
                }
            }
        };
        self.backend_time += started.elapsed();
        out
    }

    /// Runs a checked request on the backend and turns the result into the tool output.
    async fn execute(
        &mut self,
        index: u32,
        call_id: &str,
        req: ToolRequest,
    ) -> (ToolOutput, Vec<Verdict>, bool) {
        let backend = self.backend;
        match req {
            ToolRequest::ObjectRetrieval { query, mut within } => {
                if within.storey.is_some_and(asp_core::Storey::is_relative)
                    && within.counted_from.is_none()
                {
                    within.counted_from = self.storeys_counted_from;
                }
                if self.remap_pending {
                    let ctx = self.context(index, call_id);
                    let (r, cancelled) = self.guarded(backend.remap(&ctx)).await;
                    if let Err(f) = r {
                        return (self.failed(None, f), Vec::new(), cancelled);
                    }
                    self.remap_pending = false;
                    self.emit(AgentEvent::Remap {
                        goal_id: self.goal_id.clone(),
                        phase: RemapPhase::Rebuilt,
                        forgotten: Vec::new(),
                        reason: "map rebuilt before object_retrieval".into(),
                    });
                    if cancelled {
                        let f = ToolFailure::cancelled("cancelled while rebuilding the map");
                        return (self.failed(None, f), Vec::new(), true);
                    }
                }
                let ctx = self.context(index, call_id);
                let (r, cancelled) = self
                    .guarded(backend.object_retrieval(&query, &within, &ctx))
                    .await;
                let asked = format!("{query:?}{within}");
                self.last_retrieval.clear();
                self.nothing_matched = matches!(&r, Ok(found) if found.keys.is_empty());
                if let Ok(found) = &r
                    && self.storeys_counted_from.is_none()
                {
                    self.storeys_counted_from = found.storeys_counted_from;
                }
                let out = match r {
                    Ok(found) if found.keys.is_empty() => ToolOutput::fail(
                        self.state.clone(),
                        Failure::new(FailureKind::Perception),
                        format!(
                            "no object matching {asked} was found; describe it differently (its category, colour or material), or it may be out of view.{}",
                            room_said(&found)
                        ),
                    ),
                    Ok(found) => {
                        let keys = found.keys.clone();
                        let names: Vec<&str> = keys.iter().map(ObjectKey::as_str).collect();
                        let mut msg = format!(
                            "found {} object(s) for {asked}: {}",
                            keys.len(),
                            names.join(", ")
                        );
                        if found.room.is_some() {
                            msg.push('.');
                            msg.push_str(&room_said(&found));
                        }
                        for k in &keys {
                            self.state.add(k.clone());
                        }
                        self.last_retrieval = keys;
                        ToolOutput::ok(ToolValue::State(self.state.clone()), msg)
                    }
                    Err(f) => self.failed(None, f),
                };
                (out, Vec::new(), cancelled)
            }
            ToolRequest::RecallMemory { query, within } => {
                let ctx = self.context(index, call_id);
                let (r, cancelled) = self
                    .guarded(backend.recall_memory(&query, &within, &ctx))
                    .await;
                let out = match r {
                    // what the memory says, nothing remembered included, is an answer;
                    // a memory that could not be consulted is not
                    Ok(recollection) if recollection.consulted => {
                        let msg = recollection.describe();
                        ToolOutput::ok(ToolValue::Recollection(recollection), msg)
                    }
                    Ok(recollection) => ToolOutput::fail(
                        self.state.clone(),
                        Failure::new(FailureKind::Precondition),
                        recollection.describe(),
                    ),
                    Err(f) => self.failed(None, f),
                };
                (out, Vec::new(), cancelled)
            }
            ToolRequest::DistanceTo { obj } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.distance_to(&obj, &ctx)).await;
                let out = self.number(r, |d| format!("{obj} is {d:.3} m from the robot"));
                (out, Vec::new(), c)
            }
            ToolRequest::DistanceBetween { a, b } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.distance_between(&a, &b, &ctx)).await;
                let out = self.number(r, |d| format!("{a} and {b} are {d:.3} m apart"));
                (out, Vec::new(), c)
            }
            ToolRequest::SizeOf { obj } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.size_of(&obj, &ctx)).await;
                let out = self.number(r, |d| {
                    format!("{obj} is {d:.3} m across (bounding-box diagonal)")
                });
                (out, Vec::new(), c)
            }
            ToolRequest::LeftOf { a, b } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.left_of(&a, &b, &ctx)).await;
                let out = self.truth(r, |t| {
                    format!("{a} is {}left of {b}", if t { "" } else { "not " })
                });
                (out, Vec::new(), c)
            }
            ToolRequest::RightOf { a, b } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.right_of(&a, &b, &ctx)).await;
                let out = self.truth(r, |t| {
                    format!("{a} is {}right of {b}", if t { "" } else { "not " })
                });
                (out, Vec::new(), c)
            }
            ToolRequest::Interact { obj, action } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.interact(&obj, &action, &ctx)).await;
                self.action(&obj, r, c, || format!("interact({obj}, {action:?}) done"))
            }
            ToolRequest::GoTo { obj, action } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.go_to(&obj, &action, &ctx)).await;
                self.action(&obj, r, c, || format!("arrived at {obj} for {action:?}"))
            }
            ToolRequest::Skill { skill, obj } => {
                let ctx = self.context(index, call_id);
                let (r, c) = self.guarded(backend.skill(skill, &obj, &ctx)).await;
                self.action(&obj, r, c, || format!("{skill}({obj}) succeeded"))
            }
        }
    }

    fn number(
        &mut self,
        r: Result<f64, ToolFailure>,
        msg: impl FnOnce(f64) -> String,
    ) -> ToolOutput {
        match r {
            Ok(d) if d.is_finite() => ToolOutput::ok(ToolValue::Number(d), msg(d)),
            Ok(d) => ToolOutput::fail(
                self.state.clone(),
                Failure::new(FailureKind::Internal),
                format!("the backend returned {d}, not a number; the object may have no points"),
            ),
            Err(f) => self.failed(None, f),
        }
    }

    fn truth(
        &mut self,
        r: Result<bool, ToolFailure>,
        msg: impl FnOnce(bool) -> String,
    ) -> ToolOutput {
        match r {
            Ok(t) => ToolOutput::ok(ToolValue::Bool(t), msg(t)),
            Err(f) => self.failed(None, f),
        }
    }

    fn action(
        &mut self,
        obj: &ObjectKey,
        r: Result<ActionReport, ToolFailure>,
        cancelled: bool,
        default_msg: impl FnOnce() -> String,
    ) -> (ToolOutput, Vec<Verdict>, bool) {
        match r {
            Ok(report) => {
                self.state.held_object = if report.holding {
                    Some(
                        self.state
                            .held_object
                            .clone()
                            .unwrap_or_else(|| obj.clone()),
                    )
                } else {
                    None
                };
                let mut msg = if report.message.trim().is_empty() {
                    default_msg()
                } else {
                    report.message.clone()
                };
                match &self.state.held_object {
                    Some(h) => msg.push_str(&format!("; holding {h}")),
                    None => msg.push_str("; the gripper is empty"),
                }
                (
                    ToolOutput::ok(ToolValue::State(self.state.clone()), msg),
                    report.verdicts,
                    cancelled,
                )
            }
            Err(f) => {
                let verdicts = f.verdicts.clone();
                (self.failed(Some(obj), f), verdicts, cancelled)
            }
        }
    }

    /// Rebuilds the map (a fresh look, from the next mapping pose) before the next
    /// object_retrieval; every key but the held object's is forgotten now.
    /// Records a choice no check can confirm (see [`AgentEvent::Unconfirmed`]).
    pub(crate) fn unconfirmed(&mut self, reason: String) {
        self.emit(AgentEvent::Unconfirmed {
            goal_id: self.goal_id.clone(),
            reason,
        });
    }

    pub(crate) fn look_again(&mut self, reason: &str) {
        let before = self.state.inventory.clone();
        self.state.clear_inventory();
        let forgotten: Vec<ObjectKey> = before
            .into_iter()
            .filter(|k| !self.state.in_inventory(k))
            .collect();
        self.remap_pending = true;
        self.emit(AgentEvent::Remap {
            goal_id: self.goal_id.clone(),
            phase: RemapPhase::Cleared,
            forgotten,
            reason: reason.to_owned(),
        });
    }

    /// A failed backend call: gripper update, remap, output.
    fn failed(&mut self, obj: Option<&ObjectKey>, f: ToolFailure) -> ToolOutput {
        match (f.holding, obj) {
            (Some(false), _) => self.state.held_object = None,
            (Some(true), Some(o)) if self.state.held_object.is_none() => {
                self.state.held_object = Some(o.clone());
            }
            _ => {}
        }
        let mut message = f.message.clone();
        // the map no longer offers the object (a closer look said it is not what was
        // asked for): its key leaves the inventory, and the way on is retrieval again
        if f.failure.kind == FailureKind::UnknownObject
            && let Some(key) = obj
            && self.state.forget(key)
        {
            end_sentence(&mut message);
            message.push_str(&format!(
                " {key} left the inventory; find the object again with object_retrieval."
            ));
        }
        if f.failure.needs_remap {
            self.look_again(&f.message);
            end_sentence(&mut message);
            message.push_str(
                " Object positions are now unknown: the inventory was cleared (except the held object) and the map will be rebuilt at the next object_retrieval; retrieve the objects again.",
            );
        }
        ToolOutput::fail(self.state.clone(), f.failure, message)
    }
}

/// Ends `message`'s last sentence (a following one stands on its own, whether or not the
/// feedback ended one).
fn end_sentence(message: &mut String) {
    let trimmed = message.trim_end().len();
    message.truncate(trimmed);
    if !message.is_empty() && !message.ends_with(['.', '!', '?']) {
        message.push('.');
    }
}

/// What a retrieval says of the room it was asked in, as a sentence of its own (" Kept
/// to the office: …."); nothing without a room.
fn room_said(found: &crate::Found) -> String {
    let Some(note) = found.room.as_deref() else {
        return String::new();
    };
    let mut chars = note.chars();
    let mut out = String::from(" ");
    if let Some(first) = chars.next() {
        out.extend(first.to_uppercase());
        out.push_str(chars.as_str());
    }
    end_sentence(&mut out);
    out
}
