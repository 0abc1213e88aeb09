//! `asp run "<goal>"`: one goal end to end on the embedded simulator, with the tool-call
//! trace, the verifier's verdicts and the final state printed as they happen; with
//! `--report FILE`, a self-contained HTML episode report as well. The system is the node
//! graph of `asp launch` and `asp eval` (every node, the sim node and its VLM stand-in
//! included) on an in-process ROS bus.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use asp_agent::{AgentEvent, EventSink, GoalReport, GoalStatus, args_text};
use asp_config::LoadedConfig;
use asp_config::sections::agent::LlmBackend;
use asp_core::robot::CancellationToken;
use asp_nodes::nodes::NodeOptions;
use asp_ros::{Transport, TransportSettings};
use asp_simulation::start_sim_graph;
use asp_system::{ObjectMapPort, verified_success};

/// What `asp run` was asked.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub goal: String,
    pub world: Option<PathBuf>,
    pub llm: Option<LlmBackend>,
    pub seed: Option<u64>,
    /// Write a self-contained HTML episode report here.
    pub report: Option<PathBuf>,
}

/// Exit status when the goal was not achieved (or not verified).
const EXIT_GOAL_FAILED: u8 = 1;
/// Exit status when the run was interrupted.
const EXIT_CANCELLED: u8 = 130;

/// Prints the trace as the agent produces it.
#[derive(Debug, Default)]
struct TracePrinter;

