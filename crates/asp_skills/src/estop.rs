//! A latched emergency stop. Engaging it aborts every motion that listens (the executor's
//! arm and gripper goals, go_to's navigation goal) and makes them refuse new work until
//! it is reset. The node binds [`EStop::engage`]/[`EStop::reset`] to the latched
//! `std_msgs/Bool` on `/**.safety.estop_topic` (reliable, transient local); it works
//! without the agent.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The owner's side: engage and reset. Cloning shares the same latch.
#[derive(Debug, Clone)]
pub struct EStop {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for EStop {
    fn default() -> Self {
        Self::new()
    }
}

impl EStop {
    /// A released e-stop.
    pub fn new() -> Self {
        let (tx, _) = watch::channel(false);
        Self { tx: Arc::new(tx) }
    }

    /// Engages the stop (idempotent). Every active motion is cancelled.
    pub fn engage(&self) {
        self.tx.send_replace(true);
        tracing::warn!("e-stop engaged");
    }

    /// Releases the stop; new work is accepted again (aborted goals stay aborted).
    pub fn reset(&self) {
        self.tx.send_replace(false);
        tracing::info!("e-stop reset");
    }

    /// Sets the latch (`true` = stop) without logging: the caller says why.
    pub fn set(&self, engaged: bool) {
        self.tx
            .send_if_modified(|e| std::mem::replace(e, engaged) != engaged);
    }

    pub fn is_engaged(&self) -> bool {
        *self.tx.borrow()
    }

    /// A listener for a motion component.
    pub fn listener(&self) -> EStopListener {
        EStopListener {
            rx: self.tx.subscribe(),
        }
    }
}

/// The motion side: reads the latch and cancels work when it engages.
#[derive(Debug, Clone)]
pub struct EStopListener {
    rx: watch::Receiver<bool>,
}

impl EStopListener {
    pub fn is_engaged(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once the stop is engaged (at once if it already is). Never resolves if
    /// the [`EStop`] was dropped while released.
    pub async fn engaged(&self) {
        let mut rx = self.rx.clone();
        if rx.wait_for(|e| *e).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// A token cancelled when `parent` is cancelled or the stop engages, whichever comes
    /// first; the watcher ends when the returned guard is dropped.
    pub fn guard(&self, parent: &CancellationToken) -> EStopGuard {
        let token = parent.child_token();
        let me = self.clone();
        let t = token.clone();
        let task = tokio::spawn(async move {
            tokio::select! {
                () = me.engaged() => t.cancel(),
                () = t.cancelled() => {}
            }
        });
        EStopGuard { token, task }
    }
}

/// A cancellation token tied to the e-stop for the life of one goal.
#[derive(Debug)]
pub struct EStopGuard {
    token: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl EStopGuard {
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for EStopGuard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn guard_cancels_on_engage_and_latch_holds_until_reset() {
        let stop = EStop::new();
        let l = stop.listener();
        let parent = CancellationToken::new();
        let g = l.guard(&parent);
        assert!(!g.token().is_cancelled());
        stop.engage();
        tokio::time::timeout(std::time::Duration::from_secs(5), g.token().cancelled())
            .await
            .unwrap();
        assert!(l.is_engaged() && stop.is_engaged());
        // latched: a new guard is cancelled at once
        let g2 = l.guard(&parent);
        tokio::time::timeout(std::time::Duration::from_secs(5), g2.token().cancelled())
            .await
            .unwrap();
        stop.reset();
        assert!(!l.is_engaged());
        let g3 = l.guard(&parent);
        tokio::task::yield_now().await;
        assert!(!g3.token().is_cancelled());
        // the parent still cancels
        parent.cancel();
        assert!(g3.token().is_cancelled());
    }

    #[tokio::test]
    async fn set_follows_the_message() {
        let stop = EStop::new();
        stop.set(true);
        assert!(stop.listener().is_engaged());
        stop.set(false);
        assert!(!stop.listener().is_engaged());
    }
}
