//! Planning a job that may use several nodes (`-N2`, a range `-N1-4`):
//! its earliest start on the profile, tried at a bounded number of times.

use super::memo::{Learnt, Memos};
use super::sweep::{Search, Sorted};
use super::Pass;
use crate::sched::place::{
    could_fit, node_tasks, place_bounded, tasks_by_cpus, want_tasks, Alloc, Avail,
};
use crate::sched::profile::on_grid;
use crate::sched::{JobSnap, NodeSnap, Request};

/// Does what a node offers hold `want` tasks of `req`?
fn fits_tasks(n: &NodeSnap, req: &Request, a: &Avail, want: u32, pass: &Pass) -> bool {
    a.cpus >= want * req.cpus_per_task.max(1)
        && node_tasks(req, n, a, &pass.inp.params.place) >= want
}

/// Start times tried for a multi-node job's plan, per round.
const MULTI_NODE_TRIES: usize = 8;

/// Rounds of tries for a multi-node job's plan (each after the last).
const MULTI_NODE_ROUNDS: usize = 3;

/// What one round of tries for a multi-node job's plan found.
enum Round {
    /// A planned start and allocation.
    Planned(i64, Vec<Alloc>),
    /// None of the tries placed it: where the next round starts (MAX:
    /// nowhere).
    Next(i64),
}

