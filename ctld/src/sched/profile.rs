//! The time-resource profile backfill plans on: for every node, a step
//! function of what is free from `now` on. Running jobs give their
//! resources back at their expected end (start + time limit); planned
//! starts of higher-priority jobs take them for their time limit.
//! Reservations are kept apart as blocks, since who may use them differs
//! per job.

use super::place::{Avail, PlaceOpts};
use super::NodeSnap;

/// What is free from `t` until the next segment's `t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seg {
    t: i64,
    a: Avail,
}

/// Resources one job holds on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hold {
    pub cpus: u32,
    pub mem: u64,
    pub gres: u128,
}

/// [`Line::earliest`]'s answer: the start `t`, and the lengths it holds
/// for: every length in (lo, hi] (with no start: every length over lo).
/// Every start tried before `t` failed within its first `lo` seconds or
/// less, so a length over `lo` fails there the same way (and skips the
/// same starts); what fits from `t` on lasts `hi` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub t: Option<i64>,
    pub lo: i64,
    pub hi: i64,
}

impl Answer {
    fn none(lo: i64) -> Answer {
        Answer {
            t: None,
            lo,
            hi: i64::MAX,
        }
    }
}

/// [`Line::tail`]: from `f` (MAX: never) on, any length fits; before it,
/// no length over `g` does (MAX: no such bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    pub g: i64,
    pub f: i64,
}

/// One node's profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    segs: Vec<Seg>,
    /// Reservation blocks on this node: (start, end, reservation index).
    pub blocks: Vec<(i64, i64, usize)>,
    /// Nothing free ever shrinks from one segment to the next (only
    /// running jobs' ends so far, and takes from the first segment on):
    /// what is free over a window is then what is free at its start, so
    /// an earliest start does not depend on how long the job runs.
    monotone: bool,
}

