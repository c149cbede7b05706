//! Each listed job's encoding, kept between listings (`jobwire.rs` uses
//! it): the bytes a job's record encodes to are sent again while nothing
//! they show has moved. Pure: a list of entries and one block of bytes.
//!
//! Listings visit jobs in ascending id order, and the entries are kept
//! in that order, their bytes one after another: a listing reads both
//! front to back (a hash map's lookups, one cache miss a job, were a
//! quarter of the controller's time per `squeue` at 10,000 jobs).

use std::sync::Arc;

use drover_conf::Config;
use drover_proto::jobmask::JobMask;
use drover_proto::JobStamp;

/// At most this much memory (the entries and the block, as allocated) is
/// kept for listings without details. squeue's default fields take about
/// 160 bytes a job (120 for the entry, 40 of encoding: about 24 MiB
/// allocated at 110,000 jobs).
const BUDGET: usize = 32 << 20;

/// The same for listings with details (`squeue --json`: about 330 bytes a
/// job, entry and encoding; ~6 MiB allocated at 10,000 jobs, growing by
/// doubling; past ~25,000 jobs only some are kept).
pub const DETAILED_BUDGET: usize = 8 << 20;

/// An entry's size.
const SLOT: usize = std::mem::size_of::<Encoded>();

/// Each listed job's encoding (field 1 of the answer, key and length
/// included) as the last listing wrote it, for the fields, details and
/// configuration that listing had. The controller keeps one for listings
/// without details and one for those with (`squeue` and `squeue --json`
/// in turn would otherwise drop each other's).
pub struct WireCache {
    made_for: Option<(JobMask, bool, Arc<Config>)>,
    /// Ascending by job id.
    jobs: Vec<Encoded>,
    /// Jobs written during a listing whose ids fall before the last kept
    /// one; merged into `jobs` by [`WireCache::tidy`], which ends every
    /// listing.
    late: Vec<Encoded>,
    /// Where the next look-up starts.
    cursor: usize,
    /// The kept jobs' bytes, one after another (in one block: no small
    /// allocation per job to scatter the heap). A job written again
    /// leaves its old bytes behind as garbage until [`WireCache::tidy`].
    arena: Vec<u8>,
    garbage: usize,
    /// The most allocated ([`WireCache::held_with`]).
    budget: usize,
    /// The last listing's size: what the next answer reserves.
    pub last_answer: usize,
}

impl Default for WireCache {
    fn default() -> WireCache {
        WireCache {
            made_for: None,
            jobs: Vec::new(),
            late: Vec::new(),
            cursor: 0,
            arena: Vec::new(),
            garbage: 0,
            budget: BUDGET,
            last_answer: 0,
        }
    }
}

/// One job's bytes (`arena[at..at + len]`), and what they were written
/// from.
struct Encoded {
    id: u32,
    at: u32,
    len: u32,
    seq: u64,
    stamp: JobStamp,
}

/// Where a job's bytes written now go.
enum Place {
    /// Over its kept entry (`jobs[i]`).
    Kept(usize),
    /// After the last kept job.
    Last,
    /// Before it: into `late`, until the listing ends.
    Late,
}

impl WireCache {
    /// A cache that holds at most `budget` bytes.
    pub fn with_budget(budget: usize) -> WireCache {
        WireCache {
            budget,
            ..Default::default()
        }
    }

    /// Ready for a listing of these fields and details: what was written
    /// for others, or under another configuration, is dropped. (Holding
    /// the configuration, the cache makes an in-place edit of it a new one.)
    pub fn for_listing(&mut self, mask: JobMask, details: bool, cfg: &Arc<Config>) {
        let same = self
            .made_for
            .as_ref()
            .is_some_and(|(m, d, c)| *m == mask && *d == details && Arc::ptr_eq(c, cfg));
        if !same {
            *self = WireCache {
                made_for: Some((mask, details, cfg.clone())),
                budget: self.budget,
                last_answer: self.last_answer,
                ..Default::default()
            };
        }
        self.cursor = 0;
    }

