//! agent_node's request record, in a file of the data folder: the goals it runs and
//! the requests it has not answered yet (see [`asp_ros::transport::RequestRecord`]).
//! When agent_node's process dies mid-goal, the process `asp launch` starts in its
//! place reads what the dead one left open and tells those clients: the service
//! request gets an answer with code 25 naming agent_node, the action goal ends ABORTED
//! with the same code (in the status array and for result requests). Without it,
//! their clients (rclpy's, rclcpp's) wait forever.
//!
//! The record is a small JSON document rewritten whole (write, rename) on each change:
//! a goal makes a handful of changes, and a crash leaves either the old document or
//! the new one. It is not synced to disk: what it guards against is the process dying
//! (the page cache outlives it), and a sync per change would add milliseconds to every
//! refusal, which is otherwise answered in under one. What is left open stays in the
//! record until answered, so a process that dies again before answering leaves it to
//! the next, unless the record is older than `common.supervision.open_requests_max_age_s`
//! (an earlier session's, whose clients have gone).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use asp_ros::msg::unique_identifier_msgs::UUID;
use asp_ros::transport::{OrphanResult, RequestId, RequestRecord, result_endpoint};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

/// What a process left open.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenWork {
    #[serde(default)]
    pub requests: Vec<OpenRequest>,
    #[serde(default)]
    pub goals: Vec<OpenGoal>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenRequest {
    pub endpoint: String,
    pub id: RequestId,
    /// The goal a result request asks about.
    pub goal: Option<[u8; 16]>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenGoal {
    pub action: String,
    pub goal: [u8; 16],
}

impl OpenWork {
    /// The open requests of service `service`.
    pub fn service_requests(&self, service: &str) -> Vec<RequestId> {
        self.requests
            .iter()
            .filter(|r| r.endpoint == service)
            .map(|r| r.id)
            .collect()
    }

    /// The unfinished goals of action `action`.
    pub fn goals_of(&self, action: &str) -> Vec<UUID> {
        self.goals
            .iter()
            .filter(|g| g.action == action)
            .map(|g| UUID { uuid: g.goal })
            .collect()
    }

    /// The open result requests of action `action`.
    pub fn result_requests(&self, action: &str) -> Vec<OrphanResult> {
        let endpoint = result_endpoint(action);
        self.requests
            .iter()
            .filter(|r| r.endpoint == endpoint)
            .filter_map(|r| {
                r.goal.map(|g| OrphanResult {
                    id: r.id,
                    goal: UUID { uuid: g },
                })
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.goals.is_empty()
    }
}

/// The record file of one node.
#[derive(Debug)]
pub struct RequestFile {
    path: PathBuf,
    open: Mutex<OpenWork>,
    /// Whether a failed write was already reported (said once, then at debug level).
    write_failed: std::sync::atomic::AtomicBool,
}

impl RequestFile {
    /// Opens the record at `path` (creating its folder) and says what the previous
    /// process left open. A record that does not parse is reported, kept beside as
    /// `<file>.bad`, and read as empty. A record last written more than `max_age` ago
    /// is from an earlier session, not a crash a respawn follows: its clients have
    /// gone, so it is dropped (said once) and read as empty.
    pub fn open(path: &Path, max_age: Duration) -> std::io::Result<(Arc<Self>, OpenWork)> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let previous = match std::fs::read_to_string(path) {
            Ok(text) => match serde_json::from_str::<OpenWork>(&text) {
                Ok(work) => work,
                Err(e) => {
                    let bad = path.with_extension("json.bad");
                    warn!(file = %path.display(), "the request record does not parse ({e}): kept as {} and started empty", bad.display());
                    let _ = std::fs::rename(path, &bad);
                    OpenWork::default()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => OpenWork::default(),
            Err(e) => return Err(e),
        };
        let age = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        let stale = matches!(age, Some(age) if age > max_age) && !previous.is_empty();
        let previous = match age {
            Some(age) if stale => {
                info!(
                    file = %path.display(),
                    requests = previous.requests.len(),
                    goals = previous.goals.len(),
                    "the request record was last written {:.0} s ago, more than {:.0} s: what it left open is from an earlier session whose clients have gone, dropped unanswered",
                    age.as_secs_f64(),
                    max_age.as_secs_f64()
                );
                OpenWork::default()
            }
            _ => previous,
        };
        let file = Arc::new(Self {
            path: path.to_path_buf(),
            open: Mutex::new(previous.clone()),
            write_failed: Default::default(),
        });
        if stale {
            // what was dropped above is not read again by the process after this one
            file.change(|_| true);
        }
        Ok((file, previous))
    }

    /// What is open now.
    pub fn open_work(&self) -> OpenWork {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, OpenWork> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the record and writes it (under the lock, so writes keep their order).
    fn change(&self, f: impl FnOnce(&mut OpenWork) -> bool) {
        let mut open = self.lock();
        if !f(&mut open) {
            return;
        }
        if let Err(e) = self.write(&open) {
            if self
                .write_failed
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::debug!(file = %self.path.display(), "could not write the request record: {e}");
            } else {
                warn!(file = %self.path.display(), "could not write the request record ({e}): a restarted agent_node will not be able to answer the clients this one leaves waiting. Said once");
            }
        }
    }

    fn write(&self, open: &OpenWork) -> std::io::Result<()> {
        use std::io::Write;
        let tmp = self.path.with_extension("json.tmp");
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&serde_json::to_vec(open)?)?;
        std::fs::rename(&tmp, &self.path)
    }
}

impl RequestRecord for RequestFile {
    fn taken(&self, endpoint: &str, id: RequestId, goal: Option<UUID>) {
        self.change(|open| {
            open.requests.push(OpenRequest {
                endpoint: endpoint.to_owned(),
                id,
                goal: goal.map(|g| g.uuid),
            });
            true
        });
    }

    fn answered(&self, endpoint: &str, id: RequestId) {
        self.change(|open| {
            let before = open.requests.len();
            open.requests
                .retain(|r| !(r.endpoint == endpoint && r.id == id));
            open.requests.len() != before
        });
    }

    fn goal_accepted(&self, action: &str, goal: UUID) {
        self.change(|open| {
            open.goals.push(OpenGoal {
                action: action.to_owned(),
                goal: goal.uuid,
            });
            true
        });
    }

    fn goal_ended(&self, action: &str, goal: UUID) {
        self.change(|open| {
            let before = open.goals.len();
            open.goals
                .retain(|g| !(g.action == action && g.goal == goal.uuid));
            open.goals.len() != before
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn id(n: u8) -> RequestId {
        RequestId {
            writer: [n; 16],
            sequence: i64::from(n),
        }
    }

    #[test]
    fn what_one_process_leaves_open_the_next_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("requests/domain_0/agent_node.json");
        let (first, previous) = RequestFile::open(&path, HOUR).unwrap();
        assert!(previous.is_empty());
        let goal = UUID { uuid: [7; 16] };
        first.taken("/asp/execute_goal", id(1), None);
        first.taken("/asp/execute_goal", id(2), None);
        first.answered("/asp/execute_goal", id(1));
        first.goal_accepted("/asp/execute", goal);
        first.taken(&result_endpoint("/asp/execute"), id(3), Some(goal));
        first.goal_accepted("/asp/execute", UUID { uuid: [8; 16] });
        first.goal_ended("/asp/execute", UUID { uuid: [8; 16] });
        drop(first);

        let (second, left) = RequestFile::open(&path, HOUR).unwrap();
        assert_eq!(left.service_requests("/asp/execute_goal"), [id(2)]);
        assert_eq!(left.goals_of("/asp/execute"), [goal]);
        assert_eq!(
            left.result_requests("/asp/execute"),
            [OrphanResult { id: id(3), goal }]
        );
        assert!(left.service_requests("/other/execute_goal").is_empty());
        // kept until answered: a process that dies before answering leaves them on
        assert_eq!(second.open_work(), left);
        second.answered("/asp/execute_goal", id(2));
        second.answered(&result_endpoint("/asp/execute"), id(3));
        second.goal_ended("/asp/execute", goal);
        drop(second);
        let (_, rest) = RequestFile::open(&path, HOUR).unwrap();
        assert!(rest.is_empty(), "{rest:?}");
    }

    #[test]
    fn a_record_that_does_not_parse_is_kept_aside_and_read_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent_node.json");
        std::fs::write(&path, "{ not json").unwrap();
        let (file, previous) = RequestFile::open(&path, HOUR).unwrap();
        assert!(previous.is_empty());
        assert_eq!(
            std::fs::read_to_string(path.with_extension("json.bad")).unwrap(),
            "{ not json"
        );
        file.taken("/s", id(4), None);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"endpoint\":\"/s\""), "{text}");
    }

    #[test]
    fn a_record_older_than_its_age_limit_is_dropped_unanswered() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent_node.json");
        let (first, _) = RequestFile::open(&path, HOUR).unwrap();
        first.taken("/asp/execute_goal", id(5), None);
        first.goal_accepted("/asp/execute", UUID { uuid: [9; 16] });
        drop(first);
        let written = std::fs::metadata(&path).unwrap().modified().unwrap();
        // a crash a respawn follows: answered
        let (_, left) = RequestFile::open(&path, HOUR).unwrap();
        assert_eq!(left.service_requests("/asp/execute_goal"), [id(5)]);
        // the same record two hours old: an earlier session's, dropped and cleared
        std::fs::File::options()
            .append(true)
            .open(&path)
            .unwrap()
            .set_modified(written - 2 * HOUR)
            .unwrap();
        let (file, left) = RequestFile::open(&path, HOUR).unwrap();
        assert!(left.is_empty(), "{left:?}");
        assert!(file.open_work().is_empty());
        let (_, after) = RequestFile::open(&path, HOUR).unwrap();
        assert!(after.is_empty(), "{after:?}");
    }
}
