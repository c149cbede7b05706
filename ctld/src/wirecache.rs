//! Each listed job's encoding, kept between listings (`jobwire.rs` uses
//! it): the bytes a job's record encodes to are sent again while nothing
//! they show has moved. Pure: a map and one block of bytes.

use std::sync::Arc;

use drover_conf::Config;
use drover_proto::jobmask::JobMask;
use drover_proto::JobStamp;
use rustc_hash::FxHashMap;

/// At most this much memory (the map and the block, as allocated) is kept.
/// squeue's default fields take about 160 bytes a job (120 for the entry,
/// 40 of encoding: about 24 MiB allocated at 110,000 jobs).
const BUDGET: usize = 32 << 20;

/// A map slot: a job id and its [`Encoded`].
const SLOT: usize = std::mem::size_of::<(u32, Encoded)>();

/// Each listed job's encoding (field 1 of the answer, key and length
/// included) as the last listing wrote it, for the fields and
/// configuration that listing had. Listings with `details` (`--json`,
/// `scontrol`-like callers: several hundred bytes a job, and their time
/// spent in the client) are not kept.
pub struct WireCache {
    made_for: Option<(JobMask, bool, Arc<Config>)>,
    jobs: FxHashMap<u32, Encoded>,
    /// The kept jobs' bytes, one after another (in one block: no small
    /// allocation per job to scatter the heap). A job written again
    /// leaves its old bytes behind as garbage until [`WireCache::tidy`].
    arena: Vec<u8>,
    garbage: usize,
    /// The most allocated ([`WireCache::held_with`]).
    budget: usize,
}

impl Default for WireCache {
    fn default() -> WireCache {
        WireCache {
            made_for: None,
            jobs: FxHashMap::default(),
            arena: Vec::new(),
            garbage: 0,
            budget: BUDGET,
        }
    }
}

/// One job's bytes (`arena[at..at + len]`), and what they were written
/// from.
struct Encoded {
    seq: u64,
    stamp: JobStamp,
    at: u32,
    len: u32,
}

impl WireCache {
    /// Ready for a listing of these fields: what was written for others,
    /// or under another configuration, is dropped. (Holding the
    /// configuration, the cache makes an in-place edit of it a new one.)
    /// Whether it keeps this listing's bytes.
    pub fn for_listing(&mut self, mask: JobMask, details: bool, cfg: &Arc<Config>) -> bool {
        let same = self
            .made_for
            .as_ref()
            .is_some_and(|(m, d, c)| *m == mask && *d == details && Arc::ptr_eq(c, cfg));
        if !same {
            *self = WireCache {
                made_for: (!details).then(|| (mask, details, cfg.clone())),
                budget: self.budget,
                ..Default::default()
            };
        }
        self.made_for.is_some()
    }

    /// The job's kept bytes, if written at this change number and stamp.
    pub fn get(&self, id: u32, seq: u64, stamp: &JobStamp) -> Option<&[u8]> {
        let e = self.jobs.get(&id)?;
        (e.seq == seq && e.stamp == *stamp)
            .then(|| &self.arena[e.at as usize..(e.at + e.len) as usize])
    }

    /// The memory the map and the block would take with `slots` more
    /// entries and `bytes` more bytes (both grow by doubling; a map of
    /// capacity c has 8c/7 slots).
    fn held_with(&self, slots: usize, bytes: usize) -> usize {
        let grown = |len: usize, cap: usize| if len > cap { len.max(2 * cap) } else { cap };
        let map = grown(self.jobs.len() + slots, self.jobs.capacity()) * 8 / 7 * (SLOT + 1);
        map + grown(self.arena.len() + bytes, self.arena.capacity())
    }

    /// Keep the job's bytes, within the budget ([`BUDGET`]).
    pub fn put(&mut self, id: u32, seq: u64, stamp: JobStamp, bytes: &[u8]) {
        let old = self.jobs.get(&id).map_or(0, |e| e.len as usize);
        let slots = usize::from(!self.jobs.contains_key(&id));
        let Ok(at) = u32::try_from(self.arena.len()) else {
            return;
        };
        let Ok(len) = u32::try_from(bytes.len()) else {
            return;
        };
        if self.held_with(slots, bytes.len()) > self.budget || at.checked_add(len).is_none() {
            return;
        }
        self.arena.extend_from_slice(bytes);
        self.garbage += old;
        let e = Encoded {
            seq,
            stamp,
            at,
            len,
        };
        self.jobs.insert(id, e);
    }

