//! Releases at absolute deadlines, finer than tokio's millisecond timer wheel.
//!
//! tokio rounds every sleep up to its next millisecond tick, so a relay that sleeps with
//! it adds about a millisecond at the median to every chunk, and more under load. One
//! dedicated thread per process keeps the pending deadlines in a heap and waits for the
//! earliest with the kernel's own timed wait (tens of microseconds), then wakes the task
//! that waits on it.

use probe::mono_ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::OnceLock;
use std::time::Duration;
use tokio::sync::oneshot;

/// How long before its deadline a waiting task is woken: about what a wake-up across
/// threads costs here, so the task is running when the deadline comes.
const WAKE_AHEAD_NS: u64 = 100_000;

struct Deadline {
    due_ns: u64,
    seq: u64,
    wake: oneshot::Sender<()>,
}

impl PartialEq for Deadline {
    fn eq(&self, other: &Self) -> bool {
        (self.due_ns, self.seq) == (other.due_ns, other.seq)
    }
}
impl Eq for Deadline {}
impl PartialOrd for Deadline {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Deadline {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.due_ns, self.seq).cmp(&(other.due_ns, other.seq))
    }
}

/// The process's timer thread, started on first use.
fn timer() -> &'static Sender<(u64, oneshot::Sender<()>)> {
    static TIMER: OnceLock<Sender<(u64, oneshot::Sender<()>)>> = OnceLock::new();
    TIMER.get_or_init(|| {
        let (tx, rx) = channel::<(u64, oneshot::Sender<()>)>();
        std::thread::Builder::new()
            .name("link-timer".into())
            .spawn(move || {
                // The kernel may defer a timed wake by the thread's timer slack (50 us by
                // default) to batch wake-ups; this thread exists to be punctual.
                // SAFETY: prctl with PR_SET_TIMERSLACK takes one integer and touches no memory.
                unsafe {
                    libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
                }
                let mut heap: BinaryHeap<Reverse<Deadline>> = BinaryHeap::new();
                let mut seq = 0u64;
                loop {
                    let now = mono_ns();
                    while heap.peek().is_some_and(|d| d.0.due_ns <= now) {
                        let Reverse(d) = heap.pop().expect("peeked");
                        let _ = d.wake.send(());
                    }
                    let next = match heap.peek() {
                        Some(d) => rx.recv_timeout(Duration::from_nanos(d.0.due_ns - now)),
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match next {
                        Ok((due_ns, wake)) => {
                            seq += 1;
                            heap.push(Reverse(Deadline { due_ns, seq, wake }));
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .expect("the link's timer thread starts");
        tx
    })
}

/// Resolves at `due_ns` on the monotonic clock ([`mono_ns`]), or at once if it has passed.
pub async fn sleep_until_ns(due_ns: u64) {
    if due_ns <= mono_ns() {
        return;
    }
    let (wake, woken) = oneshot::channel();
    if timer()
        .send((due_ns.saturating_sub(WAKE_AHEAD_NS), wake))
        .is_err()
        || woken.await.is_err()
    {
        // No timer thread: fall back to tokio's coarser sleep rather than not waiting.
        let now = mono_ns();
        tokio::time::sleep(Duration::from_nanos(due_ns.saturating_sub(now))).await;
    }
    // Woken a little ahead, for what waking a task costs: yield until the deadline.
    while mono_ns() < due_ns {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deadlines_release_in_order_and_not_early() {
        let start = mono_ns();
        let dues: Vec<u64> = [30u64, 10, 20, 10]
            .iter()
            .map(|ms| start + ms * 1_000_000)
            .collect();
        let tasks: Vec<_> = dues
            .iter()
            .map(|&due| {
                tokio::spawn(async move {
                    sleep_until_ns(due).await;
                    mono_ns()
                })
            })
            .collect();
        for (task, due) in tasks.into_iter().zip(dues) {
            let woke = task.await.unwrap();
            assert!(woke >= due, "woke {} ns early", due - woke);
        }
        sleep_until_ns(start).await; // a deadline in the past returns at once
    }
}