    /// Where job `id` is, or would go, in `jobs`: at the cursor for a
    /// listing's next job, a few steps on for jobs filtered out, else
    /// by halving. The cursor moves past it.
    fn position(&mut self, id: u32) -> Result<usize, usize> {
        let jobs = &self.jobs;
        let from = self.cursor.min(jobs.len());
        let found = if from == 0 || jobs[from - 1].id < id {
            let near = jobs[from..].iter().take(8).position(|e| e.id >= id);
            let i = match near {
                Some(k) => from + k,
                None => from + jobs[from..].partition_point(|e| e.id < id),
            };
            if jobs.get(i).is_some_and(|e| e.id == id) {
                Ok(i)
            } else {
                Err(i)
            }
        } else {
            jobs.binary_search_by_key(&id, |e| e.id)
        };
        self.cursor = match found {
            Ok(i) => i + 1,
            Err(i) => i,
        };
        found
    }

    /// The job's kept bytes, if written at this change number and stamp.
    pub fn get(&mut self, id: u32, seq: u64, stamp: &JobStamp) -> Option<&[u8]> {
        let i = self.position(id).ok()?;
        let e = &self.jobs[i];
        (e.seq == seq && e.stamp == *stamp)
            .then(|| &self.arena[e.at as usize..(e.at + e.len) as usize])
    }

    /// The memory the entries and the block would take with `listed` more
    /// entries in order, `late` more out of order and `bytes` more bytes
    /// (all grow as `Vec`s do: by doubling, from 4 entries or 8 bytes).
    fn held_with(&self, listed: usize, late: usize, bytes: usize) -> usize {
        let grown = |len: usize, cap: usize, least: usize| {
            if len > cap {
                len.max(2 * cap).max(least)
            } else {
                cap
            }
        };
        let entries = grown(self.jobs.len() + listed, self.jobs.capacity(), 4)
            + grown(self.late.len() + late, self.late.capacity(), 4);
        entries * SLOT + grown(self.arena.len() + bytes, self.arena.capacity(), 8)
    }

    /// Keep the job's bytes, within the budget ([`BUDGET`]).
    pub fn put(&mut self, id: u32, seq: u64, stamp: JobStamp, bytes: &[u8]) {
        // Just looked up (`get` moved the cursor past it), or found now.
        let at_cursor =
            (self.cursor.checked_sub(1)).filter(|&i| self.jobs.get(i).is_some_and(|e| e.id == id));
        let place = match at_cursor.map_or_else(|| self.position(id), Ok) {
            Ok(i) => Place::Kept(i),
            Err(i) if i == self.jobs.len() => Place::Last,
            Err(_) => Place::Late,
        };
        let old = match place {
            Place::Kept(i) => self.jobs[i].len as usize,
            Place::Last | Place::Late => 0,
        };
        let Ok(at) = u32::try_from(self.arena.len()) else {
            return;
        };
        let Ok(len) = u32::try_from(bytes.len()) else {
            return;
        };
        let listed = usize::from(matches!(place, Place::Last));
        let late = usize::from(matches!(place, Place::Late));
        if self.held_with(listed, late, bytes.len()) > self.budget || at.checked_add(len).is_none()
        {
            return;
        }
        self.arena.extend_from_slice(bytes);
        self.garbage += old;
        let e = Encoded {
            id,
            at,
            len,
            seq,
            stamp,
        };
        match place {
            Place::Kept(i) => self.jobs[i] = e,
            Place::Last => {
                self.jobs.push(e);
                self.cursor = self.jobs.len();
            }
            Place::Late => self.late.push(e),
        }
    }

