//! What one episode produced: the figures `asp eval` prints, the failure class, and the
//! trace (the agent's goal report and the tool backend's journal) for determinism checks,
//! replays and reports.

use std::collections::BTreeMap;
use std::path::PathBuf;

use asp_agent::{AgentEvent, GoalReport, GoalStatus};
use asp_core::FailureKind;
use asp_system::JournalEntry;
use serde::{Deserialize, Serialize};

/// Everything needed to run an episode again: the scenario file, the seed and the
/// configuration it ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeSpec {
    /// Scenario name (from its file).
    pub scenario: String,
    pub scenario_file: PathBuf,
    /// 0-based run number within the suite.
    pub run: u32,
    /// The simulator seed of this episode: the suite's base seed plus `run`.
    pub seed: u64,
    /// The folder the parameter files were read from.
    pub config_dir: PathBuf,
    /// Overrides applied on top of the files, in order (the suite's, then the caller's).
    pub overrides: Vec<String>,
}

impl EpisodeSpec {
    /// The goal id the agent runs the episode under (stable, so traces compare).
    pub fn goal_id(&self) -> String {
        format!("{}_run{}", self.scenario, self.run)
    }
}

/// Why a failed episode failed, read from its trace (see [`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The object map or retrieval did not find the object.
    Perception,
    /// No part could be grounded, or the verifier refused to commit on it.
    Grounding,
    /// Manipulation: no motion plan, the motion failed, or it ran and the outcome check
    /// said it did not do the job.
    Planning,
    /// The base could not get to the object.
    Navigation,
    /// The agent: an unplannable goal, tool-call or retry limits, refused calls, or a
    /// goal declared done while the world says otherwise.
    Agent,
}

impl FailureClass {
    pub const ALL: [FailureClass; 5] = [
        FailureClass::Perception,
        FailureClass::Grounding,
        FailureClass::Planning,
        FailureClass::Navigation,
        FailureClass::Agent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Perception => "perception",
            FailureClass::Grounding => "grounding",
            FailureClass::Planning => "planning",
            FailureClass::Navigation => "navigation",
            FailureClass::Agent => "agent",
        }
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure class with the evidence it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Classification {
    pub class: FailureClass,
    /// The tool call it was read from (1-based), if any.
    pub call: Option<u32>,
    /// One line: which call failed how, or why the agent is blamed.
    pub reason: String,
}

/// The trace of an episode: the agent's report (events, verdicts, usage) and what every
/// backend call found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub report: GoalReport,
    pub journal: Vec<JournalEntry>,
}

/// Wall-clock times of an episode, milliseconds. Not part of the trace comparison.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct WallTimes {
    /// Starting the system (includes building the map when `build_on_start`).
    pub setup_ms: f64,
    /// The goal, from `run_goal` to its report.
    pub goal_ms: f64,
    /// Everything: setup, goal and judging (not the report rendering).
    pub total_ms: f64,
}

/// Costs and counts of an episode.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Tool calls the agent made, refused ones included.
    pub tool_calls: u32,
    /// Model answers received (0 for the offline agent).
    pub llm_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Requests to the skill executor (a skill tool or `interact`'s skill).
    pub skill_calls: u32,
    /// Affordance detections.
    pub affordance_calls: u32,
    /// Verdicts with `passed: false`, all stages.
    pub verifier_rejections: u32,
    /// The same by stage (`gate`, `outcome`, `grounding`, …).
    pub rejections_by_stage: BTreeMap<String, u32>,
    /// Calls a guard refused before they reached the robot.
    pub guard_refusals: u32,
    /// Requests to the web search (searches and pictures) grounding unknown words made.
    #[serde(default)]
    pub web_calls: u32,
}

