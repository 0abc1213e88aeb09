//! What every node binary's `main` does: tracing, arguments, configuration, the async
//! runtime and the transport, then the node until SIGINT or SIGTERM.

use std::future::Future;
use std::process::ExitCode;

use asp_config::LoadedConfig;
use asp_ros::Transport;
use tracing::{error, info};

use crate::args::NodeArgs;

/// Exit status for bad arguments (sysexits' EX_USAGE).
pub const EXIT_USAGE: u8 = 64;
/// Exit status for bad configuration (sysexits' EX_CONFIG).
pub const EXIT_CONFIG: u8 = 78;

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
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
    runtime.block_on(async move {
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
        let running = match start(cfg, transport, args).await {
            Ok(h) => h,
            Err(e) => {
                error!("{name} could not start: {e}");
                return ExitCode::FAILURE;
            }
        };
        shutdown_signal().await;
        info!(node = name, "shutting down");
        drop(running);
        ExitCode::SUCCESS
    })
}
