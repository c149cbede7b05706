//! A multi-node plan's sweeps without looking at every node: each node's
//! earliest time to hold a number of tasks of a request, sorted once per
//! pass.
//!
//! A node whose profile is length-free (only running jobs' ends and takes
//! from `now` on, no reservation block) holds the tasks from the first
//! segment that has room on, so its earliest start from `from` is the
//! larger of `from` (rounded to the grid, as every start is) and its
//! earliest start from `now`; sorted by the latter once, the sweep for any
//! `from` reads a prefix. Nodes whose profile has changed since, or that
//! were not length-free then, are asked one by one as before. The answers
//! are those of asking every node (the planner's decisions do not change).

use super::memo::Memos;
use super::{FxMap, Pass};
use crate::sched::place::Avail;
use crate::sched::profile::on_grid;
use crate::sched::Request;

/// What a pass has changed in a node's profile: a take or a give over
/// [s, e) on node `node` (e = MAX: for good).
#[derive(Clone, Copy)]
pub(in crate::sched) struct Change {
    pub node: usize,
    pub s: i64,
    pub e: i64,
}

/// A node's part in a [`Sorted`] sweep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Not one of the candidates.
    Out,
    /// Its entry in `lf` holds.
    Sorted,
    /// Asked one by one.
    Asked,
}

/// One request's sweep over one set of candidates, for a pass.
pub(in crate::sched) struct Sorted {
    /// (earliest start from now, node) of the nodes length-free when
    /// built, ascending; only those still [`Part::Sorted`] count.
    lf: Vec<(i64, usize)>,
    /// The other candidates, asked one by one, by key.
    asked: Vec<Asked>,
    part: Vec<Part>,
    /// Per node, no answer is earlier (MIN: nothing known): a length-free
    /// node's answer when built stays a bound, as a pass only takes
    /// resources (until a preemption, which empties the pass's memos).
    bound: Vec<i64>,
    /// How much of the pass's change log is accounted for.
    seen: usize,
    /// Entries of `lf` no longer [`Part::Sorted`].
    dead: usize,
}

/// A node of a sweep asked one by one (its profile changed since the
/// sweep was built, or was not length-free then).
#[derive(Clone, Copy)]
struct Asked {
    /// No answer of the node is earlier.
    key: i64,
    /// The node's [`Tail`](crate::sched::profile::Tail), as read at
    /// profile version `ver` (MAX: not read).
    g: i64,
    f: i64,
    node: u32,
    ver: u32,
}

impl Asked {
    fn new(key: i64, node: usize) -> Asked {
        Asked {
            key,
            g: i64::MAX,
            f: i64::MAX,
            node: node as u32,
            ver: u32::MAX,
        }
    }

    fn node(&self) -> usize {
        self.node as usize
    }

    fn order(&self) -> (i64, u32) {
        (self.key, self.node)
    }
}

/// One sweep's question: each candidate's earliest start in [from,
/// until] for a job of length `d` (in reservation `own`) that `fits` a
/// node's offer.
pub(in crate::sched) struct Search<'f> {
    pub from: i64,
    pub until: i64,
    pub d: i64,
    pub own: Option<usize>,
    pub fits: &'f dyn Fn(usize, &Avail) -> bool,
}

impl Search<'_> {
    /// Node `i`'s answer, through the memos.
    fn ask(&self, pass: &Pass, i: usize, memos: &mut Memos) -> Option<i64> {
        let fits = self.fits;
        pass.node_earliest(i, memos, self.from, self.until, self.d, self.own, &|a| {
            fits(i, a)
        })
    }
}

