//! The node's own process: its memory as the kernel and the allocator see it, handing
//! free heap pages back, and reporting both on `/diagnostics`.
//!
//! Resident memory alone cannot tell a leak from an allocator that holds freed pages
//! (glibc keeps them until a trim, and pages under a live block it cannot give back at
//! all), so each report carries both: what the process holds (`rss`) and what its heap
//! has handed out and not had back (`heap_in_use`). A leak raises the second; the gap
//! between them is the allocator's.

use std::time::Duration;

use asp_ros::msg::diagnostic_msgs::{DiagnosticArray, DiagnosticStatus, KeyValue};
use asp_ros::msg::std_msgs::Header;
use asp_ros::{Node, Qos, RosError};
use tracing::warn;

use crate::AbortOnDrop;

/// The topic ROS 2's diagnostic tools read.
pub const DIAGNOSTICS_TOPIC: &str = "/diagnostics";

/// The part of a node a process report is about: the status is named
/// `<node>: process`.
pub const PROCESS_STATUS: &str = "process";

/// Keys of a process report's values, in MiB except `threads`.
pub mod keys {
    pub const RSS_MIB: &str = "rss_mib";
    pub const HEAP_IN_USE_MIB: &str = "heap_in_use_mib";
    pub const HEAP_FREE_MIB: &str = "heap_free_mib";
    pub const THREADS: &str = "threads";
}

/// One reading of the process's memory, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessMemory {
    /// Resident set (`VmRSS`).
    pub rss: u64,
    /// Handed out by malloc and not freed, in its arenas and mapped blocks alike.
    pub heap_in_use: u64,
    /// Free inside malloc's arenas: held, not handed out (what a trim can return).
    pub heap_free: u64,
    /// Threads of the process.
    pub threads: u32,
}

const MIB: f64 = 1024.0 * 1024.0;

impl ProcessMemory {
    /// Reads this process (zeros for what the platform does not report).
    pub fn read() -> Self {
        let (rss, threads) = proc_status();
        let (heap_in_use, heap_free) = heap();
        Self {
            rss,
            heap_in_use,
            heap_free,
            threads,
        }
    }

    /// The reading as the values of a `DiagnosticStatus`.
    pub fn values(&self) -> Vec<KeyValue> {
        let mib = |b: u64| format!("{:.2}", b as f64 / MIB);
        [
            (keys::RSS_MIB, mib(self.rss)),
            (keys::HEAP_IN_USE_MIB, mib(self.heap_in_use)),
            (keys::HEAP_FREE_MIB, mib(self.heap_free)),
            (keys::THREADS, self.threads.to_string()),
        ]
        .into_iter()
        .map(|(key, value)| KeyValue {
            key: key.into(),
            value,
        })
        .collect()
    }

    /// The reading as one status of node `node`.
    pub fn status(&self, node: &str) -> DiagnosticStatus {
        DiagnosticStatus {
            level: DiagnosticStatus::OK,
            name: format!("{node}: {PROCESS_STATUS}"),
            message: format!(
                "{:.1} MiB resident, heap {:.1} MiB in use and {:.1} MiB free, {} threads",
                self.rss as f64 / MIB,
                self.heap_in_use as f64 / MIB,
                self.heap_free as f64 / MIB,
                self.threads
            ),
            hardware_id: String::new(),
            values: self.values(),
        }
    }
}

/// A value of a process report, MiB (or a count), if `status` is one and has it.
pub fn reported(status: &DiagnosticStatus, key: &str) -> Option<f64> {
    status
        .values
        .iter()
        .find(|v| v.key == key)
        .and_then(|v| v.value.parse().ok())
}

/// The node a process report is about, if `status` is one.
pub fn reporting_node(status: &DiagnosticStatus) -> Option<&str> {
    status
        .name
        .strip_suffix(PROCESS_STATUS)
        .and_then(|s| s.strip_suffix(": "))
}