impl Counts {
    /// The counts of a trace.
    pub fn of(trace: &Trace) -> Counts {
        let r = &trace.report;
        let mut c = Counts {
            tool_calls: r.tool_calls,
            llm_calls: r.usage.requests,
            prompt_tokens: r.usage.prompt_tokens,
            completion_tokens: r.usage.completion_tokens,
            cost_usd: r.usage.cost_usd,
            ..Counts::default()
        };
        for e in &trace.journal {
            match e {
                JournalEntry::Skill { .. } => c.skill_calls += 1,
                JournalEntry::Affordances { .. } => c.affordance_calls += 1,
                _ => {}
            }
        }
        for v in r.verdicts() {
            if !v.passed {
                c.verifier_rejections += 1;
                *c.rejections_by_stage.entry(v.stage.clone()).or_default() += 1;
            }
        }
        c.guard_refusals = r
            .events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ToolFinished { guard: Some(_), .. }))
            .count() as u32;
        c
    }

    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One episode: what ran, how it scored, what it cost, why it failed, and its trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeResult {
    pub spec: EpisodeSpec,
    pub goal: String,
    /// The scenario's level, when its suite groups them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// The scenario's success predicate on the simulator's final state.
    pub success: bool,
    /// Partial credit: 1 on success, else the highest `partial:` level that holds.
    pub progress: f64,
    /// The agent's own end (completed, failed with a code, cancelled).
    pub status: GoalStatus,
    /// Whether the verifier confirmed the goal (see `asp_system::verified_success`).
    pub verified: bool,
    pub summary: String,
    pub counts: Counts,
    /// `None` on success.
    pub failure: Option<Classification>,
    pub wall: WallTimes,
    /// The verifier's outcome answers, each against the world at the time of its views.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcome_checks: Vec<crate::outcome_truth::OutcomeJudgement>,
    pub trace: Trace,
}

/// The failure kind of a finished tool call that reached the backend and failed.
fn failed_call(e: &AgentEvent) -> Option<(u32, &str, FailureKind, &str)> {
    match e {
        AgentEvent::ToolFinished {
            index,
            tool,
            output,
            guard: None,
            ..
        } if !output.success => Some((
            *index,
            tool.as_str(),
            output
                .failure
                .as_ref()
                .map_or(FailureKind::Internal, |f| f.kind),
            output.feedback_msg.as_str(),
        )),
        _ => None,
    }
}

/// Classifies a failed episode from its trace. The rule, first match wins:
///
/// 1. The agent reported the goal **completed** but the success predicate does not hold:
///    `agent` (it acted on the wrong thing or left a step out; the failures it recovered
///    from along the way did not decide the episode).
/// 2. Otherwise the **last tool call that reached the backend and failed** decides, by
///    its failure kind:
///    - `perception`, `unknown_object` → **perception**;
///    - `grounding` → **grounding**;
///    - `verification` → **grounding** when the verifier's commit gate refused the skill
///      (the journal's skill reply has a rejected commit), **planning** when the motion
///      ran and the outcome check failed;
///    - `planning`, `execution`, `not_allowed` (outside the workspace) → **planning**;
///    - `navigation` → **navigation**;
///    - anything else (internal, cancelled, precondition, argument problems) → **agent**.
/// 3. No backend call failed (an unplannable goal, the tool-call cap, only refused calls):
///    **agent**.
pub fn classify(trace: &Trace) -> Classification {
    let report = &trace.report;
    if report.status.is_completed() {
        return Classification {
            class: FailureClass::Agent,
            call: None,
            reason: format!(
                "the agent reported the goal done ({}) but the success predicate does not hold",
                if asp_system::verified_success(report) {
                    "verified by an outcome check"
                } else {
                    "no passing outcome check at the end"
                }
            ),
        };
    }
    let Some((index, tool, kind, message)) = report.events.iter().rev().find_map(failed_call)
    else {
        let why = match &report.status {
            GoalStatus::Failed { error } => format!("{:?}: {}", error.code, error.message),
            GoalStatus::Cancelled => "cancelled".to_owned(),
            GoalStatus::Completed => String::new(),
        };
        return Classification {
            class: FailureClass::Agent,
            call: None,
            reason: format!("no tool call failed in the robot; the agent stopped ({why})"),
        };
    };
    let class = match kind {
        FailureKind::Perception | FailureKind::UnknownObject => FailureClass::Perception,
        FailureKind::Grounding => FailureClass::Grounding,
        FailureKind::Verification => {
            let rejected_commit = trace.journal.iter().any(|e| match e {
                JournalEntry::Skill {
                    call_index, reply, ..
                } => {
                    *call_index == index
                        && reply.report.commit.as_ref().is_some_and(|c| !c.accepted)
                }
                _ => false,
            });
            if rejected_commit {
                FailureClass::Grounding
            } else {
                FailureClass::Planning
            }
        }
        FailureKind::Planning | FailureKind::Execution | FailureKind::NotAllowed => {
            FailureClass::Planning
        }
        FailureKind::Navigation => FailureClass::Navigation,
        FailureKind::Internal
        | FailureKind::Cancelled
        | FailureKind::Precondition
        | FailureKind::InvalidArgument
        | FailureKind::UnknownTool => FailureClass::Agent,
    };
    let kind_name = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| format!("{kind:?}"));
    Classification {
        class,
        call: Some(index),
        reason: format!("[{index}] {tool} failed ({kind_name}): {message}"),
    }
}

