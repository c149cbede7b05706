//! Replay: feed a workload through the scheduler core with simulated time,
//! to judge a policy before deploying it. Jobs run for their actual run
//! time (at most their limit); the scheduler only knows limits.

use super::{apply, plan, Decision, Input, JobSnap, NodeSnap, Params, PartSnap, RunAlloc, RunSnap};
use crate::sched::assoc::AssocSet;

/// One job of a trace.
#[derive(Debug, Clone)]
pub struct TraceJob {
    pub submit: i64,
    /// How long it actually runs (seconds, at most its limit).
    pub run: i64,
    pub job: JobSnap,
}

/// What a replay measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub jobs: usize,
    pub finished: usize,
    pub passes: usize,
    /// Busy CPU-seconds over available CPU-seconds, from first submit to last end.
    pub utilization: f64,
    pub mean_wait: f64,
    /// Mean of (wait + run) / max(run, 10 s): Slurm's bounded slowdown.
    pub mean_slowdown: f64,
    pub makespan: i64,
}

struct Live {
    snap: RunSnap,
    real_end: i64,
    allocs: Vec<super::Alloc>,
}

/// Run the trace to completion (or until `horizon` seconds pass).
pub fn replay(
    nodes: &[NodeSnap],
    parts: &[PartSnap],
    params: &Params,
    trace: &[TraceJob],
    horizon: i64,
) -> Stats {
    let assoc = AssocSet::default();
    let mut trace: Vec<TraceJob> = trace.to_vec();
    trace.sort_by_key(|t| (t.submit, t.job.id));
    let t0 = trace.first().map_or(0, |t| t.submit);
    let mut now = t0;
    let mut work: Vec<NodeSnap> = nodes.to_vec();
    let mut next = 0usize;
    let mut pending: Vec<TraceJob> = Vec::new();
    let mut live: Vec<Live> = Vec::new();
    let mut st = Stats {
        jobs: trace.len(),
        ..Default::default()
    };
    let mut busy_cpu_secs = 0f64;
    let mut waits = 0f64;
    let mut slow = 0f64;
    let total_cpus: f64 = nodes.iter().map(|n| f64::from(n.cpus)).sum();
    let mut last_end = t0;
    while (next < trace.len() || !pending.is_empty() || !live.is_empty()) && now - t0 <= horizon {
        while next < trace.len() && trace[next].submit <= now {
            pending.push(trace[next].clone());
            next += 1;
        }
        // Jobs that end now give their resources back.
        live.retain(|l| {
            if l.real_end > now {
                return true;
            }
            for a in &l.allocs {
                let n = &mut work[a.node];
                n.free_cpus.extend(&a.cpu_ids);
                n.free_cpus.sort_unstable();
                n.free_memory += a.mem;
                for &g in &a.gres {
                    n.gres[g].free = true;
                }
                n.jobs -= 1;
            }
            last_end = last_end.max(l.real_end);
            false
        });
        let running: Vec<RunSnap> = live.iter().map(|l| l.snap.clone()).collect();
        let jobs: Vec<JobSnap> = pending.iter().map(|p| p.job.clone()).collect();
        let d = plan(&Input {
            now,
            params,
            nodes: &work,
            parts,
            running: &running,
            jobs: &jobs,
            resvs: &[],
            assoc: &assoc,
            index: None,
        });
        st.passes += 1;
        for x in d {
            if let Decision::Start {
                job,
                partition,
                allocs,
            } = x
            {
                let Some(pos) = pending.iter().position(|p| p.job.id == job) else {
                    continue;
                };
                let tj = pending.swap_remove(pos);
                for a in &allocs {
                    apply(&mut work[a.node], a);
                }
                let run = tj.run.min(tj.job.time_limit).max(1);
                let cpus: u32 = allocs.iter().map(|a| a.ncpus).sum();
                busy_cpu_secs += f64::from(cpus) * run as f64;
                let wait = (now - tj.submit) as f64;
                waits += wait;
                slow += (wait + run as f64) / (run.max(10) as f64);
                st.finished += 1;
                live.push(Live {
                    snap: RunSnap {
                        id: job,
                        partition,
                        allocs: allocs
                            .iter()
                            .map(|a| RunAlloc {
                                node: a.node,
                                cpus: a.ncpus,
                                mem: a.mem,
                                gres: a.gres.clone(),
                            })
                            .collect(),
                        end: now.saturating_add(tj.job.time_limit),
                        priority: tj.job.priority,
                        owner: tj.job.owner.clone(),
                        preempt_mode: crate::sched::assoc::PreemptMode::Off,
                        ending: false,
                        share: false,
                    },
                    real_end: now + run,
                    allocs,
                });
            }
        }
        // Advance to the next event: an arrival or an end.
        let next_end = live.iter().map(|l| l.real_end).min();
        let next_arrival = trace.get(next).map(|t| t.submit);
        now = match (next_end, next_arrival) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        }
        .max(now + 1);
    }
    let span = (last_end - t0).max(1);
    st.makespan = span;
    st.utilization = busy_cpu_secs / (total_cpus * span as f64);
    if st.finished > 0 {
        st.mean_wait = waits / st.finished as f64;
        st.mean_slowdown = slow / st.finished as f64;
    }
    st
}

#[cfg(test)]
mod tests {
    use super::super::synth;
    use super::*;

    fn trace(n: u32, seed: u64) -> (Vec<NodeSnap>, Vec<PartSnap>, Vec<TraceJob>) {
        let mut rng = synth::Rng::new(seed);
        let (nodes, parts) = synth::cluster(8, &mut rng);
        let trace = (0..n)
            .map(|i| {
                let job = synth::job(i + 1, &mut rng, 4);
                let run = (job.time_limit as f64 * (rng.range(10, 100) as f64 / 100.0)) as i64;
                TraceJob {
                    submit: rng.range(0, 3600) as i64,
                    run,
                    job,
                }
            })
            .collect();
        (nodes, parts, trace)
    }

    #[test]
    fn backfill_finishes_everything_and_beats_builtin_on_wait() {
        let (nodes, parts, t) = trace(120, 7);
        let bf = replay(&nodes, &parts, &Params::default(), &t, 30 * 86400);
        let builtin = Params {
            backfill: false,
            ..Params::default()
        };
        let fifo = replay(&nodes, &parts, &builtin, &t, 30 * 86400);
        assert_eq!(bf.finished, 120);
        assert_eq!(fifo.finished, 120);
        assert!(bf.utilization > 0.0 && bf.utilization <= 1.0, "{bf:?}");
        assert!(bf.mean_wait <= fifo.mean_wait, "{bf:?} vs {fifo:?}");
        // Deterministic.
        assert_eq!(
            bf,
            replay(&nodes, &parts, &Params::default(), &t, 30 * 86400)
        );
    }
}
