//! One scheduling pass: start what fits now without delaying anyone
//! planned above it, plan a start for what does not (backfill), preempt
//! where the policy allows, and give every pending job its reason.

use std::collections::HashMap;

use super::index::Index;
use super::limits::{request_tres, run_tres, LimitState};
use super::place::{
    fits_single, node_tasks, place_with, single_node_tasks, tasks_by_cpus, want_tasks, Alloc, Avail,
};
use super::preempt::find_victims;
use super::profile::{Hold, Line, NOTHING};
use super::work::Work;

mod breaks;
mod kinds;
mod memo;
mod multi;
mod now;
mod one;
mod sweep;
use super::{apply_share, Decision, Input, JobSnap, PreemptKind, Request, ResvSnap, RunAlloc};
use kinds::Kinds;
use memo::{Learnt, PassMemos};
use sweep::Change;

pub(super) fn mask(gres: &[usize]) -> u128 {
    gres.iter()
        .filter(|&&g| g < 128)
        .fold(0u128, |m, &g| m | 1u128 << g)
}

pub(super) fn hold_of(a: &Alloc) -> Hold {
    Hold {
        cpus: a.ncpus,
        mem: a.mem,
        gres: mask(&a.gres),
    }
}

pub(super) fn hold_of_run(a: &RunAlloc) -> Hold {
    Hold {
        cpus: a.cpus,
        mem: a.mem,
        gres: mask(&a.gres),
    }
}

/// FxHash (rustc's hasher): fast, and deterministic (a pass never iterates
/// its maps, so order does not matter anyway).
type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// The working state of a pass.
pub(super) struct Pass<'a> {
    pub inp: &'a Input<'a>,
    pub lines: Vec<Line>,
    pub work: Work<'a>,
    /// `Avail::of` each node in `work`, kept current.
    now_avail: Vec<Avail>,
    /// By partition and CPUs: how many of its nodes have that many free
    /// now (until the next start).
    roomy_in_part: FxMap<(usize, u32), usize>,
    pub limits: LimitState<'a>,
    /// Running jobs chosen for preemption this pass.
    pub taken: Vec<bool>,
    /// Bumped whenever a node's profile changes (for [`Memo`]).
    pub ver: Vec<u32>,
    /// Every change to a profile this pass, in order (for the sorted
    /// sweeps and breakpoint sets of [`sweep`]).
    changes: Vec<Change>,
    /// Nodes a quick pass keeps from lower-priority jobs: those of the
    /// partitions where a job could not start (Slurm's main scheduler).
    withheld: Vec<bool>,
    /// Built the first time a one-node job is placed (many passes place
    /// none): from the snapshot, and the nodes changed until then.
    index: Option<Index>,
    /// The most CPUs of a node, by partition (on first use).
    most_cpus: std::cell::OnceCell<Vec<u32>>,
    pub out: Vec<Decision>,
}