impl Sorted {
    /// The sorted nodes' answers from `floor` (a rounded `from`) no later
    /// than `lim`, ascending: each the later of `floor` and its own.
    fn sorted_answers(&self, floor: i64, lim: i64) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.sorted_from(0, floor, lim)
    }

    /// [`Sorted::sorted_answers`] from entry `li` of `lf` on.
    fn sorted_from(
        &self,
        li: usize,
        floor: i64,
        lim: i64,
    ) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.lf[li..]
            .iter()
            .take_while(move |x| x.0.max(floor) <= lim)
            .filter(|x| self.part[x.1] == Part::Sorted)
            .map(move |&(r, i)| (i, r.max(floor)))
    }

    /// The nodes asked one by one that may answer by `lim`, by key (the
    /// others' answers would be later).
    fn asked_by(&self, floor: i64, lim: i64) -> impl Iterator<Item = &Asked> + '_ {
        self.asked
            .iter()
            .take_while(move |x| x.key.max(floor) <= lim)
    }
}

/// A pass's sorted sweeps: by request number, tasks per node, partition
/// and reservation (which decide the candidates).
pub(in crate::sched) type SortedSweeps = FxMap<(u32, u32, usize, Option<usize>), Sorted>;

/// The answers of one sweep: each candidate's earliest start in
/// [from, until], if any.
pub(in crate::sched) struct Answers<'s> {
    sorted: &'s Sorted,
    /// `from` rounded to the grid: no sorted node starts before it.
    floor: i64,
    until: i64,
    /// The nodes asked one by one that have an answer.
    asked: Vec<(usize, i64)>,
}

impl Answers<'_> {
    /// The sorted nodes' answers no later than `t`, ascending.
    fn sorted_upto(&self, t: i64) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.sorted.sorted_answers(self.floor, t.min(self.until))
    }

    /// The k-th smallest answer (k from 1).
    pub fn kth(&self, k: usize) -> Option<i64> {
        // Only the first k sorted answers can be among the k smallest.
        let mut v: Vec<i64> = self.sorted_upto(i64::MAX).take(k).map(|x| x.1).collect();
        v.extend(self.asked.iter().map(|x| x.1));
        let k = k.checked_sub(1).filter(|&k| k < v.len())?;
        Some(*v.select_nth_unstable(k).1)
    }

    /// How many nodes have an answer, counting no further than `cap`.
    pub fn count(&self, cap: usize) -> usize {
        let asked = self.asked.len().min(cap);
        asked + self.sorted_upto(i64::MAX).take(cap - asked).count()
    }

    /// The nodes that can start by `t`, with their answers (in no set
    /// order).
    pub fn by(&self, t: i64) -> Vec<(usize, i64)> {
        let mut v: Vec<(usize, i64)> = self.sorted_upto(t).collect();
        v.extend(self.asked.iter().copied().filter(|x| x.1 <= t));
        v
    }
}

