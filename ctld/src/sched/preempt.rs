//! Choosing preemption victims: the fewest, lowest-priority running jobs
//! whose resources let a waiting job start now.

use crate::sched::assoc::PreemptMode;

use super::place::{place_with, Alloc, Avail};
use super::plan::{hold_of_run, Pass};
use super::profile::Hold;
use super::{JobSnap, PreemptKind, RunSnap};

/// May `job` (in partition `part`) preempt running job `r`?
fn may_preempt(pass: &Pass, job: &JobSnap, part: usize, r: &RunSnap) -> bool {
    let inp = pass.inp;
    if r.preempt_mode == PreemptMode::Off || r.ending {
        return false;
    }
    match inp.params.preempt {
        PreemptKind::Off => false,
        PreemptKind::PartitionPrio => {
            let tier = |p: usize| inp.parts.get(p).map_or(0, |x| x.priority_tier);
            tier(r.partition) < tier(part)
        }
        PreemptKind::Qos => {
            let pname = inp.parts.get(part).map_or("", |p| p.name.as_str());
            let rname = inp.parts.get(r.partition).map_or("", |p| p.name.as_str());
            let mine = pass.limits.qos_name(&job.owner, pname);
            let theirs = pass.limits.qos_name(&r.owner, rname);
            inp.assoc
                .qos
                .get(mine)
                .is_some_and(|q| q.preempt.iter().any(|x| x == theirs))
        }
    }
}

fn add(a: Avail, h: &Hold) -> Avail {
    Avail {
        cpus: a.cpus + h.cpus,
        mem: a.mem + h.mem,
        gres_free: a.gres_free | h.gres,
        jobs: a.jobs.saturating_sub(1),
    }
}

/// Victims (indices into `running`) that let `job` start now in one of
/// `parts`, with its allocation there.
pub(super) fn find_victims(
    pass: &Pass,
    job: &JobSnap,
    parts: &[usize],
) -> Option<(usize, Vec<Alloc>, Vec<usize>)> {
    let inp = pass.inp;
    let now = inp.now;
    let end = now.saturating_add(job.time_limit.max(1));
    let resv = job.reservation.and_then(|r| inp.resvs.get(r));
    for &p in parts {
        let cands = pass.candidates(p, resv);
        let mut on_cand = vec![false; inp.nodes.len()];
        for &c in &cands {
            on_cand[c] = true;
        }
        let mut victims: Vec<usize> = (0..inp.running.len())
            .filter(|&k| {
                let r = &inp.running[k];
                !pass.taken[k]
                    && r.allocs.iter().any(|a| on_cand.get(a.node) == Some(&true))
                    && may_preempt(pass, job, p, r)
            })
            .collect();
        if victims.is_empty() {
            continue;
        }
        victims.sort_by_key(|&k| {
            let r = &inp.running[k];
            (r.priority, std::cmp::Reverse(r.id))
        });
        let base: Vec<Avail> = cands
            .iter()
            .map(|&i| pass.window(i, now, end, job.reservation))
            .collect();
        let pos_of: std::collections::HashMap<usize, usize> =
            cands.iter().enumerate().map(|(k, &c)| (c, k)).collect();
        let fits = |chosen: &[usize]| {
            let mut extra: Vec<Avail> = base.clone();
            for &k in chosen {
                for a in inp.running[k].allocs.iter() {
                    if let Some(&pos) = pos_of.get(&a.node) {
                        extra[pos] = add(extra[pos], &hold_of_run(a));
                    }
                }
            }
            let av = |i: usize| {
                pos_of
                    .get(&i)
                    .map_or(super::profile::NOTHING, |&pos| extra[pos])
            };
            place_with(
                &job.req,
                &cands,
                inp.nodes,
                &inp.params.place,
                false,
                &av,
                &av,
            )
            .ok()
        };
        let mut chosen: Vec<usize> = Vec::new();
        let mut found = false;
        for &k in &victims {
            chosen.push(k);
            if fits(&chosen).is_some() {
                found = true;
                break;
            }
        }
        if !found {
            continue;
        }
        // Drop victims that turn out not to be needed, last chosen first.
        let mut i = chosen.len();
        while i > 0 {
            i -= 1;
            let mut without = chosen.clone();
            without.remove(i);
            if !without.is_empty() && fits(&without).is_some() {
                chosen = without;
            }
        }
        let allocs = fits(&chosen)?;
        return Some((p, allocs, chosen));
    }
    None
}
