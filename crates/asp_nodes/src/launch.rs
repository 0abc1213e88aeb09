//! Starts the node binaries as separate processes (what `asp launch` does): every node
//! gets the same configuration arguments, its output lines come back prefixed with its
//! name. A node that exits is started again after a delay, up to a number of times
//! ([`Respawn`], `common.supervision`); the others keep running and find it again on
//! the graph (its state from the latched topics, memory from the database). One
//! shutdown (Ctrl-C, or a node that exits once too often, or any exit without respawn)
//! stops them all: SIGINT first, SIGKILL for those still running after a grace period.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tracing::{info, warn};

use crate::NodeError;

/// glibc's malloc settings every node gets unless the environment sets them already.
/// The nodes' own allocations go to jemalloc ([`crate::process`]); glibc's heap serves
/// the C and C++ libraries (ONNX Runtime's tensors, image-sized). The mmap threshold:
/// glibc raises it each time a large block is freed, after which image-sized buffers
/// come from the heap and fragment it (before jemalloc, skill_executor_node grew 5.6
/// MiB per 100 goals of the soak with it raised, 0.4 with it held at glibc's initial
/// 128 KiB). The arena count: each thread that allocates may get an arena of its own
/// (up to 8 per core), and the resident size then wanders by MiB with which thread ran
/// last; two arenas bound that.
pub const MALLOC_ENV: [(&str, &str); 2] = [
    ("MALLOC_MMAP_THRESHOLD_", "131072"),
    ("MALLOC_ARENA_MAX", "2"),
];

/// The product nodes, in start order.
pub const PRODUCT_NODES: [&str; 6] = [
    "verifier_node",
    "object_map_node",
    "affordance_node",
    "skill_executor_node",
    "go_to_node",
    "agent_node",
];

/// What to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchTarget {
    /// The sim node and every product node.
    Sim,
    /// The product nodes only, against a real robot's MoveIt 2, Nav2, cameras and gripper
    /// controller.
    Robot,
}

impl LaunchTarget {
    /// The binaries, in start order.
    pub fn nodes(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self == LaunchTarget::Sim {
            out.push("sim_node");
        }
        out.extend(PRODUCT_NODES);
        out
    }

    /// Overrides the target implies, before the user's: simulated time, the simulated
    /// robot's mobile base (the agent may drive it: searches and `go_to`), cameras that
    /// stream as a robot's do, and the sim's VLM and web search stand-ins on known ports
    /// the product nodes are pointed at; a robot has no render service (its cameras stream).
    pub fn implied_overrides(self) -> Vec<String> {
        match self {
            LaunchTarget::Sim => vec![
                // the nodes stamp with the simulator's /clock
                "/**.use_sim_time=true".into(),
                SIMULATED_BASE.into(),
                // what RViz and `ros2 topic hz` see on a robot; `asp run` and the tests
                // render on request instead (deterministic frames)
                format!("sim_node.camera.rate_hz={SIM_CAMERA_RATE_HZ}"),
                "/**.cameras.sim_render=false".into(),
                format!("sim_node.vlm_standin.bind=127.0.0.1:{SIM_VLM_PORT}"),
                format!("agent_node.vlm.base_url=http://127.0.0.1:{SIM_VLM_PORT}/v1"),
                "agent_node.vlm.api_key_env=\"\"".into(),
                format!("sim_node.web_standin.bind=127.0.0.1:{SIM_WEB_PORT}"),
                format!(
                    "object_map_node.concepts.web_search.base_url=http://127.0.0.1:{SIM_WEB_PORT}"
                ),
            ],
            LaunchTarget::Robot => vec!["/**.cameras.sim_render=false".into()],
        }
    }
}

/// The override a simulated robot implies: it stands on a base the agent may drive
/// (searches and `go_to`). `asp launch sim` and `asp run` set it before the user's.
pub const SIMULATED_BASE: &str = "agent_node.mobile=true";

/// How often `asp launch sim`'s simulated cameras publish, Hz.
pub const SIM_CAMERA_RATE_HZ: f64 = 5.0;

/// The port `asp launch sim` serves the simulation's VLM on.
pub const SIM_VLM_PORT: u16 = 8790;

/// The port `asp launch sim` serves the simulation's web search on.
pub const SIM_WEB_PORT: u16 = 8791;

/// Receives every output line of every node: `(node, line)`.
pub type LineSink = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// What the launcher does when a node exits on its own.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Respawn {
    /// Before starting it again.
    pub delay: Duration,
    /// Restarts of one node per launch; one more exit ends the launch. 0: never.
    pub max: u32,
}

impl Respawn {
    /// No restarts: the first node that exits stops them all.
    pub const NEVER: Respawn = Respawn {
        delay: Duration::ZERO,
        max: 0,
    };

