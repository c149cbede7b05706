//! Idle connections, and closing the idlest to make room. When the
//! controller holds as many connections as its open files limit allows
//! ([`super::conns`]), a new one is taken by closing the connection whose
//! peer has sent nothing for longest, if that is at least [`EVICT_IDLE`]:
//! clients that connect and then say nothing (keep-alive pings close them
//! only after 80 s) cannot keep every other user out.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::Waker;
use std::time::{Duration, Instant};

/// A connection silent this long may be closed to make room.
pub const EVICT_IDLE: Duration = Duration::from_secs(10);

/// Milliseconds on a clock private to this process.
pub fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// What the accept side sees of one open connection.
#[derive(Debug, Default)]
pub struct Activity {
    /// [`now_ms`] when the peer last sent bytes.
    last_read: AtomicU64,
    closing: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Activity {
    pub fn new() -> Activity {
        let a = Activity::default();
        a.read_now();
        a
    }

    pub fn read_now(&self) {
        self.last_read.store(now_ms(), Ordering::Relaxed);
    }

    pub fn last_read(&self) -> u64 {
        self.last_read.load(Ordering::Relaxed)
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Remember who to wake to close the connection.
    pub fn park(&self, w: &Waker) {
        if let Ok(mut g) = self.waker.lock() {
            *g = Some(w.clone());
        }
    }

    /// Close it: its next read fails, and a read waiting is woken.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        if let Some(w) = self.waker.lock().ok().and_then(|mut g| g.take()) {
            w.wake();
        }
    }
}

/// The connection silent for longest, if at least `min_idle_ms` (pure).
pub fn idlest(
    conns: impl Iterator<Item = (u64, u64)>,
    now_ms: u64,
    min_idle_ms: u64,
) -> Option<u64> {
    conns
        .filter(|&(_, last)| now_ms.saturating_sub(last) >= min_idle_ms)
        .min_by_key(|&(_, last)| last)
        .map(|(id, _)| id)
}

/// Open connections by id, with their activity.
#[derive(Debug, Default)]
pub struct Live {
    conns: HashMap<u64, std::sync::Arc<Activity>>,
    next: u64,
}

impl Live {
    pub fn add(&mut self, a: std::sync::Arc<Activity>) -> u64 {
        self.next += 1;
        self.conns.insert(self.next, a);
        self.next
    }

    pub fn remove(&mut self, id: u64) {
        self.conns.remove(&id);
    }

    /// Close the idlest connection silent at least [`EVICT_IDLE`] at `now`
    /// ([`now_ms`]); returns how long it was silent.
    pub fn close_idlest(&mut self, now: u64) -> Option<Duration> {
        let id = idlest(
            self.conns
                .iter()
                .filter(|(_, a)| !a.is_closing())
                .map(|(id, a)| (*id, a.last_read())),
            now,
            EVICT_IDLE.as_millis() as u64,
        )?;
        let a = self.conns.get(&id)?;
        a.close();
        Some(Duration::from_millis(now.saturating_sub(a.last_read())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_idlest_long_enough_is_chosen() {
        let conns = [(1, 500), (2, 100), (3, 900)];
        assert_eq!(idlest(conns.into_iter(), 1000, 0), Some(2));
        assert_eq!(idlest(conns.into_iter(), 1000, 900), Some(2));
        assert_eq!(idlest(conns.into_iter(), 1000, 901), None);
        assert_eq!(idlest(std::iter::empty(), 1000, 0), None);
    }

    #[test]
    fn a_fresh_connection_is_not_closed() {
        let mut live = Live::default();
        let a = Arc::new(Activity::new());
        let b = Arc::new(Activity::new());
        live.add(a.clone());
        let id_b = live.add(b.clone());
        let t = a.last_read().max(b.last_read());
        assert_eq!(live.close_idlest(t), None);
        assert!(!a.is_closing());
        // Silent long enough: the idlest is closed, and not chosen twice.
        a.last_read.store(t, Ordering::Relaxed);
        b.last_read.store(t + 1, Ordering::Relaxed);
        let later = t + EVICT_IDLE.as_millis() as u64;
        assert_eq!(live.close_idlest(later), Some(EVICT_IDLE));
        assert!(a.is_closing() && !b.is_closing());
        assert_eq!(live.close_idlest(later), None);
        live.remove(id_b);
        assert_eq!(live.close_idlest(later + 10), None);
    }
}
