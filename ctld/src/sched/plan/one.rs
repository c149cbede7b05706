//! Planning a job on one node: its earliest start over the candidates,
//! through the request's sorted sweep (the nodes untouched since it was
//! built answer from one sorted list; the others are asked in order of
//! their bounds, only while one could still start sooner), then a
//! placement among the nodes that start it then.

use super::memo::{Learnt, Memos};
use super::sweep::Search;
use super::Pass;
use crate::sched::place::{fits_single, place_with, Alloc, Avail};
use crate::sched::JobSnap;

impl Pass<'_> {
    /// [`Pass::earliest`] for a job of `want` tasks on one node.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn earliest_one_node(
        &self,
        job: &JobSnap,
        want: u32,
        part: usize,
        from: i64,
        until: i64,
        cands: &[usize],
        learnt: &mut Learnt<'_>,
    ) -> Option<(i64, Vec<Alloc>)> {
        let inp = self.inp;
        let req = &job.req;
        let opts = inp.params.place;
        let d = job.time_limit.max(1);
        let own = job.reservation;
        // A cheap first test: CPUs alone.
        let need = (want * req.cpus_per_task.max(1)).max(req.min_cpus_per_node);
        let fits = |i: usize, a: &Avail| {
            a.cpus >= need
                && (req.required.is_empty() || req.required.contains(&i))
                && fits_single(req, &inp.nodes[i], a, &opts, want)
        };
        let Learnt { shape, pass, rid } = learnt;
        let sorted = pass
            .sorted
            .entry((*rid, want, part, own))
            .or_insert_with(|| self.sorted_sweep(req, cands, &fits));
        let mut memos = Memos::sized(
            &mut shape.one,
            Some(pass.requests.entry((*rid, want)).or_default()),
            inp.nodes.len(),
        );
        let q = Search {
            from,
            until,
            d,
            own,
            fits: &fits,
        };
        let t = self.sweep_kth(sorted, &mut memos, &q, 1)?;
        // Only the nodes that start it then are worth placing on.
        let at = self.starting_at(sorted, &mut memos, &q, t);
        let key = |i: usize| self.now_avail[i];
        place_with(req, &at, &self.work, &opts, false, &key, &|i| {
            self.window(i, t, t.saturating_add(d), own)
        })
        .ok()
        .map(|a| (t, a))
    }
}
