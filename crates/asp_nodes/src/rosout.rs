//! `/rosout`: the node's log lines (those that pass `RUST_LOG`, as on the console) as
//! `rcl_interfaces/Log`, so `ros2 topic echo /rosout` and rqt_console show them. A
//! process that runs several nodes publishes its lines on each.

use std::sync::Arc;

use asp_ros::msg::rcl_interfaces::Log;
use asp_ros::{Node, Qos};
use asp_runtime::LogRecord;
use tokio::sync::mpsc;

use crate::{AbortOnDrop, NodeError};

/// rclcpp's `/rosout` QoS: reliable, transient local, depth 1000.
pub const ROSOUT_QOS: Qos = Qos::latched().with_depth(1000);

/// Lines waiting to be published; beyond this a burst drops lines rather than memory.
const BACKLOG: usize = 1000;

/// Publishes the process's log on `/rosout` while it lives.
#[derive(Debug)]
pub struct Rosout {
    _tap: asp_runtime::LogTapGuard,
    _task: AbortOnDrop,
}

fn level(l: tracing::Level) -> u8 {
    match l {
        tracing::Level::ERROR => Log::ERROR,
        tracing::Level::WARN => Log::WARN,
        tracing::Level::INFO => Log::INFO,
        _ => Log::DEBUG,
    }
}

/// Starts publishing the log lines of this process on `node`'s `/rosout`.
pub fn publish_log(node: &Node) -> Result<Rosout, NodeError> {
    let publisher = node.publisher::<Log>("/rosout", ROSOUT_QOS)?;
    let name = node.name().trim_start_matches('/').replace('/', ".");
    let (tx, mut rx) = mpsc::channel::<LogRecord>(BACKLOG);
    let tap = asp_runtime::add_log_tap(Arc::new(move |record| {
        // never block the logging thread; a full backlog drops the line
        let _ = tx.try_send(record);
    }));
    let task = tokio::spawn(async move {
        while let Some(r) = rx.recv().await {
            // a failed publish is not logged: that line would come back here
            let _ = publisher.publish(Log {
                stamp: publisher.now(),
                level: level(r.level),
                name: name.clone(),
                msg: r.message,
                file: r.file,
                function: r.target,
                line: r.line,
            });
        }
    });
    Ok(Rosout {
        _tap: tap,
        _task: AbortOnDrop(task),
    })
}