impl<'a> Pass<'a> {
    fn new(inp: &'a Input<'a>) -> Self {
        let now = inp.now;
        let opts = inp.params.place;
        let now_avail: Vec<Avail> = inp.nodes.iter().map(Avail::of).collect();
        let mut lines = Line::for_nodes(now, inp.nodes, &now_avail, &opts);
        let mut limits = LimitState::new(inp.assoc);
        for r in inp.running {
            let end = if r.ending { now } else { r.end.max(now + 1) };
            for a in r.allocs.iter() {
                if let Some(l) = lines.get_mut(a.node) {
                    let mut h = hold_of_run(a);
                    if r.share {
                        // Shared CPUs come back below, once per CPU.
                        h.cpus = 0;
                    }
                    if end != i64::MAX {
                        l.give(end, i64::MAX, &h, opts.track_memory);
                    }
                }
            }
            if limits.any() {
                // (Each job's TRES is a map of names: only with limits.)
                let pname = inp.parts.get(r.partition).map_or("", |p| p.name.as_str());
                limits.add(&r.owner, pname, &run_tres(inp.nodes, &r.allocs));
            }
        }
        if inp.nodes.iter().any(|n| !n.shared.is_empty()) {
            // Shared CPUs come back once each, when expected free.
            for (i, n) in inp.nodes.iter().enumerate() {
                let mut untils: Vec<i64> = n
                    .shared
                    .iter()
                    .map(|x| x.until)
                    .filter(|&u| u != i64::MAX)
                    .collect();
                untils.sort_unstable();
                for g in untils.chunk_by(|a, b| a == b) {
                    let h = Hold {
                        cpus: g.len() as u32,
                        mem: 0,
                        gres: 0,
                    };
                    lines[i].give(g[0].max(now), i64::MAX, &h, opts.track_memory);
                }
            }
        }
        for (ri, r) in inp.resvs.iter().enumerate() {
            if r.end <= now {
                continue;
            }
            for &n in &r.nodes {
                if let Some(l) = lines.get_mut(n) {
                    l.blocks.push((r.start, r.end, ri));
                }
            }
        }
        Pass {
            inp,
            lines,
            work: Work::new(inp.nodes),
            now_avail,
            roomy_in_part: FxMap::default(),
            limits,
            taken: vec![false; inp.running.len()],
            ver: vec![0; inp.nodes.len()],
            changes: Vec::new(),
            withheld: vec![false; inp.nodes.len()],
            index: None,
            most_cpus: std::cell::OnceCell::new(),
            out: Vec::new(),
        }
    }

    /// The tasks every node of a placement of `req` in partition `part`
    /// must host, when forced: a multi-node job on a fixed number of nodes
    /// whose tasks fill that many nodes' largest share (by the most CPUs
    /// of any node of the partition) exactly.
    pub(super) fn forced_share(&self, req: &Request, part: usize) -> Option<u32> {
        #[cfg(test)]
        if UNFORCED.get() {
            return None;
        }
        let nodes = req.min_nodes.max(1);
        let wanted = want_tasks(req);
        if !req.required.is_empty()
            || req.max_nodes.max(nodes) != nodes
            || !wanted.is_multiple_of(nodes)
        {
            return None;
        }
        let share = wanted / nodes;
        if req.ntasks_per_node != 0 && req.ntasks_per_node != share {
            return None;
        }
        let most = self.most_cpus.get_or_init(|| {
            let inp = self.inp;
            inp.parts
                .iter()
                .map(|p| {
                    p.nodes
                        .iter()
                        .map(|&i| inp.nodes[i].cpus)
                        .max()
                        .unwrap_or(0)
                })
                .collect()
        });
        let most = most.get(part).copied().unwrap_or(u32::MAX);
        (tasks_by_cpus(req, most) <= share).then_some(share)
    }

    /// The best-fit index, taken out to be read beside the pass (put back
    /// before the next start); on first use the caller's, lent (else one
    /// built from the snapshot), each node changed since re-filed (as
    /// [`Pass::start`] would have).
    fn take_index(&mut self) -> Index {
        self.index.take().unwrap_or_else(|| {
            let mut ix = match self.inp.index {
                Some(lent) => std::mem::take(&mut *lent.borrow_mut()),
                None => Index::new(self.inp.nodes, self.inp.parts),
            };
            for i in self.work.changed() {
                ix.update(i, &self.work[i]);
            }
            ix
        })
    }

    /// What node `i` offers a job over [s, e): nothing if a reservation
    /// other than the job's own is in the way.
    pub fn window(&self, i: usize, s: i64, e: i64, own: Option<usize>) -> Avail {
        if self.withheld[i] && s <= self.inp.now {
            return NOTHING;
        }
        let l = &self.lines[i];
        if l.blocked(s, e, own).is_some() {
            return NOTHING;
        }
        l.window(s, e)
    }

    /// What node `i` offers a job starting now: the profile's view, and no
    /// more than is free on the node this moment (jobs being stopped still
    /// hold their CPUs).
    pub fn window_now(&self, i: usize, e: i64, own: Option<usize>) -> Avail {
        let mut w = self.now_avail[i];
        if !self.inp.params.place.track_memory {
            w.mem = self.work[i].real_memory;
        }
        self.window(i, self.inp.now, e, own).meet(w)
    }