/// `VmRSS` (bytes) and `Threads` of `/proc/self/status`.
fn proc_status() -> (u64, u32) {
    let Ok(text) = std::fs::read_to_string("/proc/self/status") else {
        return (0, 0);
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    (
        field("VmRSS:").unwrap_or(0) * 1024,
        field("Threads:").map_or(0, |t| u32::try_from(t).unwrap_or(u32::MAX)),
    )
}

/// (in use, free) bytes of glibc's heap, over all its arenas.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // FFI into the allocator
fn heap() -> (u64, u64) {
    // SAFETY: mallinfo2 only reads the allocator's bookkeeping, under its locks.
    let m = unsafe { libc::mallinfo2() };
    ((m.uordblks + m.hblkhd) as u64, m.fordblks as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap() -> (u64, u64) {
    (0, 0)
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`; nothing
/// elsewhere).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // FFI into the allocator
pub fn trim_heap() {
    // SAFETY: malloc_trim takes the allocator's own locks; it frees no block in use and
    // leaves every pointer valid.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`; nothing
/// elsewhere).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn trim_heap() {}

/// Publishes the process's memory on [`DIAGNOSTICS_TOPIC`] every `period` while kept.
pub fn publish_process_diagnostics(
    node: &Node,
    period: Duration,
) -> Result<Option<AbortOnDrop>, RosError> {
    if period.is_zero() {
        return Ok(None);
    }
    let publisher =
        node.publisher::<DiagnosticArray>(DIAGNOSTICS_TOPIC, Qos::default_reliable())?;
    // named as diagnostic_updater names them: the node's name without the leading slash
    let name = node.name().trim_start_matches('/').to_owned();
    let clock = node.clock();
    Ok(Some(AbortOnDrop(tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // mallinfo2 walks the free lists: off the async workers
            let Ok(memory) = tokio::task::spawn_blocking(ProcessMemory::read).await else {
                continue;
            };
            let report = DiagnosticArray {
                header: Header::new(clock.now(), ""),
                status: vec![memory.status(&name)],
            };
            if let Err(e) = publisher.publish(report) {
                warn!(node = %name, "diagnostics: {e}");
            }
        }
    }))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_sees_memory_this_process_holds() {
        let before = ProcessMemory::read();
        assert!(before.rss > 0 && before.threads >= 1, "{before:?}");
        // 256 MiB, touched so that it is resident; the bounds leave 64 MiB for what the
        // other tests of this binary allocate and free meanwhile
        let block = vec![1u8; 256 << 20];
        let during = ProcessMemory::read();
        assert!(
            during.heap_in_use >= before.heap_in_use + (192 << 20),
            "{before:?} -> {during:?}"
        );
        assert!(
            during.rss >= before.rss + (192 << 20),
            "{before:?} -> {during:?}"
        );
        drop(std::hint::black_box(block));
        let after = ProcessMemory::read();
        assert!(
            after.heap_in_use + (192 << 20) <= during.heap_in_use,
            "{during:?} -> {after:?}"
        );
    }

    #[test]
    fn a_report_names_its_node_and_carries_its_values() {
        let m = ProcessMemory {
            rss: 300 << 20,
            heap_in_use: 120 << 20,
            heap_free: 3 << 19,
            threads: 17,
        };
        let s = m.status("object_map_node");
        assert_eq!(reporting_node(&s), Some("object_map_node"));
        assert_eq!(reported(&s, keys::RSS_MIB), Some(300.0));
        assert_eq!(reported(&s, keys::HEAP_IN_USE_MIB), Some(120.0));
        assert_eq!(reported(&s, keys::HEAP_FREE_MIB), Some(1.5));
        assert_eq!(reported(&s, keys::THREADS), Some(17.0));
        assert_eq!(reported(&s, "nothing"), None);
        let other = DiagnosticStatus {
            name: "battery".into(),
            ..s
        };
        assert_eq!(reporting_node(&other), None);
    }
}
