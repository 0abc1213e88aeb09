//! `asp-ros-peer`: a small ROS 2 peer on ASP's DDS transport, for multi-process and
//! interoperability tests and for poking at a running graph by hand. It speaks
//! `std_msgs/String` topics and ASP's ExecuteGoal service and action; every event is one
//! JSON line on stdout. It reads `ROS_DOMAIN_ID` and `RMW_IMPLEMENTATION` like any ROS 2
//! process and exits when its stdin closes (so a test that drops it stops it).
//!
//! ```text
//! asp-ros-peer talk   --topic /chatter --count 5
//! asp-ros-peer listen --topic /chatter --count 5
//! asp-ros-peer serve-goal    --service /asp/execute_goal
//! asp-ros-peer call-goal     --service /asp/execute_goal --goal "tidy up"
//! asp-ros-peer action-server --action /asp/execute --step-ms 200
//! ```
//!
//! The test action server treats a goal as `;`-separated steps, each taking
//! `--step-ms`: feedback per step, cancellation checked continuously, `fail` as a
//! step aborts the goal, an empty goal is rejected.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use asp_core::FailureKind;
use asp_ros::action::{ActionServerOptions, BusyPolicy, GoalContext, GoalHandler, GoalOutcome};
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionFeedback, ExecuteGoalActionGoal,
    ExecuteGoalActionResult, ExecuteGoalRequest, ExecuteGoalResponse, SymbolicState, error_code,
};
use asp_ros::msg::std_msgs;
use asp_ros::{Qos, Transport, TransportSettings};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::json;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A ROS 2 peer on ASP's DDS transport (JSON lines on stdout)"
)]
struct Args {
    /// Seconds to wait for a matching endpoint.
    #[arg(long, default_value_t = 15.0)]
    discovery_timeout: f64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum QosArg {
    Default,
    Latched,
    Sensor,
}

impl QosArg {
    fn qos(self) -> Qos {
        match self {
            Self::Default => Qos::default_reliable(),
            Self::Latched => Qos::latched(),
            Self::Sensor => Qos::sensor(),
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BusyArg {
    Preempt,
    Reject,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Publish `count` std_msgs/String messages once a subscriber matched.
    Talk {
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 5)]
        count: usize,
        #[arg(long, value_enum, default_value = "default")]
        qos: QosArg,
        /// Pause between messages, milliseconds.
        #[arg(long, default_value_t = 50)]
        period_ms: u64,
    },
    /// Print `count` std_msgs/String messages, then exit (exit 1 on timeout).
    Listen {
        #[arg(long)]
        topic: String,
        #[arg(long, default_value_t = 5)]
        count: usize,
        #[arg(long, value_enum, default_value = "default")]
        qos: QosArg,
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
    },
    /// Serve asp_interfaces/srv/ExecuteGoal: succeeds for a non-empty goal.
    ServeGoal {
        #[arg(long)]
        service: String,
    },
    /// Call asp_interfaces/srv/ExecuteGoal once.
    CallGoal {
        #[arg(long)]
        service: String,
        #[arg(long)]
        goal: String,
    },
    /// Serve asp_interfaces/action/ExecuteGoal with `;`-separated timed steps.
    ActionServer {
        #[arg(long)]
        action: String,
        #[arg(long, default_value_t = 200)]
        step_ms: u64,
        #[arg(long, value_enum, default_value = "preempt")]
        busy: BusyArg,
    },
}

/// ros2-client warns on every Fast DDS-mapped request and when ROS_DISTRO is unset.
const QUIET_LOGS: &str =
    "warn,ros2_client::service::wrappers=error,ros2_client::distributions=error";

fn emit(value: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    // a closed stdout only loses the event line
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// Resolves when stdin reaches end of file.
async fn stdin_closed() {
    let _ = tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await;
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| QUIET_LOGS.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut settings =
        TransportSettings::from_config(&asp_config::sections::common::TransportConfig::default())?;
    settings.discovery_timeout = Duration::from_secs_f64(args.discovery_timeout);
    let transport = Transport::dds(settings.clone())?;
    let node = transport.node("asp_ros_peer")?;
    emit(json!({"event": "ready", "domain_id": settings.domain_id,
                "mapping": format!("{:?}", settings.service_mapping)}));
    match args.command {
        Command::Talk {
            topic,
            count,
            qos,
            period_ms,
        } => {
            let publisher = node.publisher::<std_msgs::String>(&topic, qos.qos())?;
            publisher.wait_for_subscribers().await?;
            for i in 0..count {
                publisher.publish(std_msgs::String {
                    data: format!("hello {i}"),
                })?;
                emit(json!({"event": "sent", "i": i}));
                tokio::time::sleep(Duration::from_millis(period_ms)).await;
            }
            // let reliable delivery finish, or wait for the test to let go
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                _ = stdin_closed() => {}
            }
        }
        Command::Listen {
            topic,
            count,
            qos,
            timeout,
        } => {
            let mut sub = node.subscribe::<std_msgs::String>(&topic, qos.qos())?;
            let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(timeout);
            let mut got = 0;
            while got < count {
                match tokio::time::timeout_at(deadline, sub.recv()).await {
                    Ok(Some(m)) => {
                        emit(json!({"event": "received", "data": m.data}));
                        got += 1;
                    }
                    Ok(None) => bail!("subscription to {topic} closed"),
                    Err(_) => bail!("received {got} of {count} messages on {topic} in {timeout} s"),
                }
            }
        }
        Command::ServeGoal { service } => {
            let _server =
                node.serve::<ExecuteGoal, _, _>(&service, |req: ExecuteGoalRequest| async move {
                    emit(json!({"event": "request", "goal": req.goal}));
                    if req.goal.trim().is_empty() {
                        ExecuteGoalResponse {
                            success: false,
                            error_code: error_code(FailureKind::InvalidArgument),
                            error_msg: "the goal is empty".into(),
                            summary: String::new(),
                        }
                    } else {
                        ExecuteGoalResponse {
                            success: true,
                            error_code: 0,
                            error_msg: String::new(),
                            summary: format!("done: {}", req.goal),
                        }
                    }
                })?;
            emit(json!({"event": "serving", "service": service}));
            stdin_closed().await;
        }
        Command::CallGoal { service, goal } => {
            let client = node.client::<ExecuteGoal>(&service)?;
            let r = client
                .call(ExecuteGoalRequest { goal })
                .await
                .with_context(|| format!("calling {service}"))?;
            emit(
                json!({"event": "response", "success": r.success, "error_code": r.error_code,
                         "error_msg": r.error_msg, "summary": r.summary}),
            );
        }
        Command::ActionServer {
            action,
            step_ms,
            busy,
        } => {
            let options = ActionServerOptions::default().with_busy(match busy {
                BusyArg::Preempt => BusyPolicy::Preempt,
                BusyArg::Reject => BusyPolicy::Reject,
            });
            let handler = StepServer {
                step: Duration::from_millis(step_ms),
            };
            let _server = node.action_server::<ExecuteGoalAction, _>(&action, options, handler)?;
            emit(json!({"event": "serving", "action": action}));
            stdin_closed().await;
        }
    }
    Ok(())
}

/// Rejects empty goals, runs the rest as timed steps.
struct StepServer {
    step: Duration,
}

#[async_trait::async_trait]
impl GoalHandler<ExecuteGoalAction> for StepServer {
    fn validate(&self, goal: &ExecuteGoalActionGoal) -> Result<(), String> {
        if goal.goal.trim().is_empty() {
            emit(json!({"event": "rejected"}));
            Err("the goal is empty".into())
        } else {
            Ok(())
        }
    }

