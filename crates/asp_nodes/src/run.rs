//! What every node binary's `main` does: tracing, arguments, configuration, the async
//! runtime and the transport, then the node until SIGINT or SIGTERM.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use asp_config::LoadedConfig;
use asp_ros::Transport;
use tracing::{error, info};

use crate::args::NodeArgs;

/// Exit status for bad arguments (sysexits' EX_USAGE).
pub const EXIT_USAGE: u8 = 64;
/// Exit status for bad configuration (sysexits' EX_CONFIG).
pub const EXIT_CONFIG: u8 = 78;
/// Exit status of a node that did not start serving within
/// `common.supervision.start_timeout_s` (sysexits' EX_TEMPFAIL: try again).
pub const EXIT_START_TIMEOUT: u8 = 75;

/// Ends the process with [`EXIT_START_TIMEOUT`] unless `started` is set within
/// `timeout`. An OS thread, not a task: what hangs a start may block the runtime.
fn start_watchdog(name: &str, timeout: std::time::Duration, started: Arc<AtomicBool>) {
    let owned = name.to_owned();
    let spawned = std::thread::Builder::new()
        .name("start-watchdog".into())
        .spawn(move || {
            std::thread::sleep(timeout);
            if !started.load(Ordering::SeqCst) {
                let name = owned;
                error!(
                    "{name} did not start serving within {:.0} s \
                     (common.supervision.start_timeout_s): exiting so that it is started again",
                    timeout.as_secs_f64()
                );
                std::process::exit(i32::from(EXIT_START_TIMEOUT));
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("{name}: no start watchdog: {e}");
    }
}

/// How often a node hands the heap pages malloc holds free back to the system.
const HEAP_TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Hands glibc's free heap pages back to the system every [`HEAP_TRIM_EVERY`]
/// (`malloc_trim`). glibc returns a freed block's pages only from the top of an arena;
/// pages freed below a block still in use stay resident, so the C and C++ libraries'
/// buffers (the nodes' own allocations are jemalloc's, which returns its pages itself)
/// would creep the resident size up with nothing leaked. A trim walks the free lists
/// under the allocator's locks, so it runs on a thread of its own and not per request.
fn start_heap_trimmer(name: &str) {
    let spawned = std::thread::Builder::new()
        .name("heap-trim".into())
        .spawn(|| {
            loop {
                std::thread::sleep(HEAP_TRIM_EVERY);
                crate::process::trim_heap();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("{name}: no heap trimming: {e}");
    }
}

/// SIGINT and SIGTERM, caught from the moment this is made. A node makes it before it
/// starts: a step of its start that blocks its thread for a while (loading models on a
/// busy machine) would otherwise leave the signal to its default action, and a node
/// asked to stop while starting died by the signal instead of exiting cleanly.
#[derive(Debug)]
pub struct ShutdownSignals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignals {
    /// Starts catching both signals (within a Tokio runtime).
    pub fn catch() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// Resolves on the next SIGINT or SIGTERM.
    pub async fn recv(&mut self) {
        #[cfg(unix)]
        {
            async fn next(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            if self.interrupt.is_none() && self.terminate.is_none() {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
            tokio::select! {
                () = next(&mut self.interrupt) => {}
                () = next(&mut self.terminate) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    ShutdownSignals::catch().recv().await;
}

/// Runs node `name`: `start` builds it from the configuration, the transport and the
/// arguments; the returned value is kept (serving) until a shutdown signal, then dropped.
pub fn node_main<F, Fut, H, E>(name: &str, start: F) -> ExitCode
where
    F: FnOnce(LoadedConfig, Transport, NodeArgs) -> Fut,
    Fut: Future<Output = Result<H, E>>,
    E: std::fmt::Display,
{
    asp_runtime::init_tracing();
    let args = match NodeArgs::parse(name, std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{name}: {e}\n{}", NodeArgs::usage(name));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.help {
        eprintln!("{}", NodeArgs::usage(name));
        return ExitCode::SUCCESS;
    }
    for i in &args.ignored {
        tracing::warn!("{name}: ignoring the ROS argument {i:?}");
    }
    let cfg = match args.load() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: configuration error:\n{e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let runtime = match asp_runtime::async_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    start_heap_trimmer(name);
    let started = Arc::new(AtomicBool::new(false));
    start_watchdog(
        name,
        std::time::Duration::from_secs_f64(cfg.config.common.supervision.start_timeout_s),
        started.clone(),
    );
    runtime.block_on(async move {
        let mut signals = ShutdownSignals::catch();
        let transport = match Transport::from_config(&cfg.config.common.transport) {
            Ok(t) => t,
            Err(e) => {
                error!("{name}: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        info!(
            node = name,
            domain = transport.settings().domain_id,
            mapping = ?transport.settings().service_mapping,
            "starting"
        );
        let running = tokio::select! {
            r = start(cfg, transport, args) => match r {
                Ok(h) => h,
                Err(e) => {
                    error!("{name} could not start: {e}");
                    return ExitCode::FAILURE;
                }
            },
            () = signals.recv() => {
                info!(node = name, "stopped while starting");
                return ExitCode::SUCCESS;
            }
        };
        started.store(true, Ordering::SeqCst);
        signals.recv().await;
        info!(node = name, "shutting down");
        drop(running);
        ExitCode::SUCCESS
    })
}