impl EventSink for TracePrinter {
    fn emit(&self, event: &AgentEvent) {
        let line = match event {
            AgentEvent::GoalStarted {
                goal, agent, model, ..
            } => format!(
                "goal: {goal:?} (agent: {agent:?}{})",
                model
                    .as_deref()
                    .map(|m| format!(", model {m}"))
                    .unwrap_or_default()
            ),
            AgentEvent::Planned { plan, .. } => format!("plan:\n{}", plan.numbered()),
            AgentEvent::ToolCalled {
                index, tool, args, ..
            } => {
                format!("[{index}] {tool}({})", args_text(args))
            }
            AgentEvent::ToolFinished {
                index,
                output,
                guard,
                verdicts,
                duration_ms,
                state,
                ..
            } => {
                let mut s = format!(
                    "[{index}]   {} {} ({:.0} ms)",
                    if output.success { "ok:" } else { "FAILED:" },
                    output.feedback_msg,
                    duration_ms
                );
                if let Some(g) = guard {
                    s.push_str(&format!("\n[{index}]   refused by the guard: {g:?}"));
                }
                for v in verdicts {
                    s.push_str(&format!(
                        "\n[{index}]   verifier {} {}: {}{}{}",
                        v.stage,
                        if v.passed { "PASS" } else { "FAIL" },
                        v.check,
                        v.score
                            .map(|x| format!(" (score {x:.2})"))
                            .unwrap_or_default(),
                        if v.detail.is_empty() {
                            String::new()
                        } else {
                            format!(" — {}", v.detail)
                        }
                    ));
                }
                s.push_str(&format!(
                    "\n[{index}]   state: held {}, inventory [{}]",
                    state
                        .held_object
                        .as_ref()
                        .map_or("nothing".to_owned(), ToString::to_string),
                    state
                        .inventory
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                s
            }
            AgentEvent::Remap { phase, reason, .. } => format!("remap ({phase:?}): {reason}"),
            AgentEvent::Unconfirmed { reason, .. } => format!("unconfirmed: {reason}"),
            AgentEvent::ModelOutputProblem {
                problem, remedy, ..
            } => {
                format!("model output problem: {problem} ({remedy:?})")
            }
            AgentEvent::ModelReply { .. } | AgentEvent::GoalFinished { .. } => return,
        };
        let mut out = std::io::stdout().lock();
        // a closed stdout (a pipe to `head`) must not stop the robot
        let _ = writeln!(out, "{line}");
    }
}

fn print_end(report: &GoalReport, verified: bool) {
    let mut out = std::io::stdout().lock();
    let status = match &report.status {
        GoalStatus::Completed if verified => "SUCCESS (verified)".to_owned(),
        GoalStatus::Completed if !report.unconfirmed().is_empty() => format!(
            "COMPLETED but not verified: {}",
            report.unconfirmed().join("; ")
        ),
        GoalStatus::Completed => "COMPLETED but not verified by an outcome check".to_owned(),
        GoalStatus::Failed { error } => format!("FAILED ({:?}): {}", error.code, error.message),
        GoalStatus::Cancelled => "CANCELLED".to_owned(),
    };
    let s = &report.final_state;
    let _ = writeln!(
        out,
        "\nresult: {status}\nsummary: {}\nfinal state: held {}, inventory [{}]\n{} tool calls, {:.1} s ({:.1} s in the robot and perception)",
        report.summary,
        s.held_object
            .as_ref()
            .map_or("nothing".to_owned(), ToString::to_string),
        s.inventory
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        report.tool_calls,
        report.duration_ms / 1e3,
        report.backend_ms / 1e3,
    );
    if report.usage.prompt_tokens + report.usage.completion_tokens > 0 {
        let _ = writeln!(
            out,
            "model: {} prompt + {} completion tokens, ${:.4}",
            report.usage.prompt_tokens, report.usage.completion_tokens, report.usage.cost_usd
        );
    }
}

/// Runs the goal; exit 0 only on a verified success.
pub fn run(cfg: &LoadedConfig, opts: &RunOptions) -> ExitCode {
    let mut cfg = cfg.clone();
    if let Some(world) = &opts.world {
        cfg.config.sim_node.world = world.clone();
    }
    if let Some(llm) = opts.llm {
        cfg.config.agent_node.llm.backend = llm;
    }
    let runtime = match asp_runtime::async_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let sim = match asp_simulation::simulation(&cfg, opts.seed) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cannot start the simulator: {e}");
                return ExitCode::FAILURE;
            }
        };
        // the report's start frames come from a twin in the same initial state, so
        // rendering them does not change what the system sees
        let twin = match opts
            .report
            .as_ref()
            .map(|_| asp_simulation::simulation(&cfg, opts.seed))
        {
            Some(Err(e)) => {
                eprintln!("cannot start the simulator: {e}");
                return ExitCode::FAILURE;
            }
            Some(Ok(t)) => Some(t),
            None => None,
        };
        // a map build or a whole skill is one call between nodes
        let transport = Transport::in_process_with(TransportSettings {
            call_timeout: asp_eval::NodeGraph::default().call_timeout,
            ..TransportSettings::default()
        });
        let graph = match start_sim_graph(&cfg, &transport, sim, &NodeOptions::default()).await {
            Ok(g) => g,
            Err(e) => {
                eprintln!("cannot start the system: {e}");
                return ExitCode::FAILURE;
            }
        };
        graph.product.agent.watch(Arc::new(TracePrinter));
        let cancel = CancellationToken::new();
        let on_ctrl_c = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: cancelling the goal (the running motion stops)");
                on_ctrl_c.cancel();
            }
        });
        let report = graph
            .product
            .agent
            .agent
            .run_goal("run_1", &opts.goal, cancel)
            .await;
        let verified = verified_success(&report);
        print_end(&report, verified);
        if let Some(path) = &opts.report {
            let trace = asp_eval::Trace {
                report: report.clone(),
                journal: graph.product.agent.journal.entries(),
            };
            let view = asp_eval::EpisodeView::capture(
                format!("asp run \"{}\"", opts.goal),
                twin.as_ref(),
                &graph.sim.sim,
                graph.product.object_map.service.snapshot().await,
                &trace,
                None,
            )
            .await;
            match asp_eval::write_report(path, &view) {
                Ok(()) => println!("report: {}", path.display()),
                Err(e) => {
                    eprintln!("cannot write the report: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        match report.status {
            GoalStatus::Cancelled => ExitCode::from(EXIT_CANCELLED),
            GoalStatus::Completed if verified => ExitCode::SUCCESS,
            _ => ExitCode::from(EXIT_GOAL_FAILED),
        }
    })
}