/// Keys of wall-clock values anywhere in a trace or result: removed before traces are
/// compared. Everything else of a trace is a function of the suite, the seed and the
/// (offline) agent. `observed` holds camera stamps: simulated time, but the simulator's
/// clock steps 1 µs per message stamped at one simulated instant, a count that depends
/// on timing.
pub const WALL_CLOCK_KEYS: [&str; 9] = [
    "duration_ms",
    "latency_ms",
    "model_wait_ms",
    "model_http_ms",
    "backend_ms",
    "planning_time_s",
    "wall",
    "wall_ms",
    "observed",
];

/// Removes every [`WALL_CLOCK_KEYS`] entry from `value`, recursively.
pub fn strip_wall_clock(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| !WALL_CLOCK_KEYS.contains(&k.as_str()));
            for v in map.values_mut() {
                strip_wall_clock(v);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_wall_clock),
        _ => {}
    }
}

/// The trace as JSON without wall-clock values: equal for equal runs. It goes through
/// JSON text, as a results file does, so a fresh trace compares equal to a recorded one
/// (single-precision numbers are written in their shortest form, non-finite ones as null).
pub fn comparable_trace(trace: &Trace) -> serde_json::Value {
    let mut v = serde_json::to_string(trace)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(serde_json::Value::Null);
    strip_wall_clock(&mut v);
    v
}

