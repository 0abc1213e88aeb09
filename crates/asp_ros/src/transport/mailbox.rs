//! A keep-last queue with async receive: what a subscription (or an action's feedback
//! and status stream) reads from, whichever backend fills it.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

#[derive(Debug)]
pub(crate) struct Mailbox<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    depth: usize,
}

#[derive(Debug)]
struct State<T> {
    queue: VecDeque<T>,
    closed: bool,
    dropped: u64,
}

impl<T> Mailbox<T> {
    pub(crate) fn new(depth: usize) -> Self {
        Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                closed: false,
                dropped: 0,
            }),
            notify: Notify::new(),
            depth: depth.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        // a panic while holding this lock leaves the queue consistent
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `value`, dropping the oldest when `depth` are waiting.
    pub(crate) fn push(&self, value: T) {
        {
            let mut s = self.lock();
            if s.closed {
                return;
            }
            if s.queue.len() >= self.depth {
                s.queue.pop_front();
                s.dropped += 1;
            }
            s.queue.push_back(value);
        }
        self.notify.notify_waiters();
    }

    /// No more values will come; waiting receivers get `None` once drained.
    pub(crate) fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    pub(crate) fn try_recv(&self) -> Option<T> {
        self.lock().queue.pop_front()
    }

    pub(crate) fn drain_latest(&self) -> Option<T> {
        let mut s = self.lock();
        let last = s.queue.pop_back();
        s.queue.clear();
        last
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    pub(crate) async fn recv(&self) -> Option<T> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                if let Some(v) = s.queue.pop_front() {
                    return Some(v);
                }
                if s.closed {
                    return None;
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn keeps_the_last_depth_values_and_closes() {
        let m = Arc::new(Mailbox::new(2));
        for i in 0..5 {
            m.push(i);
        }
        assert_eq!(m.dropped(), 3);
        assert_eq!(m.recv().await, Some(3));
        assert_eq!(m.try_recv(), Some(4));
        assert_eq!(m.try_recv(), None);
        let m2 = m.clone();
        let waiter = tokio::spawn(async move { m2.recv().await });
        tokio::task::yield_now().await;
        m.push(7);
        assert_eq!(waiter.await.unwrap(), Some(7));
        m.push(8);
        m.push(9);
        assert_eq!(m.drain_latest(), Some(9));
        m.close();
        assert_eq!(m.recv().await, None);
    }
}