thread_local! {
    /// The last pass's profiles on this thread, kept for their memory: a
    /// pass makes one per node, and most passes change few of them.
    static SPARE: std::cell::RefCell<Vec<Line>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Line {
    pub fn new(now: i64, n: &NodeSnap, opts: &PlaceOpts) -> Line {
        Line::from_avail(now, Avail::of(n), n, opts)
    }

    /// [`Line::new`] from what the node has free now (`a`).
    fn from_avail(now: i64, a: Avail, n: &NodeSnap, opts: &PlaceOpts) -> Line {
        // Room for a few running jobs' ends without growing.
        let mut l = Line {
            segs: Vec::with_capacity(8),
            blocks: Vec::new(),
            monotone: true,
        };
        l.reset(now, a, n, opts);
        l
    }

    /// The profile of node `n` with nothing planned: what is free now
    /// (`a`, [`Avail::of`] the node).
    fn reset(&mut self, now: i64, mut a: Avail, n: &NodeSnap, opts: &PlaceOpts) {
        if !opts.track_memory {
            a.mem = n.real_memory;
        }
        self.segs.clear();
        self.segs.push(Seg { t: now, a });
        self.blocks.clear();
        self.monotone = true;
    }

    /// A profile for every node ([`Line::new`]), from what each has free
    /// now (`avails`: [`Avail::of`] each, which the caller keeps too), in
    /// the memory of the profiles the last pass on this thread gave back
    /// ([`Line::recycle`]).
    pub fn for_nodes(
        now: i64,
        nodes: &[NodeSnap],
        avails: &[Avail],
        opts: &PlaceOpts,
    ) -> Vec<Line> {
        debug_assert_eq!(nodes.len(), avails.len());
        let mut lines = SPARE.with_borrow_mut(std::mem::take);
        lines.truncate(nodes.len());
        for ((l, n), &a) in lines.iter_mut().zip(nodes).zip(avails) {
            l.reset(now, a, n, opts);
        }
        let have = lines.len();
        lines.extend(
            nodes[have..]
                .iter()
                .zip(&avails[have..])
                .map(|(n, &a)| Line::from_avail(now, a, n, opts)),
        );
        lines
    }

    /// Profiles done with, kept for the next [`Line::for_nodes`].
    pub fn recycle(lines: Vec<Line>) {
        SPARE.with_borrow_mut(|spare| *spare = lines);
    }

    fn split(&mut self, t: i64) -> usize {
        match self.segs.binary_search_by(|s| s.t.cmp(&t)) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => {
                let s = Seg {
                    t,
                    a: self.segs[i - 1].a,
                };
                self.segs.insert(i, s);
                i
            }
        }
    }

    /// Index of the segment containing `t`.
    fn at(&self, t: i64) -> usize {
        match self.segs.binary_search_by(|s| s.t.cmp(&t)) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        }
    }

    /// Resources come back over [s, e) (a running job ending at `s`: e = MAX).
    pub fn give(&mut self, s: i64, e: i64, h: &Hold, track_memory: bool) {
        // Back for good keeps the steps rising; back for a while does not.
        self.monotone &= e == i64::MAX;
        let i = self.split(s);
        let j = if e == i64::MAX {
            self.segs.len()
        } else {
            self.split(e)
        };
        for seg in &mut self.segs[i..j] {
            seg.a.cpus += h.cpus;
            if track_memory {
                seg.a.mem += h.mem;
            }
            seg.a.gres_free |= h.gres;
            seg.a.jobs = seg.a.jobs.saturating_sub(1);
        }
    }

    /// Resources are taken over [s, e).
    pub fn take(&mut self, s: i64, e: i64, h: &Hold, track_memory: bool) {
        // Taken from the first segment on lowers every step up to `e`
        // alike; taken later, what is free drops at `s`.
        self.monotone &= s <= self.segs[0].t;
        let i = self.split(s);
        let j = if e == i64::MAX {
            self.segs.len()
        } else {
            self.split(e)
        };
        for seg in &mut self.segs[i..j] {
            seg.a.cpus = seg.a.cpus.saturating_sub(h.cpus);
            if track_memory {
                seg.a.mem = seg.a.mem.saturating_sub(h.mem);
            }
            seg.a.gres_free &= !h.gres;
            seg.a.jobs += 1;
        }
    }

    /// What is free throughout [s, e): the minimum of every segment it
    /// covers, devices free in all of them.
    pub fn window(&self, s: i64, e: i64) -> Avail {
        let mut i = self.at(s);
        let mut a = self.segs[i].a;
        i += 1;
        while i < self.segs.len() && self.segs[i].t < e {
            a = meet(a, self.segs[i].a);
            i += 1;
        }
        a
    }

    /// What is free at `t` (no less than any window starting at `t`).
    pub fn at_time(&self, t: i64) -> Avail {
        self.segs[self.at(t)].a
    }

    /// For ascending times, the segment containing each and what is free
    /// in it (as [`Line::at_time`]), in one walk.
    pub fn at_times<'a>(&'a self, times: &'a [i64]) -> impl Iterator<Item = (usize, Avail)> + 'a {
        let mut i = 0;
        times.iter().map(move |&t| {
            while i + 1 < self.segs.len() && self.segs[i + 1].t <= t {
                i += 1;
            }
            (i, self.segs[i].a)
        })
    }

    /// The first reservation block (not `own`) overlapping [s, e), by end.
    pub fn blocked(&self, s: i64, e: i64, own: Option<usize>) -> Option<i64> {
        self.blocks
            .iter()
            .filter(|(bs, be, r)| Some(*r) != own && *bs < e && *be > s)
            .map(|(_, be, _)| *be)
            .max()
    }

    /// The earliest `t` in [from, until] (rounded up to `res` after `now`)
    /// at which `fits` holds for all of [t, t + d), and no foreign
    /// reservation block is in the way; and the lengths that answer holds
    /// for (see [`Answer`]).
    #[allow(clippy::too_many_arguments)]
    pub fn earliest(
        &self,
        now: i64,
        res: i64,
        from: i64,
        until: i64,
        d: i64,
        own: Option<usize>,
        fits: &dyn Fn(&Avail) -> bool,
    ) -> Answer {
        let round = |t: i64| on_grid(now, res, t);
        let mut t = round(from.max(now));
        // The segment containing `t`: found once, then walked forward
        // (`t` only grows).
        let mut i = self.at(t);
        let mut lo = 0i64;
        while t <= until {
            let e = t.saturating_add(d);
            if let Some(be) = self.blocked(t, e, own) {
                // The same blocks are in the way of any length that
                // reaches the latest of their starts.
                let reach = self
                    .blocks
                    .iter()
                    .filter(|(bs, be, r)| Some(*r) != own && *bs < e && *be > t)
                    .map(|(bs, _, _)| bs.saturating_sub(t))
                    .max()
                    .unwrap_or(0);
                lo = lo.max(reach);
                t = round(be.max(t + 1));
                i = self.seek(i, t);
                continue;
            }
            let mut acc = self.segs[i].a;
            let mut j = i;
            let mut ok = fits(&acc);
            while ok && j + 1 < self.segs.len() && self.segs[j + 1].t < e {
                j += 1;
                let next = meet(acc, self.segs[j].a);
                // What fits `acc` fits it unchanged (most later segments
                // have more free, as running jobs end).
                if next != acc {
                    acc = next;
                    ok = fits(&acc);
                }
            }
            if ok {
                // Without blocks, a longer job starts there too while what
                // is free still fits it.
                let hi = if self.blocks.is_empty() {
                    self.fits_from(j, acc, fits).map_or(i64::MAX, |f| f - t)
                } else {
                    d
                };
                return Answer { t: Some(t), lo, hi };
            }
            // What fits lasted until segment j's start.
            if j > i {
                lo = lo.max(self.segs[j].t - t);
            }
            // A segment that fails alone rules out every start before its end.
            let next = if j > i && !fits(&self.segs[j].a) {
                j + 1
            } else {
                i + 1
            };
            let Some(s) = self.segs.get(next) else {
                return Answer::none(lo);
            };
            t = round(s.t.max(t + 1));
            i = self.seek(next, t);
        }
        Answer::none(lo)
    }

    /// Where what is free, met from segment `j` on (`acc` up to it), first
    /// stops fitting (None: never).
    fn fits_from(&self, j: usize, mut acc: Avail, fits: &dyn Fn(&Avail) -> bool) -> Option<i64> {
        for s in &self.segs[j + 1..] {
            let next = meet(acc, s.a);
            if next != acc {
                acc = next;
                if !fits(&acc) {
                    return Some(s.t);
                }
            }
        }
        None
    }

    /// The segment containing `t`, from segment `i` (at or before it) on.
    fn seek(&self, mut i: usize, t: i64) -> usize {
        while i + 1 < self.segs.len() && self.segs[i + 1].t <= t {
            i += 1;
        }
        i
    }

    /// What a profile without reservation blocks offers a request from
    /// `from` on (rounded up to `res` after `now`), for every length at
    /// once: None when it never fits at all.
    pub fn tail(
        &self,
        now: i64,
        res: i64,
        from: i64,
        fits: &dyn Fn(&Avail) -> bool,
    ) -> Option<Tail> {
        debug_assert!(self.blocks.is_empty());
        let round = |t: i64| on_grid(now, res, t);
        let t0 = round(from.max(now));
        let i0 = self.at(t0);
        // The first of the last segments that fit together (None: the last
        // does not fit): from its start on, any length fits.
        let (mut s, mut acc) = (None, None);
        for j in (i0..self.segs.len()).rev() {
            let a = acc.map_or(self.segs[j].a, |x| meet(x, self.segs[j].a));
            if !fits(&a) {
                break;
            }
            (s, acc) = (Some(j), Some(a));
        }
        let end = s.unwrap_or(self.segs.len());
        let f = match s {
            Some(s) if s > i0 => round(self.segs[s].t),
            Some(_) => t0,
            None => i64::MAX,
        };
        // Before it, runs of segments that each fit: a start in one may
        // last until the run ends (no longer; the meet may cut it shorter).
        let (mut any, mut g) = (f != i64::MAX, 0i64);
        let mut j = i0;
        while j < end {
            if !fits(&self.segs[j].a) {
                j += 1;
                continue;
            }
            let st = round(self.segs[j].t.max(t0));
            let mut k = j + 1;
            while k < end && fits(&self.segs[k].a) {
                k += 1;
            }
            if k == end && k < self.segs.len() {
                // The run reaches the last fitting ones (`f` is known):
                // no bound.
                g = i64::MAX;
                break;
            }
            let run_end = self.segs.get(k).map_or(i64::MAX, |x| x.t);
            if st < run_end {
                any = true;
                g = g.max(run_end.saturating_sub(st));
            }
            j = k;
        }
        if f == i64::MAX {
            g = i64::MAX;
        }
        any.then_some(Tail { g, f })
    }

    /// [`Line::earliest`]'s start for a [`Line::length_free`] profile (any
    /// length, no reservation): what is free only grows, so the first
    /// segment that fits holds from its start on.
    pub fn earliest_free(
        &self,
        now: i64,
        res: i64,
        from: i64,
        fits: &dyn Fn(&Avail) -> bool,
    ) -> Option<i64> {
        debug_assert!(self.length_free());
        let t0 = on_grid(now, res, from.max(now));
        let s = self.segs.iter().find(|s| fits(&s.a))?;
        Some(on_grid(now, res, s.t).max(t0))
    }

    /// Does [`Line::earliest`] answer the same whatever the job's length
    /// and reservation: nothing free shrinks over time and no reservation
    /// block is in the way.
    pub fn length_free(&self) -> bool {
        self.monotone && self.blocks.is_empty()
    }

    /// Start times of the segments in [from, until].
    pub fn breakpoints(&self, from: i64, until: i64) -> impl Iterator<Item = i64> + '_ {
        let first = self.segs.partition_point(|s| s.t < from);
        self.segs[first..]
            .iter()
            .map(|s| s.t)
            .take_while(move |t| *t <= until)
    }
}