/// The first place two JSON values differ, as a path with both values (for messages).
pub fn first_difference(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
        use serde_json::Value as V;
        match (a, b) {
            (V::Object(x), V::Object(y)) => {
                for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                    let p = format!("{path}.{k}");
                    match (x.get(k), y.get(k)) {
                        (Some(u), Some(v)) => {
                            if let Some(d) = walk(u, v, &p) {
                                return Some(d);
                            }
                        }
                        (u, v) => return Some(format!("{p}: {u:?} vs {v:?}")),
                    }
                }
                None
            }
            (V::Array(x), V::Array(y)) => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    if let Some(d) = walk(u, v, &format!("{path}[{i}]")) {
                        return Some(d);
                    }
                }
                (x.len() != y.len()).then(|| format!("{path}: {} vs {} elements", x.len(), y.len()))
            }
            _ => (a != b).then(|| {
                let short = |v: &serde_json::Value| {
                    let s = v.to_string();
                    if s.len() > 200 {
                        format!("{}…", &s[..s.floor_char_boundary(200)])
                    } else {
                        s
                    }
                };
                format!("{path}: {} vs {}", short(a), short(b))
            }),
        }
    }
    walk(a, b, "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_agent::{AgentKind, GoalError, GoalErrorCode, Guard, Verdict};
    use asp_core::{Failure, State, ToolOutput, ToolValue};

    fn finished(index: u32, output: ToolOutput, guard: Option<Guard>) -> AgentEvent {
        AgentEvent::ToolFinished {
            goal_id: "g".into(),
            index,
            call_id: format!("c{index}"),
            tool: "interact".into(),
            output,
            guard,
            verdicts: Vec::new(),
            duration_ms: 3.0,
            state: State::default(),
        }
    }

    fn fail(index: u32, kind: FailureKind) -> AgentEvent {
        finished(
            index,
            ToolOutput::fail(
                State::default(),
                Failure::new(kind),
                format!("{kind:?} went wrong"),
            ),
            None,
        )
    }

    fn ok(index: u32) -> AgentEvent {
        finished(index, ToolOutput::ok(ToolValue::Bool(true), "fine"), None)
    }

    fn trace(status: GoalStatus, events: Vec<AgentEvent>) -> Trace {
        Trace {
            report: GoalReport {
                goal_id: "g".into(),
                goal: "do it".into(),
                agent: AgentKind::Offline,
                status,
                summary: String::new(),
                plan: None,
                final_state: State::default(),
                tool_calls: events.len() as u32,
                usage: Default::default(),
                duration_ms: 10.0,
                model_wait_ms: 0.0,
                model_http_ms: 0.0,
                backend_ms: 5.0,
                events,
            },
            journal: Vec::new(),
        }
    }

    fn failed() -> GoalStatus {
        GoalStatus::Failed {
            error: GoalError {
                code: GoalErrorCode::SubtaskFailed,
                message: "a subtask failed".into(),
            },
        }
    }

    #[test]
    fn the_last_failed_backend_call_decides_the_class() {
        let cases = [
            (FailureKind::Perception, FailureClass::Perception),
            (FailureKind::UnknownObject, FailureClass::Perception),
            (FailureKind::Grounding, FailureClass::Grounding),
            (FailureKind::Planning, FailureClass::Planning),
            (FailureKind::Execution, FailureClass::Planning),
            // an outcome check that failed after the motion ran (no rejected commit)
            (FailureKind::Verification, FailureClass::Planning),
            (FailureKind::Navigation, FailureClass::Navigation),
            (FailureKind::Internal, FailureClass::Agent),
        ];
        for (kind, class) in cases {
            // an earlier, different failure and a later guard refusal do not decide
            let t = trace(
                failed(),
                vec![
                    fail(1, FailureKind::Perception),
                    ok(2),
                    fail(3, kind),
                    finished(
                        4,
                        ToolOutput::fail(
                            State::default(),
                            Failure::new(FailureKind::UnknownObject),
                            "not in the inventory",
                        ),
                        Some(Guard::UnknownObject),
                    ),
                ],
            );
            let c = classify(&t);
            assert_eq!(c.class, class, "{kind:?}: {c:?}");
            assert_eq!(c.call, Some(3));
            assert!(c.reason.contains("went wrong"), "{}", c.reason);
        }
    }

    #[test]
    fn a_completed_goal_that_does_not_hold_and_a_goal_without_failed_calls_are_the_agents() {
        let c = classify(&trace(
            GoalStatus::Completed,
            vec![fail(1, FailureKind::Navigation), ok(2)],
        ));
        assert_eq!((c.class, c.call), (FailureClass::Agent, None));
        assert!(c.reason.contains("reported the goal done"), "{}", c.reason);
        let c = classify(&trace(failed(), vec![ok(1)]));
        assert_eq!((c.class, c.call), (FailureClass::Agent, None));
        assert!(c.reason.contains("SubtaskFailed"), "{}", c.reason);
    }

    #[test]
    fn counts_rejections_by_stage_and_guard_refusals() {
        let mut t = trace(failed(), vec![ok(1)]);
        let verdict = |stage: &str, passed| Verdict {
            stage: stage.into(),
            check: "?".into(),
            passed,
            score: None,
            detail: String::new(),
        };
        if let AgentEvent::ToolFinished { verdicts, .. } = &mut t.report.events[0] {
            *verdicts = vec![
                verdict("grounding", false),
                verdict("gate", false),
                verdict("gate", true),
                verdict("outcome", false),
            ];
        }
        t.report.events.push(finished(
            2,
            ToolOutput::fail(
                State::default(),
                Failure::new(FailureKind::NotAllowed),
                "no",
            ),
            Some(Guard::NotAllowed),
        ));
        let c = Counts::of(&t);
        assert_eq!(c.verifier_rejections, 3);
        assert_eq!(c.rejections_by_stage.get("gate"), Some(&1));
        assert_eq!(c.rejections_by_stage.get("grounding"), Some(&1));
        assert_eq!(c.rejections_by_stage.get("outcome"), Some(&1));
        assert_eq!(c.guard_refusals, 1);
        assert_eq!(c.skill_calls, 0);
    }

    #[test]
    fn wall_clock_values_are_stripped_everywhere_and_differences_are_located() {
        let a = trace(failed(), vec![fail(1, FailureKind::Grounding)]);
        let mut b = a.clone();
        b.report.duration_ms = 999.0;
        if let AgentEvent::ToolFinished { duration_ms, .. } = &mut b.report.events[0] {
            *duration_ms = 77.0;
        }
        assert_eq!(comparable_trace(&a), comparable_trace(&b));
        assert!(!comparable_trace(&a).to_string().contains("duration_ms"));
        b.report.summary = "changed".into();
        let d = first_difference(&comparable_trace(&a), &comparable_trace(&b)).unwrap();
        assert!(d.starts_with(".report.summary"), "{d}");
    }
}