impl Pass<'_> {
    /// Build the sorted sweep of `req` for `want` tasks per node over
    /// `cands` (less the nodes it excludes).
    pub(super) fn sorted_sweep(
        &self,
        req: &Request,
        cands: &[usize],
        fits: &dyn Fn(usize, &Avail) -> bool,
    ) -> Sorted {
        let n = self.inp.nodes.len();
        let now = self.inp.now;
        let res = self.res();
        let mut part = vec![Part::Out; n];
        let mut bound = vec![i64::MIN; n];
        let mut lf = Vec::with_capacity(cands.len());
        let mut asked = Vec::new();
        for &i in cands {
            if req.excluded.contains(&i) || part[i] != Part::Out {
                continue;
            }
            let line = &self.lines[i];
            if !line.length_free() {
                part[i] = Part::Asked;
                asked.push(Asked::new(i64::MIN, i));
                continue;
            }
            let from = now.max(self.inp.nodes[i].ready);
            let t = line.earliest_free(now, res, from, &|a| fits(i, a));
            debug_assert_eq!(
                t,
                line.earliest(now, res, from, i64::MAX, 1, None, &|a| fits(i, a))
                    .t
            );
            // A node that never holds the tasks never will this pass.
            if let Some(t) = t {
                part[i] = Part::Sorted;
                lf.push((t, i));
                bound[i] = t;
            }
        }
        lf.sort_unstable();
        asked.sort_unstable_by_key(Asked::order);
        Sorted {
            lf,
            asked,
            part,
            bound,
            seen: self.changes.len(),
            dead: 0,
        }
    }

    /// The nodes changed since `s` was last brought up to date join those
    /// asked one by one, in order of their bounds.
    fn catch_up(&self, s: &mut Sorted) {
        for c in &self.changes[s.seen..] {
            if s.part[c.node] == Part::Sorted {
                s.part[c.node] = Part::Asked;
                s.dead += 1;
                let x = Asked::new(s.bound[c.node], c.node);
                let k = s.asked.partition_point(|y| y.order() < x.order());
                s.asked.insert(k, x);
            }
        }
        s.seen = self.changes.len();
        // Every search reads `lf` from its start: the entries left behind
        // are dropped once they are many.
        if s.dead > 8 && s.dead * 8 > s.lf.len() {
            let part = &s.part;
            s.lf.retain(|x| part[x.1] == Part::Sorted);
            s.dead = 0;
        }
    }

    /// `from` rounded up to the planning grid.
    fn floor(&self, from: i64) -> i64 {
        on_grid(self.inp.now, self.res(), from)
    }

    /// The k-th smallest answer (k from 1) of a search, asking only the
    /// nodes whose bound could put them among the first k.
    pub(super) fn sweep_kth(
        &self,
        s: &mut Sorted,
        memos: &mut Memos,
        q: &Search,
        k: usize,
    ) -> Option<i64> {
        self.kth_answer(s, memos, q, k, None)
    }

    /// [`Pass::sweep_kth`], and the nodes whose answer is no later than
    /// it, with their answers (in no set order): those the sweep saw on
    /// its way, and the few it had not reached.
    pub(super) fn sweep_kth_by(
        &self,
        s: &mut Sorted,
        memos: &mut Memos,
        q: &Search,
        k: usize,
    ) -> Option<(i64, Vec<(usize, i64)>)> {
        let mut by = Vec::new();
        let t = self.kth_answer(s, memos, q, k, Some(&mut by))?;
        Some((t, by))
    }

    /// [`Pass::sweep_kth`]; with `by`, also what [`Pass::sweep_kth_by`]
    /// gives.
    fn kth_answer(
        &self,
        s: &mut Sorted,
        memos: &mut Memos,
        q: &Search,
        k: usize,
        mut by: Option<&mut Vec<(usize, i64)>>,
    ) -> Option<i64> {
        if k == 0 {
            return None;
        }
        self.catch_up(s);
        let floor = self.floor(q.from);
        let lim = q.until;
        // The next entries of `lf` and `asked` to look at.
        let (mut li, mut p) = (0usize, 0usize);
        // A node whose answer cannot come before `past` (nor at it, with
        // `at_too`) is not asked: answering later than the k-th so far, it
        // changes nothing, nor what `by` keeps.
        let beyond = |memos: &Memos, e: &Asked, past: i64, at_too: bool| {
            let b = match self.exact(e, q, floor) {
                Some(t) => t.unwrap_or(i64::MAX),
                None => Pass::node_bound(memos, e.node(), q.from, q.d),
            };
            b > past || (at_too && b == past)
        };
        // The k smallest answers so far, as a max-heap.
        let mut best: std::collections::BinaryHeap<i64> = std::collections::BinaryHeap::new();
        loop {
            while s.lf.get(li).is_some_and(|x| s.part[x.1] != Part::Sorted) {
                li += 1;
            }
            let next_sorted = s.lf.get(li).map(|x| x.0.max(floor)).filter(|&t| t <= lim);
            let next_bound = s
                .asked
                .get(p)
                .map(|e| e.key.max(floor))
                .filter(|&b| b <= lim);
            let next = match (next_sorted, next_bound) {
                (None, None) => break,
                (a, b) => a.unwrap_or(i64::MAX).min(b.unwrap_or(i64::MAX)),
            };
            if best.len() == k && best.peek().is_some_and(|&m| m <= next) {
                break;
            }
            let ns = next_sorted.unwrap_or(i64::MAX);
            let (i, t) = if next_bound.is_some_and(|b| b <= ns) {
                if let Some(m) = best.peek().copied().filter(|_| best.len() == k) {
                    // The run of nodes to be asked before the next sorted
                    // one, short of the k-th so far, that their bounds put
                    // past it: passed over in one go (most of a sweep).
                    let at_too = by.is_none();
                    let mut skipped = false;
                    while let Some(e) = s.asked.get(p) {
                        let b = e.key.max(floor);
                        if b > ns || b >= m || !beyond(memos, e, m, at_too) {
                            break;
                        }
                        p += 1;
                        skipped = true;
                    }
                    if skipped {
                        continue;
                    }
                }
                if s.asked[p].ver != self.ver[s.asked[p].node()] && self.refresh(s, p, q) {
                    // It left: look again.
                    continue;
                }
                let e = s.asked[p];
                p += 1;
                match self.answer(&e, q, floor, memos) {
                    Some(t) => (e.node(), t),
                    None => continue,
                }
            } else {
                let (r, i) = s.lf[li];
                li += 1;
                (i, r.max(floor))
            };
            if let Some(by) = by.as_deref_mut() {
                by.push((i, t));
            }
            if best.len() < k {
                best.push(t);
            } else if best.peek().is_some_and(|&m| t < m) {
                best.pop();
                best.push(t);
            }
        }
        let kth = (best.len() == k).then(|| best.peek().copied()).flatten()?;
        if let Some(by) = by {
            // The nodes not reached that may still answer by then.
            by.extend(s.sorted_from(li, floor, lim).take_while(|x| x.1 <= kth));
            for e in s.asked[p..].iter().take_while(|e| e.key.max(floor) <= kth) {
                if beyond(memos, e, kth, false) {
                    continue;
                }
                if let Some(t) = self.answer(e, q, floor, memos) {
                    by.push((e.node(), t));
                }
            }
            by.retain(|x| x.1 <= kth);
        }
        Some(kth)
    }

    /// A node's answer known without asking: its tail read at its
    /// profile's present version, and the search's length over what any
    /// start before the tail holds (None: it must be asked).
    fn exact(&self, e: &Asked, q: &Search, floor: i64) -> Option<Option<i64>> {
        (e.ver == self.ver[e.node()] && q.d > e.g)
            .then(|| Some(e.f.max(floor)).filter(|&t| t <= q.until))
    }

    /// A node's answer: [`Pass::exact`], else asked.
    fn answer(&self, e: &Asked, q: &Search, floor: i64, memos: &mut Memos) -> Option<i64> {
        let Some(t) = self.exact(e, q, floor) else {
            return q.ask(self, e.node(), memos);
        };
        debug_assert_eq!(t, {
            let i = e.node();
            let from = q.from.max(self.inp.nodes[i].ready);
            let res = self.res();
            let fits = q.fits;
            self.lines[i]
                .earliest(self.inp.now, res, from, q.until, q.d, q.own, &|a| {
                    fits(i, a)
                })
                .t
                .filter(|_| from <= q.until)
        });
        t
    }

    /// Entry `p`'s tail read afresh (its node changed since it was last
    /// read); the node leaves the sweep if nothing fits it any more this
    /// pass. True: it left (the entry at `p` is the next one).
    fn refresh(&self, s: &mut Sorted, p: usize, q: &Search) -> bool {
        let e = s.asked[p];
        let i = e.node();
        let line = &self.lines[i];
        let ver = self.ver[i];
        if !line.blocks.is_empty() {
            // (Blocks depend on the job: always asked.)
            s.asked[p].ver = ver;
            return false;
        }
        let now = self.inp.now;
        let res = self.res();
        let fits = q.fits;
        let from = now.max(self.inp.nodes[i].ready);
        let Some(tail) = line.tail(now, res, from, &|a| fits(i, a)) else {
            s.asked.remove(p);
            s.part[i] = Part::Out;
            return true;
        };
        s.asked[p].ver = ver;
        s.asked[p].g = tail.g;
        s.asked[p].f = tail.f;
        false
    }

    /// The nodes whose answer to a search is `t` (the earliest of all: a
    /// node asked one by one answers no sooner than its bound).
    pub(super) fn starting_at(
        &self,
        s: &mut Sorted,
        memos: &mut Memos,
        q: &Search,
        t: i64,
    ) -> Vec<usize> {
        self.catch_up(s);
        let floor = self.floor(q.from);
        let mut at: Vec<usize> = s
            .sorted_answers(floor, t)
            .filter(|x| x.1 == t)
            .map(|x| x.0)
            .collect();
        for e in s.asked_by(floor, t) {
            if self.answer(e, q, floor, memos) == Some(t) {
                at.push(e.node());
            }
        }
        at
    }

    /// A sweep's answers to a search: the nodes changed since it was
    /// built join those asked one by one.
    pub(super) fn sweep<'s>(
        &self,
        s: &'s mut Sorted,
        memos: &mut Memos,
        q: &Search,
    ) -> Answers<'s> {
        self.catch_up(s);
        let floor = self.floor(q.from);
        let asked: Vec<(usize, i64)> = s
            .asked_by(floor, q.until)
            .filter_map(|e| self.answer(e, q, floor, memos).map(|t| (e.node(), t)))
            .collect();
        Answers {
            sorted: s,
            floor,
            until: q.until,
            asked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::memo::MemoRow;
    use super::*;
    use crate::sched::assoc::AssocSet;
    use crate::sched::place::{node_tasks, Alloc};
    use crate::sched::synth::{cluster, fill, Rng};
    use crate::sched::{Input, Params};

    /// The k-th answer of a search, and the nodes answering by it, as
    /// `truth` (every node's answer, by answer) has them.
    fn check_kth(
        pass: &Pass<'_>,
        s: &mut Sorted,
        memos: &mut Memos,
        q: &Search,
        k: usize,
        truth: &[(usize, i64)],
        what: &str,
    ) {
        let want_k = truth.get(k - 1).map(|x| x.1);
        assert_eq!(pass.sweep_kth(s, memos, q, k), want_k, "{what}");
        let by = pass.sweep_kth_by(s, memos, q, k);
        assert_eq!(by.as_ref().map(|x| x.0), want_k, "{what}");
        if let Some((t, mut by)) = by {
            by.sort_unstable();
            let mut want: Vec<(usize, i64)> = truth.iter().filter(|x| x.1 <= t).copied().collect();
            want.sort_unstable();
            assert_eq!(by, want, "{what}");
        }
    }

    /// On random profiles (running jobs' ends, planned takes, a reservation
    /// block, a node still powering up), the sorted sweep and the sorted
    /// breakpoints answer exactly as asking every node.
    #[test]
    fn sorted_sweeps_answer_as_asking_every_node() {
        let now = 1_000_000;
        for seed in 1..=200u64 {
            let mut rng = Rng::new(seed);
            let (mut nodes, parts) = cluster(40, &mut rng);
            let running = fill(&mut nodes, now, 0.6, &mut rng);
            nodes[3].ready = now + 500;
            let params = Params::default();
            let assoc = AssocSet::default();
            let inp = Input {
                now,
                params: &params,
                nodes: &nodes,
                parts: &parts,
                running: &running,
                jobs: &[],
                resvs: &[],
                assoc: &assoc,
                index: None,
            };
            let mut pass = Pass::new(&inp);
            pass.lines[7].blocks.push((now + 1000, now + 9000, 0));
            let cands: Vec<usize> = (0..nodes.len()).filter(|&i| i != 11).collect();
            let cpt = rng.pick(&[1u32, 8, 32]);
            let req = Request {
                min_nodes: 2,
                max_nodes: 2,
                ntasks: 2,
                cpus_per_task: cpt,
                excluded: vec![5],
                ..Default::default()
            };
            let want = rng.pick(&[1u32, 2]);
            let fits = |i: usize, a: &Avail| {
                a.cpus >= want * cpt && node_tasks(&req, &nodes[i], a, &params.place) >= want
            };
            let mut sorted = pass.sorted_sweep(&req, &cands, &fits);
            let mut breaks = pass.breaks(&cands);
            let (mut shape, mut by_req) = (MemoRow::default(), MemoRow::default());
            // Memos kept over the rounds' searches and changes, as a pass
            // keeps them: what they learnt bounds the later answers.
            let (mut kept_shape, mut kept_req) = (MemoRow::default(), MemoRow::default());
            for round in 0..6 {
                let from = now + rng.range(0, 20_000) as i64;
                let until = if round % 3 == 2 {
                    i64::MAX
                } else {
                    from + rng.range(0, 40_000) as i64
                };
                let d = rng.range(1, 30_000) as i64;
                let mut memos = Memos::sized(&mut shape, Some(&mut by_req), nodes.len());
                let q = Search {
                    from,
                    until,
                    d,
                    own: None,
                    fits: &fits,
                };
                let got = pass.sweep(&mut sorted, &mut memos, &q);
                let mut truth: Vec<(usize, i64)> = cands
                    .iter()
                    .filter(|&&i| i != 5)
                    .filter_map(|&i| {
                        let start = from.max(nodes[i].ready);
                        let t = pass.lines[i]
                            .earliest(now, 60, start, until, d, None, &|a| fits(i, a))
                            .t;
                        t.map(|t| (i, t))
                    })
                    .collect();
                let mut all = got.by(i64::MAX);
                all.sort_unstable();
                assert_eq!(all, truth, "seed {seed} round {round}");
                truth.sort_unstable_by_key(|x| (x.1, x.0));
                for k in 1..=4 {
                    assert_eq!(got.kth(k), truth.get(k - 1).map(|x| x.1));
                }
                assert_eq!(got.count(3), truth.len().min(3));
                let t = truth.get(truth.len() / 2).map_or(from, |x| x.1);
                let mut by: Vec<usize> = got.by(t).into_iter().map(|x| x.0).collect();
                by.sort_unstable();
                let mut want_by: Vec<usize> =
                    truth.iter().filter(|x| x.1 <= t).map(|x| x.0).collect();
                want_by.sort_unstable();
                assert_eq!(by, want_by);
                let mut lazy = pass.sorted_sweep(&req, &cands, &fits);
                pass.catch_up(&mut lazy);
                // Bounds as a pass leaves them: built before the changes.
                for k in [1, 2, 4, 40] {
                    let (mut shape, mut by_req) = (MemoRow::default(), MemoRow::default());
                    let mut memos = Memos::sized(&mut shape, Some(&mut by_req), nodes.len());
                    let what = format!("seed {seed} round {round} k {k}");
                    check_kth(&pass, &mut sorted, &mut memos, &q, k, &truth, &what);
                    let fresh = pass.sweep_kth(&mut lazy, &mut memos, &q, k);
                    assert_eq!(fresh, truth.get(k - 1).map(|x| x.1));
                    let mut kept = Memos::sized(&mut kept_shape, Some(&mut kept_req), nodes.len());
                    let what = format!("{what}, kept memos");
                    check_kth(&pass, &mut sorted, &mut kept, &q, k, &truth, &what);
                }
                let bp: Vec<i64> = pass.breakpoints_of(&mut breaks, from, until).collect();
                let mut bp_truth: Vec<i64> = cands
                    .iter()
                    .flat_map(|&i| pass.lines[i].breakpoints(from, until))
                    .collect();
                bp_truth.sort_unstable();
                bp_truth.dedup();
                assert_eq!(bp, bp_truth);
                // Plan something on a few nodes: a take from now on (still
                // length-free) or later (no longer).
                for _ in 0..3 {
                    let node = rng.pick(&cands);
                    let s = now + rng.pick(&[0i64, 300, 7_000]);
                    let a = Alloc {
                        node,
                        cpu_ids: Vec::new(),
                        mem: 1000,
                        gres: Vec::new(),
                        tasks: 1,
                        ncpus: rng.range(1, 16) as u32,
                    };
                    pass.reserve(&[a], s, s + rng.range(60, 20_000) as i64);
                }
            }
        }
    }
}