    /// After a listing: drop the bytes of jobs no longer known (of
    /// `total`) once the cache holds an eighth more than there are jobs,
    /// and close the gaps once half the block is garbage.
    pub fn tidy(&mut self, total: usize, known: impl Fn(u32) -> bool) {
        if self.jobs.len() > total + total / 8 + 64 {
            let mut gone = 0;
            self.jobs.retain(|&id, e| {
                let keep = known(id);
                if !keep {
                    gone += e.len as usize;
                }
                keep
            });
            self.garbage += gone;
        }
        if self.garbage > 64 * 1024 && self.garbage * 2 > self.arena.len() {
            let mut arena = Vec::with_capacity(self.arena.len() - self.garbage);
            for e in self.jobs.values_mut() {
                let at = arena.len() as u32;
                arena.extend_from_slice(&self.arena[e.at as usize..(e.at + e.len) as usize]);
                e.at = at;
            }
            self.arena = arena;
            self.garbage = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(id: u32) -> JobStamp {
        JobStamp {
            job_id: id,
            ..Default::default()
        }
    }

    #[test]
    fn kept_within_the_budget_and_dropped_for_other_fields() {
        let cfg = Arc::new(Config::default());
        let mask = JobMask::of(&[1, 2]);
        // Room for a map of 3 and a block of 160 bytes: three jobs of 40.
        let budget = 4 * (SLOT + 1) + 160;
        let mut c = WireCache {
            budget,
            ..Default::default()
        };
        assert!(c.for_listing(mask, false, &cfg));
        for id in 1..=5 {
            c.put(id, 1, stamp(id), &[id as u8; 40]);
        }
        // Three fit; the others are written afresh each time.
        assert_eq!(c.jobs.len(), 3);
        assert_eq!(c.get(1, 1, &stamp(1)), Some(&[1u8; 40][..]));
        assert_eq!(c.get(5, 1, &stamp(5)), None);
        // A kept job written again replaces its bytes within the budget.
        c.put(1, 2, stamp(1), &[9; 40]);
        assert_eq!(c.get(1, 1, &stamp(1)), None);
        assert_eq!(c.get(1, 2, &stamp(1)), Some(&[9u8; 40][..]));
        assert_eq!(c.garbage, 40);
        // Another stamp is another record.
        let mut moved = stamp(2);
        moved.priority = 7;
        assert_eq!(c.get(2, 1, &moved), None);
        // Other fields, or another configuration: nothing kept.
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        assert!(c.jobs.is_empty() && c.held_with(0, 0) == 0);
        assert_eq!(c.budget, budget);
        c.put(3, 1, stamp(3), &[3; 40]);
        c.for_listing(JobMask::of(&[1]), false, &Arc::new(Config::default()));
        assert!(c.jobs.is_empty());
        // With details: nothing kept at all.
        c.put(3, 1, stamp(3), &[3; 40]);
        assert!(!c.for_listing(JobMask::of(&[1]), true, &cfg));
        assert!(c.jobs.is_empty() && c.held_with(0, 0) == 0);
    }

    #[test]
    fn jobs_gone_are_forgotten_and_the_gaps_closed() {
        let cfg = Arc::new(Config::default());
        let mut c = WireCache::default();
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        for id in 0..2000u32 {
            c.put(id, 1, stamp(id), &[id as u8; 100]);
        }
        // Within the slack (an eighth of the jobs, and 64): kept.
        c.tidy(1900, |id| id < 1900);
        assert_eq!(c.jobs.len(), 2000);
        // Past it: the gone ones dropped, and their bytes (more than half
        // the block) given back.
        c.tidy(900, |id| id % 2 == 0 && id < 1800);
        assert_eq!(c.jobs.len(), 900);
        assert_eq!((c.garbage, c.arena.len()), (0, 900 * 100));
        for id in (0..1800u32).step_by(2) {
            assert_eq!(c.get(id, 1, &stamp(id)), Some(&[id as u8; 100][..]));
        }
    }
}