    /// `common.supervision`'s policy.
    pub fn from_config(s: &asp_config::sections::common::SupervisionConfig) -> Self {
        if s.respawn {
            Respawn {
                delay: Duration::from_secs_f64(s.respawn_delay_s),
                max: s.max_respawns,
            }
        } else {
            Respawn::NEVER
        }
    }
}

/// How a launch ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchReport {
    /// The node whose exit ended the launch (it exited once more than it may be
    /// restarted), and its exit code (`None`: killed by a signal).
    pub first_exit: Option<(String, Option<i32>)>,
    /// Each node's exit code after the shutdown (`None`: killed by a signal).
    pub exits: Vec<(String, Option<i32>)>,
    /// Every restart: the node, and the exit code of the run that ended.
    pub respawns: Vec<(String, Option<i32>)>,
}

impl LaunchReport {
    /// Whether every node stopped cleanly after a requested shutdown.
    pub fn clean(&self) -> bool {
        self.first_exit.is_none() && self.exits.iter().all(|(_, c)| *c == Some(0))
    }
}

/// Launches node binaries from one folder.
#[derive(Clone)]
pub struct Launcher {
    bin_dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    grace: Duration,
    respawn: Respawn,
    sink: LineSink,
    /// The running nodes' process ids (shared by clones).
    pids: Arc<Mutex<BTreeMap<String, u32>>>,
}

impl std::fmt::Debug for Launcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launcher")
            .field("bin_dir", &self.bin_dir)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

/// Sends SIGINT to a process (as Ctrl-C in its terminal would).
async fn interrupt(pid: u32) {
    let sent = Command::new("kill")
        .arg("-INT")
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if let Err(e) = sent {
        warn!(pid, "cannot send SIGINT: {e}");
    }
}

impl Launcher {
    /// Binaries from `bin_dir`; every node gets `args` (e.g. `--config-dir`, `--set`);
    /// output lines go to `sink`.
    pub fn new(bin_dir: impl Into<PathBuf>, args: Vec<String>, sink: LineSink) -> Self {
        Self {
            bin_dir: bin_dir.into(),
            args,
            env: Vec::new(),
            grace: Duration::from_secs(10),
            respawn: Respawn::NEVER,
            sink,
            pids: Arc::default(),
        }
    }

    /// What to do when a node exits on its own (default: stop them all).
    pub fn respawn(mut self, respawn: Respawn) -> Self {
        self.respawn = respawn;
        self
    }

    /// The process id of node `name` while it runs.
    pub fn pid(&self, name: &str) -> Option<u32> {
        self.pids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .copied()
    }

    fn set_pid(&self, name: &str, pid: Option<u32>) {
        let mut pids = self
            .pids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match pid {
            Some(p) => pids.insert(name.to_owned(), p),
            None => pids.remove(name),
        };
    }

    /// Sets an environment variable of every node (e.g. `ROS_DOMAIN_ID`).
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// How long nodes get to stop after SIGINT before they are killed.
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The node binaries of `target` missing from the folder.
    pub fn missing(&self, target: LaunchTarget) -> Vec<PathBuf> {
        target
            .nodes()
            .into_iter()
            .map(|n| self.bin_dir.join(n))
            .filter(|p| !p.is_file())
            .collect()
    }

    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    fn spawn(&self, name: &str, extra: &[String]) -> Result<Child, NodeError> {
        let mut cmd = Command::new(self.bin_dir.join(name));
        cmd.args(&self.args)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in MALLOC_ENV {
            if std::env::var_os(k).is_none() {
                cmd.env(k, v);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(|e| NodeError::Io {
            what: format!("starting {}", self.bin_dir.join(name).display()),
            source: e,
        })?;
        let sink = self.sink.clone();
        for out in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ]
        .into_iter()
        .flatten()
        {
            let (sink, name) = (sink.clone(), name.to_owned());
            tokio::spawn(async move {
                let mut lines = BufReader::new(out).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    sink(&name, &line);
                }
            });
        }
        Ok(child)
    }

