//! Placing a job to start now, without delaying anything planned: on
//! nodes whose CPUs may be shared, on one node through the best-fit index,
//! or over several nodes.

use super::{static_nodes, FxMap, Pass};
use crate::sched::place::{
    could_fit, fits_single, place_bounded, place_with, single_node_tasks, tasks_by_cpus, Alloc,
};
use crate::sched::{JobSnap, PlaceOpts};

impl Pass<'_> {
    /// Where `job` starts now in partition `p` until `end_now` (None: it
    /// does not fit there now). `cands`: the nodes of each partition that
    /// could hold it if empty, filled in on first use.
    pub(super) fn place_now(
        &mut self,
        job: &JobSnap,
        p: usize,
        cands: &mut FxMap<usize, Vec<usize>>,
        end_now: i64,
    ) -> Option<Vec<Alloc>> {
        let req = &job.req;
        let opts = self.inp.params.place;
        let share = self.inp.parts[p].share.limit(req);
        if share > 1 {
            // May share CPUs: what each node offers counts its shareable
            // CPUs (not in the best-fit index).
            let cands = cands.entry(p).or_insert_with(|| static_nodes(self, job, p));
            let opts = PlaceOpts { share, ..opts };
            let key = |i: usize| {
                let mut a = self.now_avail[i];
                a.cpus += self.work[i].shareable(share);
                a
            };
            return place_with(req, cands, &self.work, &opts, true, &key, &|i| {
                self.window_now_share(i, end_now, job.reservation, share)
            })
            .ok();
        }
        if let (Some(want), true, None) = (
            single_node_tasks(req),
            req.required.is_empty(),
            job.reservation,
        ) {
            // One node: walk the best-fit index.
            let need = (want * req.cpus_per_task.max(1)).max(req.min_cpus_per_node);
            let index = self.take_index();
            let res = index.scan(p, req, need, |i| {
                let n = &self.work[i];
                if req.excluded.contains(&i)
                    || !fits_single(req, n, &self.now_avail[i], &opts, want)
                {
                    return None;
                }
                let now_of = |i: usize| self.now_avail[i];
                place_with(req, &[i], &self.work, &opts, true, &now_of, &|i| {
                    self.window_now(i, end_now, None)
                })
                .ok()
            });
            self.index = Some(index);
            return res;
        }
        let forced = self.forced_share(req, p);
        if let Some(share) = forced {
            // Too few nodes of the whole partition have the CPUs free for a
            // share (counted once per start and CPU count): none of the
            // candidates will do.
            let cpus = share.saturating_mul(req.cpus_per_task.max(1));
            let Pass {
                inp,
                roomy_in_part,
                now_avail,
                ..
            } = &mut *self;
            let in_part = *roomy_in_part.entry((p, cpus)).or_insert_with(|| {
                let nodes = &inp.parts[p].nodes;
                nodes.iter().filter(|&&i| now_avail[i].cpus >= cpus).count()
            });
            if in_part < req.min_nodes.max(1) as usize {
                return None;
            }
        }
        let cands = cands.entry(p).or_insert_with(|| static_nodes(self, job, p));
        let by_cpus = |i: usize| tasks_by_cpus(req, self.now_avail[i].cpus);
        // Every node must host a share: only those with the CPUs free for
        // one now can take part (the placement would pass the others over).
        let roomy: Vec<usize>;
        let cands: &[usize] = match forced {
            Some(share) => {
                roomy = cands
                    .iter()
                    .copied()
                    .filter(|&i| by_cpus(i) >= share)
                    .collect();
                &roomy
            }
            None => cands,
        };
        // When even the nodes' free CPUs could not hold the tasks, placing
        // must fail: refused before the placement's walk (most tries of a
        // whole-node multi-node job end here).
        if !could_fit(req, cands.iter().map(|&i| by_cpus(i))) {
            return None;
        }
        // What is free now bounds what the window offers.
        place_bounded(
            req,
            cands,
            &self.work,
            &opts,
            true,
            &|i| self.now_avail[i],
            &|i| self.window_now(i, end_now, job.reservation),
            Some(&by_cpus),
        )
        .ok()
    }
}