/// `t` rounded up to the planning grid: every `res` seconds from `now`
/// (`t` itself at or before `now`).
pub fn on_grid(now: i64, res: i64, t: i64) -> i64 {
    if t <= now || res <= 1 {
        t
    } else {
        now + (t - now + res - 1) / res * res
    }
}

fn meet(a: Avail, b: Avail) -> Avail {
    Avail {
        cpus: a.cpus.min(b.cpus),
        mem: a.mem.min(b.mem),
        gres_free: a.gres_free & b.gres_free,
        jobs: a.jobs.max(b.jobs),
    }
}

/// No resources at all (a node blocked for a job).
pub const NOTHING: Avail = Avail {
    cpus: 0,
    mem: 0,
    gres_free: 0,
    jobs: u32::MAX,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cpus: u32) -> Line {
        let n = crate::sched::tests::node(cpus, 1000, 0);
        Line::new(100, &n, &PlaceOpts::default())
    }

    fn hold(cpus: u32) -> Hold {
        Hold {
            cpus,
            mem: 0,
            gres: 0,
        }
    }

    /// Profiles made from the last pass's memory are those made afresh,
    /// whatever that pass planned on them and however many nodes it had.
    #[test]
    fn recycled_profiles_are_new_ones() {
        use crate::sched::tests::node;
        let opts = PlaceOpts::default();
        let first: Vec<_> = (1..=5).map(|c| node(c * 4, 1000, 2)).collect();
        let avails: Vec<Avail> = first.iter().map(Avail::of).collect();
        let mut lines = Line::for_nodes(100, &first, &avails, &opts);
        for l in &mut lines {
            l.take(150, 400, &hold(2), true);
            l.give(300, i64::MAX, &hold(1), true);
            l.blocks.push((200, 500, 0));
        }
        Line::recycle(lines);
        for count in [3, 7] {
            let nodes: Vec<_> = (1..=count)
                .map(|c| node(c * 8, 500 * c as u64, 0))
                .collect();
            let avails: Vec<Avail> = nodes.iter().map(Avail::of).collect();
            let got = Line::for_nodes(700, &nodes, &avails, &opts);
            let fresh: Vec<_> = nodes.iter().map(|n| Line::new(700, n, &opts)).collect();
            assert_eq!(got, fresh);
            Line::recycle(got);
        }
    }

    /// A tail says what [`Line::earliest`] answers: none at all when it
    /// has none, and for any length over `g`, from any time on, the later
    /// of that time and `f` (on random profiles, devices included).
    #[test]
    fn tails_answer_as_earliest() {
        use crate::sched::synth::Rng;
        let now = 100;
        for seed in 1..=300u64 {
            let mut rng = Rng::new(seed);
            let mut l = line(16);
            l.segs[0].a.gres_free = 0b1111;
            for _ in 0..rng.range(0, 6) {
                let s = now + rng.range(0, 3000) as i64;
                let e = if rng.range(0, 2) == 0 {
                    i64::MAX
                } else {
                    s + rng.range(1, 3000) as i64
                };
                let h = Hold {
                    cpus: rng.range(0, 12) as u32,
                    mem: 0,
                    gres: 1 << rng.range(0, 3),
                };
                if e == i64::MAX {
                    l.take(now, s, &h, true);
                } else {
                    l.take(s, e, &h, true);
                }
            }
            let (need, gpus) = (rng.range(1, 16) as u32, rng.range(0, 3));
            let fits = |a: &Avail| a.cpus >= need && a.gres_free.count_ones() as u64 >= gpus;
            let res = rng.pick(&[1i64, 60]);
            let start = now + rng.range(0, 500) as i64;
            let first = l.earliest(now, res, start, i64::MAX, 1, None, &fits).t;
            let Some(t) = l.tail(now, res, start, &fits) else {
                assert_eq!(first, None, "seed {seed}");
                continue;
            };
            assert!(first.is_some(), "seed {seed}");
            for _ in 0..20 {
                let from = start + rng.range(0, 4000) as i64;
                let d = t.g.saturating_add(rng.range(1, 5000) as i64);
                if t.f == i64::MAX || d == i64::MAX {
                    continue;
                }
                let want = on_grid(now, res, from).max(t.f);
                let got = l.earliest(now, res, from, i64::MAX, d, None, &fits).t;
                assert_eq!(got, Some(want), "seed {seed} from {from} d {d}");
            }
        }
    }

    /// Running jobs' ends and takes from `now` on keep a line's steps
    /// rising, and its earliest start the same whatever the length; a
    /// take later on (a planned start) or a give for a while do not.
    #[test]
    fn length_free_lines() {
        let fits8 = |a: &Avail| a.cpus >= 8;
        let mut l = line(0);
        l.give(200, i64::MAX, &hold(4), true);
        l.give(300, i64::MAX, &hold(4), true);
        l.take(100, 400, &hold(0), true);
        assert!(l.length_free());
        for d in [1, 50, 10_000] {
            assert_eq!(
                l.earliest(100, 1, 100, 10_000, d, None, &fits8).t,
                Some(300)
            );
        }
        assert_eq!(l.breakpoints(150, 300).collect::<Vec<_>>(), vec![200, 300]);
        assert_eq!(l.breakpoints(201, 299).count(), 0);

        let mut planned = l.clone();
        planned.take(500, 600, &hold(8), true);
        assert!(!planned.length_free());
        assert_eq!(
            planned.earliest(100, 1, 100, 10_000, 100, None, &fits8).t,
            Some(300)
        );
        assert_eq!(
            planned.earliest(100, 1, 100, 10_000, 300, None, &fits8).t,
            Some(600)
        );

        let mut lent = l.clone();
        lent.give(100, 150, &hold(8), true);
        assert!(!lent.length_free());

        let mut blocked = l;
        blocked.blocks.push((0, 350, 0));
        assert!(!blocked.length_free());
    }

    /// The lengths [`Line::earliest`] says an answer holds for: on
    /// random profiles (ends, planned takes, lent resources, reservation
    /// blocks), every length in (lo, d] gets the same answer, and none
    /// holds for every length over lo.
    #[test]
    fn an_answer_holds_for_the_lengths_it_says() {
        let mut rng = crate::sched::synth::Rng::new(7);
        for _ in 0..300 {
            let mut l = line(rng.range(0, 16) as u32);
            for _ in 0..rng.range(0, 6) {
                let s = 100 + rng.range(0, 5_000) as i64;
                l.give(s, i64::MAX, &hold(rng.range(1, 8) as u32), true);
            }
            for _ in 0..rng.range(0, 5) {
                let s = 100 + rng.range(0, 5_000) as i64;
                let e = s + rng.range(1, 3_000) as i64;
                if rng.range(0, 3) == 0 {
                    l.give(s, e, &hold(rng.range(1, 8) as u32), true);
                } else {
                    l.take(s, e, &hold(rng.range(1, 16) as u32), true);
                }
            }
            if rng.range(0, 4) == 0 {
                let s = 100 + rng.range(0, 5_000) as i64;
                l.blocks.push((s, s + rng.range(1, 2_000) as i64, 0));
            }
            let need = rng.range(1, 20) as u32;
            let fits = move |a: &Avail| a.cpus >= need;
            let res = rng.pick(&[1i64, 60]);
            let from = 100 + rng.range(0, 3_000) as i64;
            let until = from + rng.range(0, 8_000) as i64;
            let d = rng.range(1, 4_000) as i64;
            let Answer { t: r, lo, hi } = l.earliest(100, res, from, until, d, None, &fits);
            assert!(lo < d && d <= hi);
            let top = hi.min(d + 8_000);
            for d2 in (lo + 1)..=top {
                let r2 = l.earliest(100, res, from, until, d2, None, &fits).t;
                assert_eq!(r2, r, "length {d2} in ({lo}, {hi}]: {l:?}");
            }
            // Past hi, the answer is another one (with blocks, hi is
            // only the length asked for).
            if r.is_some() && hi < d + 8_000 && l.blocks.is_empty() {
                let past = l.earliest(100, res, from, until, hi + 1, None, &fits).t;
                assert_ne!(past, r, "length {} past {hi}: {l:?}", hi + 1);
            }
        }
    }
}