    /// Starts `target`'s nodes (`extra[i]` are further arguments of the node of that
    /// name), runs until `shutdown` resolves or a node exits, then stops them all.
    pub async fn run(
        &self,
        target: LaunchTarget,
        extra: &[(&str, Vec<String>)],
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<LaunchReport, NodeError> {
        let missing = self.missing(target);
        if !missing.is_empty() {
            return Err(NodeError::Launch(format!(
                "node binaries not found: {} (build them with `cargo build -p asp_nodes -p asp_simulation`, or set ASP_NODE_BIN_DIR)",
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let more = |name: &str| -> Vec<String> {
            extra
                .iter()
                .filter(|(n, _)| *n == name)
                .flat_map(|(_, a)| a.clone())
                .collect()
        };
        let mut children: Vec<(String, Child)> = Vec::new();
        for name in target.nodes() {
            match self.spawn(name, &more(name)) {
                Ok(c) => {
                    info!(node = name, pid = c.id(), "started");
                    self.set_pid(name, c.id());
                    children.push((name.to_owned(), c));
                }
                Err(e) => {
                    self.stop(&mut children).await;
                    return Err(e);
                }
            }
        }
        tokio::pin!(shutdown);
        let mut respawns: Vec<(String, Option<i32>)> = Vec::new();
        // until the shutdown, or a node that exits once too often
        let first_exit = loop {
            let exited = async {
                loop {
                    for (i, (name, c)) in children.iter_mut().enumerate() {
                        if let Ok(Some(status)) = c.try_wait() {
                            return (i, name.clone(), status.code());
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let (i, name, code) = tokio::select! {
                () = &mut shutdown => break None,
                e = exited => e,
            };
            self.set_pid(&name, None);
            let restarts = respawns.iter().filter(|(n, _)| *n == name).count();
            if restarts >= self.respawn.max as usize {
                if self.respawn.max > 0 {
                    warn!(node = %name, code = ?code, "exited again after {restarts} restarts; stopping the others");
                }
                break Some((name, code));
            }
            warn!(
                node = %name,
                code = ?code,
                "exited; starting it again in {:.1} s (restart {} of {})",
                self.respawn.delay.as_secs_f64(),
                restarts + 1,
                self.respawn.max
            );
            tokio::select! {
                () = &mut shutdown => break None,
                () = tokio::time::sleep(self.respawn.delay) => {}
            }
            match self.spawn(&name, &more(&name)) {
                Ok(c) => {
                    info!(node = %name, pid = c.id(), "started again");
                    self.set_pid(&name, c.id());
                    children[i].1 = c;
                    respawns.push((name, code));
                }
                Err(e) => {
                    warn!(node = %name, "cannot start it again: {e}");
                    break Some((name, code));
                }
            }
        };
        if let Some((name, code)) = &first_exit {
            warn!(node = %name, code = ?code, "a node exited; stopping the others");
        }
        let exits = self.stop(&mut children).await;
        for (name, _) in &children {
            self.set_pid(name, None);
        }
        Ok(LaunchReport {
            first_exit,
            exits,
            respawns,
        })
    }

    /// SIGINT to every running node (in reverse start order), SIGKILL after the grace.
    async fn stop(&self, children: &mut [(String, Child)]) -> Vec<(String, Option<i32>)> {
        for (_, c) in children.iter_mut().rev() {
            if let (Ok(None), Some(pid)) = (c.try_wait(), c.id()) {
                interrupt(pid).await;
            }
        }
        let mut out = Vec::new();
        for (name, c) in children.iter_mut() {
            let status: Option<ExitStatus> = match tokio::time::timeout(self.grace, c.wait()).await
            {
                Ok(Ok(s)) => Some(s),
                Ok(Err(e)) => {
                    warn!(node = %name, "waiting for the node: {e}");
                    None
                }
                Err(_) => {
                    warn!(node = %name, "did not stop within the grace period; killing it");
                    let _ = c.kill().await;
                    None
                }
            };
            out.push((name.clone(), status.and_then(|s| s.code())));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_list_their_nodes_sim_first() {
        assert_eq!(LaunchTarget::Sim.nodes()[0], "sim_node");
        assert_eq!(LaunchTarget::Sim.nodes().len(), 7);
        assert!(
            LaunchTarget::Sim
                .implied_overrides()
                .contains(&SIMULATED_BASE.to_owned())
        );
        assert!(!LaunchTarget::Robot.nodes().contains(&"sim_node"));
        assert!(
            LaunchTarget::Robot
                .implied_overrides()
                .iter()
                .any(|o| o.contains("sim_render=false"))
        );
        let l = Launcher::new("/nonexistent", vec![], Arc::new(|_: &str, _: &str| {}));
        assert_eq!(l.missing(LaunchTarget::Robot).len(), 6);
    }

    /// `asp launch sim` publishes camera streams as a robot does, and the nodes read
    /// them rather than asking the simulator for frames.
    #[test]
    fn the_simulated_robot_streams_its_cameras() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
        let mut loader = asp_config::ConfigLoader::new().dir(&dir).unwrap();
        for o in LaunchTarget::Sim.implied_overrides() {
            loader = loader.set(&o).unwrap();
        }
        let cfg = loader.load().unwrap().config;
        assert_eq!(cfg.sim_node.camera.rate_hz, SIM_CAMERA_RATE_HZ);
        assert!(!cfg.common.cameras.sim_render);
        assert!(cfg.agent_node.mobile);
        // the files alone render on request (`asp run`, the tests)
        let files = asp_config::AspConfig::load_dir(&dir).unwrap().config;
        assert!(files.common.cameras.sim_render);
        assert_eq!(files.sim_node.camera.rate_hz, 0.0);
    }
}