    /// [`Pass::window_now`] for a job sharing CPUs with up to `share`
    /// jobs each: the node's joinable shared CPUs are on offer too, each
    /// while the profile still counts it held (until its `until`; the job
    /// takes those held longest first), so that it delays no planned start.
    fn window_now_share(&self, i: usize, e: i64, own: Option<usize>, share: u32) -> Avail {
        let now = self.inp.now;
        if self.withheld[i] || self.lines[i].blocked(now, e, own).is_some() {
            return NOTHING;
        }
        let n = &self.work[i];
        let mut untils: Vec<i64> = n
            .shared
            .iter()
            .filter(|x| x.joinable(share))
            .map(|x| x.until)
            .collect();
        untils.sort_unstable();
        let mut w = self.now_avail[i];
        if !self.inp.params.place.track_memory {
            w.mem = n.real_memory;
        }
        w.cpus += untils.len() as u32;
        let mut p = self.lines[i].window(now, e);
        // Between two `until`s, what the profile has free plus the shared
        // CPUs it still counts held.
        let mut cpus = p.cpus + untils.len() as u32;
        let (mut s, mut k) = (now, 0);
        while s < e {
            while k < untils.len() && untils[k] <= s {
                k += 1;
            }
            let held = (untils.len() - k) as u32;
            let next = untils.get(k).copied().unwrap_or(i64::MAX).min(e);
            cpus = cpus.min(self.lines[i].window(s, next).cpus + held);
            s = next;
        }
        p.cpus = cpus;
        p.meet(w)
    }

    pub fn candidates(&self, part: usize, resv: Option<&ResvSnap>) -> Vec<usize> {
        let nodes = &self.inp.parts[part].nodes;
        match resv {
            Some(r) => nodes
                .iter()
                .copied()
                .filter(|n| r.nodes.contains(n))
                .collect(),
            None => nodes.clone(),
        }
    }

    /// Hold resources in the profile over [s, e).
    pub fn reserve(&mut self, allocs: &[Alloc], s: i64, e: i64) {
        let tm = self.inp.params.place.track_memory;
        for a in allocs {
            self.lines[a.node].take(s, e, &hold_of(a), tm);
            self.changed(a.node, s, e);
        }
    }

    /// The planning grid's step (`bf_resolution`, at least a second).
    fn res(&self) -> i64 {
        self.inp.params.bf_resolution.max(1)
    }

    /// Node `i`'s profile changed over [s, e).
    fn changed(&mut self, i: usize, s: i64, e: i64) {
        self.ver[i] += 1;
        self.changes.push(Change { node: i, s, e });
    }

    /// Earliest planned start of `job` in partition `part` (not before
    /// `from`, not after `until`), with its planned allocation.
    fn earliest(
        &self,
        job: &JobSnap,
        part: usize,
        from: i64,
        until: i64,
        cands: &[usize],
        learnt: &mut Learnt<'_>,
    ) -> Option<(i64, Vec<Alloc>)> {
        match single_node_tasks(&job.req) {
            Some(want) => self.earliest_one_node(job, want, part, from, until, cands, learnt),
            None => self.earliest_multi_node(job, part, from, until, cands, learnt),
        }
    }

    fn start(&mut self, job: &JobSnap, part: usize, allocs: Vec<Alloc>) {
        let now = self.inp.now;
        // It runs once its slowest node is up (powered-down nodes resume).
        let ready = allocs
            .iter()
            .map(|a| self.inp.nodes[a.node].ready)
            .fold(now, i64::max);
        let end = ready.saturating_add(job.time_limit.max(1));
        let share = self.inp.parts[part].share.limit(&job.req);
        for a in &allocs {
            apply_share(self.work.get_mut(a.node), a, share, end);
            self.now_avail[a.node] = Avail::of(&self.work[a.node]);
            if let Some(ix) = self.index.as_mut() {
                ix.update(a.node, &self.work[a.node]);
            }
        }
        self.roomy_in_part.clear();
        self.reserve(&allocs, now, end);
        let pname = self.inp.parts[part].name.as_str();
        if self.limits.any() {
            self.limits.add(&job.owner, pname, &request_tres(&job.req));
        }
        self.out.push(Decision::Start {
            job: job.id,
            partition: part,
            allocs,
        });
    }

