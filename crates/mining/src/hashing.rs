//! Throttled real hashing for miner fleets: a few threads give every miner its hashrate's
//! worth of nonces each tick, so thousands of miners in one process cost no timer each.
//! A miner's connection task puts its current work in its [`Slot`] and receives the shares
//! found on it.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What a miner hashes on.
pub trait Work: Send + 'static {
    type Share: Send + 'static;
    /// Hashes `n` nonces, pushing the shares among them.
    fn hash(&mut self, n: u64, found: &mut Vec<Self::Share>);
}

/// One miner's work, shared between its connection task and the hashing threads.
pub struct Slot<W: Work> {
    /// The work, and the fractional hashes owed from the last tick (kept across jobs).
    work: Mutex<(Option<W>, f64)>,
    shares: mpsc::UnboundedSender<W::Share>,
}

impl<W: Work> Slot<W> {
    /// A slot and the receiver of the shares found in it.
    pub fn new() -> (Arc<Slot<W>>, mpsc::UnboundedReceiver<W::Share>) {
        let (shares, rx) = mpsc::unbounded_channel();
        let slot = Slot {
            work: Mutex::new((None, 0.0)),
            shares,
        };
        (Arc::new(slot), rx)
    }

    /// Replaces the work (`None`: stop hashing).
    pub fn set(&self, work: Option<W>) {
        self.work.lock().0 = work;
    }

    /// Changes the current work in place, if there is one.
    pub fn with<R>(&self, f: impl FnOnce(&mut W) -> R) -> Option<R> {
        self.work.lock().0.as_mut().map(f)
    }
}

/// A fleet: one connection task per miner, started over a ramp, and the hashing threads
/// that serve them all.
pub struct Fleet {
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    hashers: Hashers,
}

impl Fleet {
    /// Starts `miners` tasks from `run(index, slot, shares, stop)`, miner `i` after
    /// `i / miners` of `ramp` (as a farm's machines boot at different times), miner `i`
    /// hashing at `rates[i]` per second on `threads` shared threads. A task sees `stop` turn true when the fleet
    /// stops; its slot is emptied when it ends.
    pub fn start<W, F, Fut>(
        miners: u32,
        ramp: Duration,
        threads: usize,
        rates: Vec<f64>,
        mut run: F,
    ) -> anyhow::Result<Fleet>
    where
        W: Work,
        F: FnMut(
            u32,
            Arc<Slot<W>>,
            mpsc::UnboundedReceiver<W::Share>,
            tokio::sync::watch::Receiver<bool>,
        ) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        anyhow::ensure!(
            rates.len() == miners as usize,
            "{} hashrates for {miners} miners",
            rates.len()
        );
        anyhow::ensure!(
            rates.iter().all(|r| *r > 0.0 && r.is_finite()),
            "every miner's hashrate must be positive"
        );
        let (stop, _) = tokio::sync::watch::channel(false);
        let mut slots = Vec::with_capacity(miners as usize);
        let mut tasks = Vec::with_capacity(miners as usize);
        for index in 0..miners {
            let (slot, shares) = Slot::new();
            slots.push(slot.clone());
            let delay = ramp.mul_f64(f64::from(index) / f64::from(miners.max(1)));
            let mut stopped = stop.subscribe();
            let miner = run(index, slot.clone(), shares, stop.subscribe());
            tasks.push(tokio::spawn(async move {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => miner.await,
                    _ = stopped.changed() => {}
                }
                slot.set(None);
            }));
        }
        Ok(Fleet {
            stop,
            tasks,
            hashers: Hashers::start(slots, threads, rates),
        })
    }

    /// Tells every miner to stop, waits for them, then stops hashing.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        for t in self.tasks {
            let _ = t.await;
        }
        self.hashers.stop();
    }
}

/// The hashing threads of a fleet.
pub struct Hashers {
    running: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hashers {
    /// `threads` threads share `slots`, miner `i` hashing at `rates[i]` per second.
    pub fn start<W: Work>(slots: Vec<Arc<Slot<W>>>, threads: usize, rates: Vec<f64>) -> Hashers {
        let slots: Arc<Vec<(Arc<Slot<W>>, f64)>> = Arc::new(slots.into_iter().zip(rates).collect());
        let running = Arc::new(AtomicBool::new(true));
        let stride = threads.max(1);
        let threads = (0..stride)
            .map(|first| {
                let (slots, running) = (slots.clone(), running.clone());
                std::thread::Builder::new()
                    .name(format!("hash-{first}"))
                    .spawn(move || hash_loop(&slots, first, stride, &running))
                    .expect("a hashing thread starts")
            })
            .collect();
        Hashers { running, threads }
    }

    pub fn stop(self) {
        self.running.store(false, Ordering::Relaxed);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Every tick, gives each miner of this thread its hashrate's worth of nonces.
fn hash_loop<W: Work>(
    slots: &[(Arc<Slot<W>>, f64)],
    first: usize,
    stride: usize,
    running: &AtomicBool,
) {
    const TICK: Duration = Duration::from_millis(10);
    let mut last = Instant::now();
    let mut found = Vec::new();
    while running.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let now = Instant::now();
        let dt = now.duration_since(last).as_secs_f64();
        last = now;
        for (slot, rate) in slots.iter().skip(first).step_by(stride) {
            let mut guard = slot.work.lock();
            let (work, carry) = &mut *guard;
            let Some(work) = work.as_mut() else { continue };
            let owed = *carry + rate * dt;
            let n = owed.floor();
            *carry = owed - n;
            work.hash(n as u64, &mut found);
            drop(guard);
            for share in found.drain(..) {
                let _ = slot.shares.send(share);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the nonces it is given; every 100th is a share.
    struct Counting(u64);

    impl Work for Counting {
        type Share = u64;
        fn hash(&mut self, n: u64, found: &mut Vec<u64>) {
            for _ in 0..n {
                self.0 += 1;
                if self.0.is_multiple_of(100) {
                    found.push(self.0);
                }
            }
        }
    }

    #[test]
    fn each_miner_gets_its_rate_and_its_own_shares() {
        let (a, mut a_shares) = Slot::new();
        let (b, mut b_shares) = Slot::new();
        a.set(Some(Counting(0)));
        b.set(Some(Counting(1_000_000)));
        let hashers = Hashers::start(vec![a.clone(), b.clone()], 2, vec![10_000.0, 30_000.0]);
        std::thread::sleep(Duration::from_millis(500));
        hashers.stop();
        let done = a.with(|w| w.0).unwrap();
        let done_b = b.with(|w| w.0).unwrap() - 1_000_000;
        // 10,000 H/s for half a second, give or take the scheduler; b three times that.
        assert!((3_000..=7_000).contains(&done), "{done}");
        let ratio = done_b as f64 / done as f64;
        assert!((2.5..=3.5).contains(&ratio), "b hashed {ratio} times a");
        let mut got = Vec::new();
        while let Ok(s) = a_shares.try_recv() {
            got.push(s);
        }
        assert_eq!(got.len() as u64, done / 100);
        assert!(
            b_shares.try_recv().unwrap() > 1_000_000,
            "b's shares are b's"
        );
    }
}
