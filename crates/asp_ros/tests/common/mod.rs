//! Shared helpers of the integration tests: isolated DDS domains, transports, and the
//! `asp-ros-peer` child process.
#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use asp_ros::transport::ServiceMapping;
use asp_ros::{Transport, TransportSettings};
use serde_json::Value;

/// Bytes allocated through malloc and still in use (the heap figure of the tests that
/// measure what the transport keeps; a test that reads it owns its process's heap).
#[allow(unsafe_code)] // the one FFI call; the workspace denies unsafe code elsewhere
pub fn heap_in_use() -> usize {
    // SAFETY: mallinfo2 only reads the allocator's counters.
    let m = unsafe { libc::mallinfo2() };
    m.uordblks + m.hblkhd
}

static NEXT: AtomicU16 = AtomicU16::new(0);

/// A DDS domain no other test of this process uses (and, through the process id, most
/// likely no other process either), so that tests do not hear each other.
pub fn fresh_domain() -> u16 {
    let base = 20 + (std::process::id() % 19) as u16 * 10;
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    10 + (base + n) % 220
}

pub fn settings(domain: u16, mapping: ServiceMapping) -> TransportSettings {
    TransportSettings {
        domain_id: domain,
        service_mapping: mapping,
        discovery_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(30),
    }
}

/// Two DDS participants on a fresh domain (as two processes would be).
pub fn dds_pair(mapping: ServiceMapping) -> (Transport, Transport) {
    let s = settings(fresh_domain(), mapping);
    (
        Transport::dds(s.clone()).unwrap(),
        Transport::dds(s).unwrap(),
    )
}

/// An `asp-ros-peer` child process; killed when dropped.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// What the child wrote to stderr (its log), also passed on to this process's.
    log: Arc<Mutex<Vec<String>>>,
    pub name: String,
}

impl Peer {
    pub fn spawn(domain: u16, mapping: ServiceMapping, args: &[&str]) -> Peer {
        let rmw = match mapping {
            ServiceMapping::FastDds => "rmw_fastrtps_cpp",
            ServiceMapping::Cyclone => "rmw_cyclonedds_cpp",
        };
        Self::spawn_cmd(
            Command::new(env!("CARGO_BIN_EXE_asp-ros-peer"))
                .args(args)
                .env("ROS_DOMAIN_ID", domain.to_string())
                .env("RMW_IMPLEMENTATION", rmw),
            &format!("asp-ros-peer {}", args.join(" ")),
        )
    }

    pub fn spawn_cmd(cmd: &mut Command, name: &str) -> Peer {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (stderr, kept) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                eprintln!("{line}");
                kept.lock().unwrap().push(line);
            }
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let label = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("[{label}] {line}"),
                }
            }
        });
        Peer {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            log,
            name: name.to_string(),
        }
    }

    /// The child's log lines so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The next event line, within `timeout`.
    pub fn next(&self, timeout: Duration) -> Option<Value> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Waits for an event named `event`, returning it and the lines before it.
    pub fn expect(&self, event: &str, timeout: Duration) -> (Value, Vec<Value>) {
        let deadline = std::time::Instant::now() + timeout;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if v["event"] == event => return (v, before),
                Ok(v) => before.push(v),
                Err(_) => panic!(
                    "{}: no {event:?} event within {timeout:?}; saw {before:?}",
                    self.name
                ),
            }
        }
    }

    /// Every event line until the process exits (or `timeout`), and its exit status.
    pub fn finish(mut self, timeout: Duration) -> (Vec<Value>, Option<i32>) {
        let deadline = std::time::Instant::now() + timeout;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self
                .lines
                .recv_timeout(left.min(Duration::from_millis(100)))
            {
                Ok(v) => out.push(v),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if std::time::Instant::now() >= deadline {
                        break;
                    }
                }
            }
        }
        // stdout closes as the process exits; give it a moment to be reaped
        let mut status = None;
        while status.is_none() && std::time::Instant::now() < deadline + Duration::from_secs(5) {
            status = self.child.try_wait().ok().flatten().and_then(|s| s.code());
            if status.is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        (out, status)
    }

    /// Closes the child's stdin (a polite "stop").
    pub fn close_stdin(&mut self) {
        if let Some(mut s) = self.stdin.take() {
            let _ = s.flush();
        }
    }
}

/// Dropping a peer kills it: no goodbye, as a crashed process. The kill comes before
/// stdin closes, since a peer that saw its stdin close first could stop politely (and
/// dispose its participant) before the kill landed, on a busy machine.
impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stdin.take();
    }
}