    /// A quick pass left `job` waiting: lower-priority jobs may not start
    /// on the nodes it needs (those it requires, if they are enough, else
    /// every node of its partitions), since nothing was planned for it.
    fn withhold(&mut self, job: &JobSnap, parts: &[usize]) {
        let required = &job.req.required;
        let nodes: Vec<usize> =
            if !required.is_empty() && required.len() as u32 >= job.req.min_nodes.max(1) {
                required.clone()
            } else {
                parts
                    .iter()
                    .filter_map(|&p| self.inp.parts.get(p))
                    .flat_map(|p| p.nodes.iter().copied())
                    .collect()
            };
        for i in nodes {
            if let Some(w) = self.withheld.get_mut(i) {
                *w = true;
            }
        }
    }

    fn wait(&mut self, job: u32, reason: &'static str, start: Option<i64>) {
        self.out.push(Decision::Wait { job, reason, start });
    }
}

#[cfg(test)]
thread_local! {
    /// Plan every job the general way (tests compare the two).
    pub(super) static UNFORCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Plan one scheduling pass. Deterministic: same input, same output.
pub fn plan(inp: &Input) -> Vec<Decision> {
    let now = inp.now;
    let params = inp.params;
    let parts = inp.parts;
    let tier = |j: &JobSnap| {
        j.partitions
            .iter()
            .filter_map(|&p| parts.get(p))
            .map(|p| p.priority_tier)
            .max()
            .unwrap_or(0)
    };
    let mut order: Vec<(u32, &JobSnap)> = inp.jobs.iter().map(|j| (tier(j), j)).collect();
    order.sort_by(|(ta, a), (tb, b)| {
        tb.cmp(ta)
            .then(b.priority.cmp(&a.priority))
            .then(a.id.cmp(&b.id))
    });

    let mut pass = Pass::new(inp);
    let mut blocked = vec![false; parts.len()];
    let mut tested = 0usize;
    let mut per_user: HashMap<&str, usize> = HashMap::new();
    let window_end = now.saturating_add(params.bf_window.max(60));
    // Each job's kind looked up once; what is learnt about it by number.
    let mut kinds = Kinds::default();
    let mut generation = 0u32;
    let mut pass_memos = PassMemos::default();

    for (_, job) in order {
        let d = job.time_limit.max(1);
        let end_now = now.saturating_add(d);
        let up: Vec<usize> = job
            .partitions
            .iter()
            .copied()
            .filter(|&p| parts.get(p).is_some_and(|x| x.up))
            .collect();
        if up.is_empty() {
            pass.wait(job.id, "PartitionDown", None);
            continue;
        }
        let held_back = |blocked: &[bool]| up.iter().any(|&p| blocked[p]);
        let resv = job.reservation.and_then(|r| inp.resvs.get(r));
        if job.reservation.is_some() && !resv.is_some_and(|r| r.admits(&job.owner) && r.end > now) {
            pass.wait(job.id, "Reservation", None);
            continue;
        }
        // Without associations or QOS no limit can hold a job.
        let limited = pass.limits.any();
        let tres = if limited {
            request_tres(&job.req)
        } else {
            crate::sched::assoc::Tres::new()
        };
        let tl_min = if d == i64::MAX {
            u32::MAX
        } else {
            (d / 60).min(i64::from(u32::MAX)) as u32
        };
        let pname = parts[up[0]].name.as_str();
        if let Some(reason) = limited
            .then(|| pass.limits.check(&job.owner, pname, &tres, tl_min))
            .flatten()
        {
            pass.wait(job.id, reason, None);
            continue;
        }
        let all_blocked = up.iter().all(|&p| blocked[p]);
        if params.quick && all_blocked {
            // Slurm's main scheduler: its partitions already left a job
            // pending; this one is not looked at.
            continue;
        }
        if !params.backfill && all_blocked {
            pass.wait(job.id, "Priority", None);
            continue;
        }
        // Backfill tests `bf_max_job_test` jobs per cycle (Slurm's backfill
        // stops there): one held back behind a pending job is not tried.
        let untested = all_blocked && tested >= params.bf_max_job_test;

        // Start now, as many instances as may.
        let mut started = 0;
        let resv_open = resv.is_none_or(|r| r.start <= now);
        let (aid, sid) = kinds.of(job);
        let info = &mut kinds.shape[sid];
        if info.generation != generation {
            info.generation = generation;
            info.now_fails = false;
            info.earliest_lb = 0;
            info.memos.clear();
        }
        let skip_now = info.now_fails || untested;
        'inst: while started < job.instances.max(1) && resv_open && !skip_now {
            if started > 0
                && limited
                && pass
                    .limits
                    .check(&job.owner, pname, &tres, tl_min)
                    .is_some()
            {
                break;
            }
            for &p in &up {
                if !params.backfill && blocked[p] {
                    continue;
                }
                let cands = &mut kinds.ask[aid].nodes;
                if let Some(allocs) = pass.place_now(job, p, cands, end_now) {
                    pass.start(job, p, allocs);
                    started += 1;
                    continue 'inst;
                }
            }
            break;
        }
        if started > 0 {
            continue;
        }
        let info = &mut kinds.shape[sid];
        info.now_fails |= !untested;

        // It waits. Plan its start (backfill; a quick pass is Slurm's main
        // scheduler and plans nothing), or preempt for it.
        let planning = params.backfill
            && !params.quick
            && tested < params.bf_max_job_test
            && (params.bf_max_job_user == 0
                || per_user.get(job.owner.user.as_str()).copied().unwrap_or(0)
                    < params.bf_max_job_user);
        let from = resv.map_or(now, |r| r.start.max(now));
        let until = if planning {
            resv.map_or(window_end, |r| window_end.min(r.end - 1))
        } else {
            now
        };
        let mut plan: Option<(i64, usize, Vec<Alloc>)> = None;
        if planning || (params.preempt != PreemptKind::Off && !untested) {
            if planning {
                tested += 1;
                *per_user.entry(job.owner.user.as_str()).or_default() += 1;
            }
            let Kinds { ask, shape, .. } = &mut kinds;
            let (ask, info) = (&mut ask[aid], &mut shape[sid]);
            let from = from.max(info.earliest_lb);
            for &p in &up {
                let lim = plan.as_ref().map_or(until, |(t, _, _)| t - 1);
                if lim < from {
                    break;
                }
                let cands = ask
                    .nodes
                    .entry(p)
                    .or_insert_with(|| static_nodes(&pass, job, p));
                let mut learnt = Learnt {
                    shape: &mut info.memos,
                    pass: &mut pass_memos,
                    rid: ask.rid,
                };
                if let Some((t, a)) = pass.earliest(job, p, from, lim, cands, &mut learnt) {
                    plan = Some((t, p, a));
                }
            }
            // Later jobs of this shape start no earlier (when planning
            // reached its horizon; a bounded look proves nothing beyond).
            info.earliest_lb = match &plan {
                Some((t, _, _)) => *t,
                None if planning => until.saturating_add(1),
                None => info.earliest_lb,
            };
        }
        if params.preempt != PreemptKind::Off
            && !untested
            && resv_open
            && plan.as_ref().is_none_or(|p| p.0 > now)
        {
            if let Some((p, allocs, victims)) = find_victims(&pass, job, &up) {
                for k in victims {
                    let r = &inp.running[k];
                    pass.taken[k] = true;
                    let tm = params.place.track_memory;
                    for a in r.allocs.iter() {
                        let e = r.end.max(now + 1);
                        pass.lines[a.node].give(now, e, &hold_of_run(a), tm);
                        pass.changed(a.node, now, e);
                    }
                    pass.out.push(Decision::Preempt {
                        job: r.id,
                        by: job.id,
                        mode: r.preempt_mode,
                    });
                }
                pass.reserve(&allocs, now, end_now);
                blocked[p] = true;
                // Resources came back: what was learnt no longer holds.
                generation += 1;
                pass_memos.clear();
                pass.wait(job.id, "Resources", Some(now));
                continue;
            }
        }
        if let Some((t, p, allocs)) = plan.filter(|_| planning) {
            pass.reserve(&allocs, t, t.saturating_add(d));
            let reason = if resv.is_some_and(|r| r.start > now) && t == from {
                "Reservation"
            } else if blocked[p] {
                "Priority"
            } else {
                "Resources"
            };
            blocked[p] = true;
            pass.wait(job.id, reason, Some(t));
            continue;
        }
        let reason = if resv.is_some_and(|r| r.start > now) {
            "Reservation"
        } else if !*kinds.ask[aid]
            .ever
            .get_or_insert_with(|| could_ever_run(&pass, job, &up))
        {
            "ReqNodeNotAvail"
        } else if held_back(&blocked) {
            "Priority"
        } else {
            "Resources"
        };
        if reason != "ReqNodeNotAvail" {
            for &p in &up {
                blocked[p] = true;
            }
            if params.quick {
                pass.withhold(job, &up);
            }
        }
        pass.wait(job.id, reason, None);
    }
    Line::recycle(pass.lines);
    if let (Some(lent), Some(mut ix)) = (inp.index, pass.index.take()) {
        // Given back as lent: the nodes this pass changed filed as the
        // snapshot has them.
        for i in pass.work.changed() {
            ix.update(i, &inp.nodes[i]);
        }
        *lent.borrow_mut() = ix;
    }
    pass.out
}

