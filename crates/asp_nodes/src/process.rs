//! The node's own process: its allocator, its memory as the kernel and the allocator see
//! it, handing free heap pages back, and reporting both on `/diagnostics`.
//!
//! Resident memory alone cannot tell a leak from an allocator that holds freed pages, so
//! each report carries both: what the process holds (`rss`) and what its heaps have
//! handed out and not had back (`heap_in_use`). A leak raises the second; the gap
//! between them is the allocators'.
//!
//! ## The allocator: jemalloc
//!
//! Every program linking this crate (the node binaries, `asp`, the tests) allocates
//! through jemalloc (`tikv-jemallocator`; the default feature `jemalloc`: without it,
//! through the system's malloc, which tools such as heaptrack hook). A node streams camera frames all day: tens
//! of MB a second of DDS fragments, reassembly buffers and images, freed within
//! milliseconds, between the long-lived objects of its map and caches. glibc's malloc
//! gives back only the pages at an arena's top, so those short-lived blocks left holes
//! that grew the resident size with nothing leaked: under the soak's load
//! object_map_node's resident memory rose 1.2–2.5 MiB per 100 goals while its heap in
//! use stayed flat, even with a `malloc_trim` every 5 s, two arenas and a fixed mmap
//! threshold. jemalloc keeps blocks of one size class together in slabs and a
//! background thread returns pages unused for a while ([`ALLOCATOR_OPTIONS`]). C and C++
//! libraries (ONNX Runtime) still allocate through glibc: both heaps are read and
//! trimmed.

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

#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: its background thread returns unused pages
/// even while the node is idle (without it only allocation activity does), after 1 s
/// (`dirty_decay_ms`; jemalloc's default is 10 s): long enough that a burst of frames
/// reuses the pages of the last, short enough that a reading taken between goals sees
/// what the node holds.
pub const ALLOCATOR_OPTIONS: &std::ffi::CStr = c"background_thread:true,dirty_decay_ms:1000";

#[cfg(all(feature = "jemalloc", target_os = "linux"))]
#[allow(unsafe_code, non_upper_case_globals)]
// SAFETY: jemalloc reads this symbol (`malloc_conf`, prefixed as tikv-jemalloc-sys builds
// it) as a C string; it points at a static NUL-terminated string.
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static malloc_conf: Option<&'static std::ffi::c_char> =
    Some(unsafe { &*ALLOCATOR_OPTIONS.as_ptr() });

/// One reading of the process's memory, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessMemory {
    /// Resident set (`VmRSS`).
    pub rss: u64,
    /// Handed out by the allocators (jemalloc's and glibc's) and not freed.
    pub heap_in_use: u64,
    /// Resident in the allocators but not handed out: free blocks, pages waiting to be
    /// returned, and the allocators' own bookkeeping.
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
    status_of("self")
}

/// Resident bytes (`VmRSS`) of process `pid`, or `None` when it cannot be read (the
/// process is gone).
pub fn resident_of(pid: u32) -> Option<u64> {
    let (rss, threads) = status_of(&pid.to_string());
    (threads > 0).then_some(rss)
}

/// `VmRSS` (bytes) and `Threads` of `/proc/<process>/status`; zeros when unreadable.
fn status_of(process: &str) -> (u64, u32) {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{process}/status")) else {
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

/// (in use, free) bytes of the process's heaps: jemalloc's and glibc's.
fn heap() -> (u64, u64) {
    let (je_used, je_free) = jemalloc_heap();
    let (glibc_used, glibc_free) = glibc_heap();
    (je_used + glibc_used, je_free + glibc_free)
}

/// (allocated, resident but not allocated) bytes of jemalloc's heap.
#[cfg(feature = "jemalloc")]
fn jemalloc_heap() -> (u64, u64) {
    use tikv_jemalloc_ctl::{epoch, stats};
    // the statistics are a snapshot taken when the epoch advances
    if epoch::advance().is_err() {
        return (0, 0);
    }
    let allocated = stats::allocated::read().unwrap_or(0) as u64;
    let resident = stats::resident::read().unwrap_or(0) as u64;
    (allocated, resident.saturating_sub(allocated))
}

#[cfg(not(feature = "jemalloc"))]
fn jemalloc_heap() -> (u64, u64) {
    (0, 0)
}

/// (in use, free) bytes of glibc's heap, over all its arenas: what C and C++ libraries
/// allocate.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // FFI into the allocator
fn glibc_heap() -> (u64, u64) {
    // SAFETY: mallinfo2 only reads the allocator's bookkeeping, under its locks.
    let m = unsafe { libc::mallinfo2() };
    ((m.uordblks + m.hblkhd) as u64, m.fordblks as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_heap() -> (u64, u64) {
    (0, 0)
}

/// Hands glibc's free heap pages back to the system (`malloc_trim`; jemalloc returns its
/// own on its decay schedule, [`ALLOCATOR_OPTIONS`]).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // FFI into the allocator
pub fn trim_heap() {
    // SAFETY: malloc_trim takes the allocator's own locks; it frees no block in use and
    // leaves every pointer valid.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Hands glibc's free heap pages back to the system (nothing off glibc).
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

    /// Held by the tests that allocate large blocks: a process-wide reading taken while
    /// another test's block lives and compared with one after it is freed is off by it.
    static LARGE_BLOCKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_reading_sees_memory_this_process_holds() {
        let _alone = LARGE_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        let before = ProcessMemory::read();
        assert!(before.rss > 0 && before.threads >= 1, "{before:?}");
        // 256 MiB, touched so that it is resident; the bounds leave 64 MiB for the small
        // allocations other tests of this binary make and free meanwhile
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
    #[cfg(feature = "jemalloc")]
    fn jemalloc_allocates_with_our_options() {
        use tikv_jemalloc_ctl::raw;
        // SAFETY: documented mallctl names of the types jemalloc gives them
        #[allow(unsafe_code)]
        let (background, decay) = unsafe {
            (
                raw::read::<bool>(b"opt.background_thread\0").unwrap(),
                raw::read::<isize>(b"opt.dirty_decay_ms\0").unwrap(),
            )
        };
        assert!(background, "{ALLOCATOR_OPTIONS:?} not applied");
        assert_eq!(decay, 1000, "{ALLOCATOR_OPTIONS:?} not applied");
        // and it is the allocator: a block shows in its statistics. This thread's own
        // counter, not the process-wide heap, which tests on other threads move.
        // SAFETY: thread.allocated is a documented mallctl name of type u64
        #[allow(unsafe_code)]
        let allocated_here = || unsafe { raw::read::<u64>(b"thread.allocated\0").unwrap() };
        let _alone = LARGE_BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
        let before = allocated_here();
        let block = std::hint::black_box(vec![1u8; 64 << 20]);
        let during = allocated_here();
        assert!(during >= before + (64 << 20), "{before} -> {during}");
        drop(block);
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