    async fn execute(
        &self,
        goal: ExecuteGoalActionGoal,
        ctx: GoalContext<ExecuteGoalAction>,
    ) -> GoalOutcome<ExecuteGoalActionResult> {
        run_steps(goal, ctx, self.step).await
    }
}

async fn run_steps(
    goal: ExecuteGoalActionGoal,
    ctx: GoalContext<ExecuteGoalAction>,
    step: Duration,
) -> GoalOutcome<ExecuteGoalActionResult> {
    let id = ctx.goal_id().to_string();
    let steps: Vec<String> = goal
        .goal
        .split(';')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    emit(json!({"event": "started", "goal": id, "steps": steps.len()}));
    let mut state = SymbolicState::default();
    for (i, s) in steps.iter().enumerate() {
        emit(json!({"event": "step", "goal": id, "step": i + 1, "text": s}));
        tokio::select! {
            _ = ctx.cancelled() => {
                emit(json!({"event": "stopped", "goal": id, "at_step": i + 1,
                            "reason": format!("{:?}", ctx.stop_reason())}));
                return ctx.stopped_outcome();
            }
            _ = tokio::time::sleep(step) => {}
        }
        if s == "fail" {
            emit(json!({"event": "failed", "goal": id, "at_step": i + 1}));
            return GoalOutcome::Aborted(ExecuteGoalActionResult {
                success: false,
                error_code: error_code(FailureKind::Execution),
                error_msg: format!("step {} failed", i + 1),
                summary: String::new(),
            });
        }
        state.inventory.push(format!("object_{i}"));
        let _ = ctx.publish_feedback(ExecuteGoalActionFeedback {
            step: (i + 1) as u32,
            tool_call: s.clone(),
            success: true,
            outcome: format!("{s}: done"),
            state: state.clone(),
        });
    }
    emit(json!({"event": "finished", "goal": id}));
    GoalOutcome::Succeeded(ExecuteGoalActionResult {
        success: true,
        error_code: 0,
        error_msg: String::new(),
        summary: format!("{} steps done", steps.len()),
    })
}