/// Could the job run on the usable nodes of one of its partitions if they
/// were empty?
fn could_ever_run(pass: &Pass, job: &JobSnap, up: &[usize]) -> bool {
    let resv = job.reservation.and_then(|r| pass.inp.resvs.get(r));
    up.iter().any(|&p| {
        let cands = pass.candidates(p, resv);
        let cap = |i: usize| {
            let n = &pass.inp.nodes[i];
            if n.usable {
                Avail::capacity(n)
            } else {
                NOTHING
            }
        };
        let req = &job.req;
        if let (Some(share), None) = (pass.forced_share(req, p), &req.gpus_total) {
            // Every node must host a share: enough nodes that do when empty.
            let opts = &pass.inp.params.place;
            let holds = |&&i: &&usize| {
                !req.excluded.contains(&i)
                    && node_tasks(req, &pass.inp.nodes[i], &cap(i), opts) >= share
            };
            let nodes = req.min_nodes.max(1) as usize;
            return cands.iter().filter(holds).take(nodes).count() == nodes;
        }
        place_with(
            &job.req,
            &cands,
            pass.inp.nodes,
            &pass.inp.params.place,
            false,
            &cap,
            &cap,
        )
        .is_ok()
    })
}

/// Nodes of partition `part` (inside the job's reservation) that could hold
/// a one-node job if they were empty: the only ones worth planning on.
fn static_nodes(pass: &Pass, job: &JobSnap, part: usize) -> Vec<usize> {
    let resv = job.reservation.and_then(|r| pass.inp.resvs.get(r));
    let cands = pass.candidates(part, resv);
    let Some(want) = single_node_tasks(&job.req) else {
        return cands
            .into_iter()
            .filter(|&i| pass.inp.nodes[i].usable)
            .collect();
    };
    let opts = pass.inp.params.place;
    cands
        .into_iter()
        .filter(|&i| {
            let n = &pass.inp.nodes[i];
            n.usable && fits_single(&job.req, n, &Avail::capacity(n), &opts, want)
        })
        .collect()
}
