//! Planning a job that may use several nodes (`-N2`, a range `-N1-4`):
//! its earliest start on the profile, tried at a bounded number of times.

use super::memo::{Learnt, Memos};
use super::Pass;
use crate::sched::place::{
    could_fit, node_tasks, place_bounded, tasks_by_cpus, want_tasks, Alloc, Avail,
};
use crate::sched::JobSnap;

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
    pub(super) fn earliest_multi_node<'j>(
        &self,
        job: &'j JobSnap,
        from: i64,
        until: i64,
        cands: &[usize],
        learnt: &mut Learnt<'_, 'j>,
    ) -> Option<(i64, Vec<Alloc>)> {
        let mut from = from;
        for _ in 0..MULTI_NODE_ROUNDS {
            match self.multi_round(job, from, until, cands, learnt)? {
                Round::Planned(t, a) => return Some((t, a)),
                Round::Next(next) if next <= until => from = next,
                Round::Next(_) => return None,
            }
        }
        None
    }

    /// One round of [`Pass::earliest_multi_node`]. None: no start up to
    /// `until`.
    fn multi_round<'j>(
        &self,
        job: &'j JobSnap,
        from: i64,
        until: i64,
        cands: &[usize],
        learnt: &mut Learnt<'_, 'j>,
    ) -> Option<Round> {
        let inp = self.inp;
        let d = job.time_limit.max(1);
        let own = job.reservation;
        let opts = inp.params.place;
        let res = inp.params.bf_resolution.max(1);
        let key = |i: usize| self.now_avail[i];
        let req = &job.req;
        let min_nodes = req.min_nodes.max(1) as usize;
        let max_nodes = req.max_nodes.max(req.min_nodes).max(1) as usize;
        let each = |want: u32, from: i64, memos: &mut Memos| -> Vec<(usize, i64)> {
            let mut v = Vec::with_capacity(cands.len());
            v.extend(
                cands
                    .iter()
                    .filter(|i| !req.excluded.contains(i))
                    .filter_map(|&i| {
                        let n = &inp.nodes[i];
                        let cpus = want * req.cpus_per_task.max(1);
                        let fits =
                            |a: &Avail| a.cpus >= cpus && node_tasks(req, n, a, &opts) >= want;
                        self.node_earliest(i, memos, from, until, d, own, &fits)
                            .map(|t| (i, t))
                    }),
            );
            v
        };
        let mut scratch: Vec<i64> = Vec::with_capacity(cands.len());
        let mut kth = |v: &[(usize, i64)], k: usize| -> Option<i64> {
            if v.len() < k {
                return None;
            }
            scratch.clear();
            scratch.extend(v.iter().map(|x| x.1));
            scratch.select_nth_unstable(k - 1);
            Some(scratch[k - 1])
        };
        let n = inp.nodes.len();
        let Learnt { shape, requests } = learnt;
        let one = each(
            1,
            from,
            &mut Memos::sized(
                &mut shape.one,
                Some(requests.entry((req, 1)).or_default()),
                n,
            ),
        );
        let lb = kth(&one, min_nodes)?;
        // The even share: over the nodes that may hold a task at all (a
        // range `-N1-4` on fewer nodes than 4 puts more on each), and the
        // nodes it then takes.
        let wanted = want_tasks(req);
        let share = if req.ntasks_per_node > 0 {
            req.ntasks_per_node
        } else {
            let spread = max_nodes.min(one.len()).max(1) as u32;
            wanted.div_ceil(spread).max(1)
        };
        let need = (wanted.div_ceil(share) as usize).max(min_nodes);
        if shape.share.0 != share {
            shape.share = (share, Vec::new());
        }
        let shared = requests.entry((req, share)).or_default();
        let ub = kth(
            &each(
                share,
                lb,
                &mut Memos::sized(&mut shape.share.1, Some(shared), n),
            ),
            need,
        );
        let hi = ub.unwrap_or(until);
        let round = |t: i64| {
            if t <= inp.now {
                t
            } else {
                inp.now + (t - inp.now + res - 1) / res * res
            }
        };
        // The first few distinct (rounded) breakpoints in [lb, hi], lb
        // included; each node's are ascending, so stop at the last kept.
        let mut times: Vec<i64> = vec![lb];
        for &i in cands {
            for t in self.lines[i].breakpoints(lb, hi).map(round) {
                if t > hi || (times.len() >= MULTI_NODE_TRIES && times.last() <= Some(&t)) {
                    break;
                }
                if t < lb {
                    continue;
                }
                if let Err(k) = times.binary_search(&t) {
                    times.insert(k, t);
                    times.truncate(MULTI_NODE_TRIES);
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
        let near: Vec<(usize, i64)> = one.iter().copied().filter(|x| x.1 <= last).collect();
        let cpu_bound = |a: &Avail| tasks_by_cpus(req, a.cpus);
        let nt = times.len();
        let mut caps: Vec<u32> = Vec::new();
        // Each try's bounds by node; a try reads only the nodes it has just
        // set (the tries' node sets grow with their times).
        let mut bound_of: Vec<u32> = Vec::new();
        if req.required.is_empty() {
            caps.reserve(near.len() * nt);
            for &(i, _) in &near {
                caps.extend(self.lines[i].at_times(&times).map(|(_, a)| cpu_bound(&a)));
            }
            bound_of = vec![0; inp.nodes.len()];
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
        if let Some((t, a)) = r {
            return Some(Round::Planned(t, a));
        }
        // The next round starts where some node's profile next changes.
        let next = cands
            .iter()
            .filter_map(|&i| {
                self.lines[i]
                    .breakpoints(last.saturating_add(1), until)
                    .next()
            })
            .min()
            .map_or(i64::MAX, round);
        Some(Round::Next(next))
    }
}
