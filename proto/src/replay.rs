//! The replay cache: every verifier remembers the nonce of each credential
//! it accepted for as long as that credential could be accepted, and refuses
//! a nonce it has seen. Bounded: when full of live entries it refuses
//! rather than grows. Pure (time is passed in).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::auth::AuthError;

/// Entries kept at most by default (one per credential accepted within the
/// last `AuthInfo=skew` seconds: a million is ~16,000 calls a second).
pub const DEFAULT_CAPACITY: usize = 1_000_000;

#[derive(Debug)]
pub struct ReplayCache {
    capacity: usize,
    seen: HashMap<u128, i64>,
    /// (expiry, nonce), soonest first, for purging.
    order: BinaryHeap<Reverse<(i64, u128)>>,
}

impl ReplayCache {
    pub fn new(capacity: usize) -> ReplayCache {
        ReplayCache {
            capacity: capacity.max(1),
            seen: HashMap::new(),
            order: BinaryHeap::new(),
        }
    }

    /// Record `nonce` (usable until `until_ms`) if it is new.
    pub fn check(&mut self, nonce: u128, until_ms: i64, now_ms: i64) -> Result<(), AuthError> {
        self.purge(now_ms);
        if self.seen.contains_key(&nonce) {
            return Err(AuthError::Replayed);
        }
        if self.seen.len() >= self.capacity {
            return Err(AuthError::CacheFull);
        }
        self.seen.insert(nonce, until_ms);
        self.order.push(Reverse((until_ms, nonce)));
        Ok(())
    }

    /// Forget every nonce whose credential can no longer be accepted.
    fn purge(&mut self, now_ms: i64) {
        while let Some(Reverse((until, nonce))) = self.order.peek().copied() {
            if until >= now_ms {
                break;
            }
            self.order.pop();
            self.seen.remove(&nonce);
        }
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_passes_once_until_it_expires() {
        let mut c = ReplayCache::new(10);
        assert_eq!(c.check(1, 1_000, 0), Ok(()));
        assert_eq!(c.check(1, 1_000, 500), Err(AuthError::Replayed));
        assert_eq!(c.check(2, 2_000, 500), Ok(()));
        // At 1,000 ms the first is still usable, hence still remembered.
        assert_eq!(c.check(1, 1_000, 1_000), Err(AuthError::Replayed));
        // Past its window it is forgotten (the verifier refuses it as too old).
        assert_eq!(c.check(3, 3_000, 1_001), Ok(()));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn full_cache_refuses_then_frees_as_entries_expire() {
        let mut c = ReplayCache::new(2);
        c.check(1, 100, 0).unwrap();
        c.check(2, 200, 0).unwrap();
        assert_eq!(c.check(3, 300, 50), Err(AuthError::CacheFull));
        assert_eq!(c.len(), 2);
        // Entry 1 expires: room for one more, never more than the capacity.
        assert_eq!(c.check(3, 300, 150), Ok(()));
        assert_eq!(c.check(4, 400, 150), Err(AuthError::CacheFull));
        assert_eq!(c.len(), 2);
        assert_eq!(c.check(4, 400, 1_000), Ok(()));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn purge_follows_expiry_not_arrival() {
        let mut c = ReplayCache::new(10);
        c.check(1, 5_000, 0).unwrap();
        c.check(2, 100, 0).unwrap();
        assert_eq!(c.check(9, 9_000, 200), Ok(()));
        assert_eq!(c.len(), 2);
        assert_eq!(c.check(1, 5_000, 200), Err(AuthError::Replayed));
    }
}