impl Pass<'_> {
    /// [`Pass::earliest`] for a job that may use several nodes. Each
    /// node's earliest time to hold one task, and to hold an even share of
    /// them, for the whole limit: the job starts no sooner than the
    /// min_nodes-th of the first, and (an even split over as many nodes as
    /// may hold a task being one way to place it) usually by the time
    /// enough nodes hold a share. Try the profile's breakpoints between the
    /// two, then the second (a bounded number of tries); when none places
    /// it, go on from the next breakpoint (a bounded number of rounds).
    pub(super) fn earliest_multi_node(
        &self,
        job: &JobSnap,
        part: usize,
        from: i64,
        until: i64,
        cands: &[usize],
        learnt: &mut Learnt<'_>,
    ) -> Option<(i64, Vec<Alloc>)> {
        // The one-task sweep's nodes, taken out of the pass's memos while
        // the round reads them beside the others.
        let key = (learnt.rid, 1, part, job.reservation);
        let fits = |i: usize, a: &Avail| fits_tasks(&self.inp.nodes[i], &job.req, a, 1, self);
        let mut one = match learnt.pass.sorted.remove(&key) {
            Some(s) => s,
            None => self.sorted_sweep(&job.req, cands, &fits),
        };
        let mut from = from;
        let mut r = None;
        for _ in 0..MULTI_NODE_ROUNDS {
            match self.multi_round(job, part, from, until, cands, &mut one, learnt) {
                Some(Round::Planned(t, a)) => {
                    r = Some((t, a));
                    break;
                }
                Some(Round::Next(next)) if next <= until => from = next,
                _ => break,
            }
        }
        learnt.pass.sorted.insert(key, one);
        r
    }

    /// One round of [`Pass::earliest_multi_node`]. None: no start up to
    /// `until`.
    #[allow(clippy::too_many_arguments)]
    fn multi_round(
        &self,
        job: &JobSnap,
        part: usize,
        from: i64,
        until: i64,
        cands: &[usize],
        one_sweep: &mut Sorted,
        learnt: &mut Learnt<'_>,
    ) -> Option<Round> {
        let inp = self.inp;
        let d = job.time_limit.max(1);
        let own = job.reservation;
        let opts = inp.params.place;
        let res = self.res();
        let key = |i: usize| self.now_avail[i];
        let req = &job.req;
        let min_nodes = req.min_nodes.max(1) as usize;
        let max_nodes = req.max_nodes.max(req.min_nodes).max(1) as usize;
        let n = inp.nodes.len();
        let Learnt { shape, pass, rid } = learnt;
        let fits1 = |i: usize, a: &Avail| fits_tasks(&inp.nodes[i], req, a, 1, self);
        let search = |from: i64, fits| Search {
            from,
            until,
            d,
            own,
            fits,
        };
        let mut one_memos = Memos::sized(
            &mut shape.one,
            Some(pass.requests.entry((*rid, 1)).or_default()),
            n,
        );
        // When every node hosts no more than a share (by its CPUs) and the
        // job needs its most nodes at a share each, a start needs that many
        // nodes holding a share for the whole limit: none comes before the
        // share sweep's `ub`, and none at all without it. Only `ub` is worth
        // a try, and only nodes holding a share then can take part (the
        // placement would pass the others over): the one-task answers
        // matter only for where the share sweep starts.
        let forced = self.forced_share(req, part);
        let (lb, share, one) = match forced {
            Some(share) => {
                let q = search(from, &fits1);
                let lb = self.sweep_kth(one_sweep, &mut one_memos, &q, min_nodes)?;
                // (`min_nodes` nodes hold a task: the share is even.)
                (lb, share, None)
            }
            None => {
                let one = self.sweep(one_sweep, &mut one_memos, &search(from, &fits1));
                let lb = one.kth(min_nodes)?;
                // The even share: over the nodes that may hold a task at
                // all (a range `-N1-4` on fewer nodes than 4 puts more on
                // each), and the nodes it then takes.
                let share = if req.ntasks_per_node > 0 {
                    req.ntasks_per_node
                } else {
                    let spread = one.count(max_nodes).max(1) as u32;
                    want_tasks(req).div_ceil(spread).max(1)
                };
                (lb, share, Some(one))
            }
        };
        let need = (want_tasks(req).div_ceil(share) as usize).max(min_nodes);
        if shape.share.0 != share {
            shape.share.0 = share;
            shape.share.1.clear();
        }
        let fits_share = |i: usize, a: &Avail| fits_tasks(&inp.nodes[i], req, a, share, self);
        let share_sweep = pass
            .sorted
            .entry((*rid, share, part, own))
            .or_insert_with(|| self.sorted_sweep(req, cands, &fits_share));
        let mut share_memos = Memos::sized(
            &mut shape.share.1,
            Some(pass.requests.entry((*rid, share)).or_default()),
            n,
        );
        let share_q = search(lb, &fits_share);
        // (A forced job is placed over the nodes holding a share by then.)
        let (ub, by_ub) = match forced {
            Some(_) => {
                let (ub, by) = self.sweep_kth_by(share_sweep, &mut share_memos, &share_q, need)?;
                (Some(ub), by)
            }
            None => (
                self.sweep_kth(share_sweep, &mut share_memos, &share_q, need),
                Vec::new(),
            ),
        };
        let forced = forced.is_some();
        let hi = ub.unwrap_or(until);
        let round = |t: i64| on_grid(inp.now, res, t);
        // The first few distinct (rounded) breakpoints of the candidates'
        // profiles in [lb, hi], lb included.
        let breaks = pass
            .breaks
            .entry((part, own))
            .or_insert_with(|| self.breaks(cands));
        let mut times: Vec<i64> = Vec::new();
        if !forced {
            times.push(lb);
            for t in self.breakpoints_of(breaks, lb, hi).map(round) {
                if t > hi || times.len() >= MULTI_NODE_TRIES {
                    break;
                }
                if times.last() < Some(&t) {
                    times.push(t);
                }
            }
        }
        if let Some(u) = ub {
            if times.last() != Some(&u) {
                times.push(u);
            }
        }
        // What each node offers at a start time alone bounds what it offers
        // for the whole limit, and its free CPUs then bound the tasks it
        // could host: per node and try, in one walk of each node's profile.
        // Only nodes that can hold a task by the last try take part in any.
        let last = times.last().copied().unwrap_or(lb);
        let near: Vec<(usize, i64)> = match &one {
            Some(one) => one.by(last),
            None => by_ub,
        };
        let cpu_bound = |a: &Avail| tasks_by_cpus(req, a.cpus);
        let nt = times.len();
        let mut caps: Vec<u32> = Vec::new();
        // Each try's bounds by node; a try reads only the nodes it has just
        // set (the tries' node sets grow with their times), so the pass's
        // row serves, as the last round left it.
        let mut bound_of: Vec<u32> = Vec::new();
        if req.required.is_empty() {
            caps.reserve(near.len() * nt);
            for &(i, _) in &near {
                caps.extend(self.lines[i].at_times(&times).map(|(_, a)| cpu_bound(&a)));
            }
            bound_of = std::mem::take(&mut pass.bounds);
            bound_of.resize(inp.nodes.len(), 0);
        }
        let r = times.iter().enumerate().find_map(|(k, &t)| {
            // Only nodes that can hold a task by then (in any order: the
            // fit test and the placement order them themselves).
            let by_then = || near.iter().enumerate().filter(move |(_, x)| x.1 <= t);
            if req.required.is_empty() {
                // If even the bounds are too little, placing must fail.
                let by_cpus = by_then().map(|(j, _)| caps[j * nt + k]);
                if !could_fit(req, by_cpus) {
                    return None;
                }
                for (j, &(i, _)) in by_then() {
                    bound_of[i] = caps[j * nt + k];
                }
            }
            let at: Vec<usize> = by_then().map(|(_, &(i, _))| i).collect();
            let bound = |i: usize| match bound_of.get(i) {
                Some(&b) => b,
                None => cpu_bound(&self.lines[i].at_time(t)),
            };
            place_bounded(
                &job.req,
                &at,
                &self.work,
                &opts,
                false,
                &key,
                &|i| self.window(i, t, t.saturating_add(d), own),
                Some(&bound),
            )
            .ok()
            .map(|a| (t, a))
        });
        if !bound_of.is_empty() {
            pass.bounds = bound_of;
        }
        if let Some((t, a)) = r {
            return Some(Round::Planned(t, a));
        }
        // The next round starts where some node's profile next changes.
        let next = self
            .breakpoints_of(breaks, last.saturating_add(1), until)
            .next()
            .map_or(i64::MAX, round);
        Some(Round::Next(next))
    }
}