    /// After a listing: the jobs written out of order put in their
    /// places; the bytes of jobs no longer known (of `total`) dropped once
    /// the cache holds an eighth more than there are jobs; the gaps closed
    /// once half the block is garbage (which also lays the bytes out in
    /// id order again).
    pub fn tidy(&mut self, total: usize, known: impl Fn(u32) -> bool) {
        if !self.late.is_empty() {
            self.jobs.append(&mut self.late);
            self.jobs.sort_unstable_by_key(|e| e.id);
        }
        if self.jobs.len() > total + total / 8 + 64 {
            let mut gone = 0;
            self.jobs.retain(|e| {
                let keep = known(e.id);
                if !keep {
                    gone += e.len as usize;
                }
                keep
            });
            self.garbage += gone;
        }
        if self.garbage > 64 * 1024 && self.garbage * 2 > self.arena.len() {
            let mut arena = Vec::with_capacity(self.arena.len() - self.garbage);
            for e in &mut self.jobs {
                let at = arena.len() as u32;
                arena.extend_from_slice(&self.arena[e.at as usize..(e.at + e.len) as usize]);
                e.at = at;
            }
            self.arena = arena;
            self.garbage = 0;
        }
        self.cursor = 0;
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
        // Room for four entries (a list's first allocation; eight would not
        // fit) and a block of 320 bytes: four jobs of 40, and a job's bytes
        // written again.
        const { assert!(4 * SLOT > 320) };
        let budget = 4 * SLOT + 320;
        let mut c = WireCache::with_budget(budget);
        c.for_listing(mask, false, &cfg);
        for id in 1..=5 {
            c.put(id, 1, stamp(id), &[id as u8; 40]);
        }
        // Four fit; the others are written afresh each time.
        assert_eq!(c.jobs.len(), 4);
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
        assert!(c.jobs.is_empty() && c.held_with(0, 0, 0) == 0);
        assert_eq!(c.budget, budget);
        c.put(3, 1, stamp(3), &[3; 40]);
        c.for_listing(JobMask::of(&[1]), false, &Arc::new(Config::default()));
        assert!(c.jobs.is_empty());
        // With details: another listing, kept as well.
        c.put(3, 1, stamp(3), &[3; 40]);
        c.for_listing(JobMask::of(&[1]), true, &cfg);
        assert!(c.jobs.is_empty() && c.held_with(0, 0, 0) == 0);
        c.put(3, 1, stamp(3), &[4; 40]);
        c.tidy(1, |_| true);
        c.for_listing(JobMask::of(&[1]), true, &cfg);
        assert_eq!(c.get(3, 1, &stamp(3)), Some(&[4u8; 40][..]));
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

    #[test]
    fn jobs_written_out_of_order_take_their_places() {
        let cfg = Arc::new(Config::default());
        let mut c = WireCache::default();
        let bytes = |id: u32| [id as u8; 10];
        // A filtered listing keeps 2, 4 and 6.
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        for id in [2, 4, 6] {
            assert_eq!(c.get(id, 1, &stamp(id)), None);
            c.put(id, 1, stamp(id), &bytes(id));
        }
        c.tidy(10, |_| true);
        // A whole listing: the kept ones found, the others written (1, 3
        // and 5 before the last kept job, 7 after it), 4 written again.
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        for id in 1..=7u32 {
            let seq = if id == 4 { 2 } else { 1 };
            match c.get(id, seq, &stamp(id)) {
                Some(b) => assert!(id % 2 == 0 && id != 4 && b == bytes(id)),
                None => {
                    assert!(id % 2 == 1 || id == 4);
                    c.put(id, seq, stamp(id), &bytes(id));
                }
            }
        }
        assert_eq!(c.late.len(), 3);
        c.tidy(10, |_| true);
        assert!(c.late.is_empty());
        let ids: Vec<u32> = c.jobs.iter().map(|e| e.id).collect();
        assert_eq!(ids, (1..=7).collect::<Vec<_>>());
        // Every one found, in order, out of order, and past the end.
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        for id in (1..=7u32).chain([5, 2, 7, 1]) {
            let seq = if id == 4 { 2 } else { 1 };
            assert_eq!(c.get(id, seq, &stamp(id)), Some(&bytes(id)[..]), "{id}");
        }
        assert_eq!(c.get(8, 1, &stamp(8)), None);
        assert_eq!(c.get(0, 1, &stamp(0)), None);
    }
}
