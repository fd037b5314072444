//! When the run's window opens, on this host's monotonic clock: what an attack's or an
//! outage's `at` counts from. A link starts before the roles after it; it first takes the
//! window to open the warm-up after its own start, and the harness says when it truly
//! opens once every role has started (an attack timed from the link's own start began
//! 2.4 s before the window in a run whose roles took 12 s to start).

use probe::mono_ns;
use tokio::sync::watch;

/// The harness's side: moves the window's opening.
pub struct WindowOpening(watch::Sender<u64>);

impl WindowOpening {
    /// The window opens `in_ns` from now.
    pub fn opens_in(&self, in_ns: u64) {
        let _ = self.0.send(mono_ns() + in_ns);
    }
}

/// What the link's attacker and outages read the window's opening from.
#[derive(Clone)]
pub struct WindowClock {
    opens: watch::Receiver<u64>,
    /// Nothing can move it any more.
    settled: bool,
}

impl WindowClock {
    /// A window first taken to open at `opens_ns`, and its mover.
    pub fn new(opens_ns: u64) -> (WindowOpening, WindowClock) {
        let (tx, rx) = watch::channel(opens_ns);
        let clock = WindowClock {
            opens: rx,
            settled: false,
        };
        (WindowOpening(tx), clock)
    }

    /// A window that opens at `opens_ns`, which nothing moves.
    pub fn fixed(opens_ns: u64) -> WindowClock {
        let (_, clock) = WindowClock::new(opens_ns);
        WindowClock {
            settled: true,
            ..clock
        }
    }

    pub fn opens_ns(&self) -> u64 {
        *self.opens.borrow()
    }

    /// Resolves when the window's opening moves; never, once nothing can move it.
    pub async fn moved(&mut self) {
        if !self.settled && self.opens.changed().await.is_ok() {
            return;
        }
        self.settled = true;
        std::future::pending::<()>().await
    }

    /// Waits until `after_ns` past the window's opening, as it is when that comes.
    pub async fn until(&mut self, after_ns: u64) {
        loop {
            let at = self.opens_ns() + after_ns;
            tokio::select! {
                _ = crate::timer::sleep_until_ns(at) => {
                    if mono_ns() >= self.opens_ns() + after_ns {
                        return;
                    }
                }
                _ = self.moved() => {}
            }
        }
    }
}

impl Default for WindowClock {
    /// A window open since the clock's zero: `at` counts from the link's first moment.
    fn default() -> Self {
        WindowClock::fixed(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Taken to open in an hour, moved to open now: a wait of 50 ms past the opening
    /// ends 50 ms on, not an hour on.
    #[tokio::test]
    async fn a_wait_follows_the_window_when_it_moves() {
        let (opening, clock) = WindowClock::new(mono_ns() + 3_600_000_000_000);
        let waiting = tokio::spawn({
            let mut clock = clock.clone();
            async move { clock.until(50_000_000).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let moved_at = mono_ns();
        opening.opens_in(0);
        tokio::time::timeout(Duration::from_secs(2), waiting)
            .await
            .expect("the wait ended once the window moved")
            .unwrap();
        let waited_ms = (mono_ns() - moved_at) as f64 / 1e6;
        assert!((49.0..500.0).contains(&waited_ms), "{waited_ms} ms");
        assert!(clock.opens_ns() <= mono_ns());
    }

    #[tokio::test]
    async fn a_fixed_window_never_moves() {
        let mut clock = WindowClock::fixed(mono_ns());
        let moved = tokio::time::timeout(Duration::from_millis(50), clock.moved()).await;
        assert!(moved.is_err(), "a fixed window does not move");
    }
}
