//! What the planner is given about jobs that hold resources (running
//! jobs with their expected ends, shared CPUs' expected ends), and who a
//! job runs as and for how long.

use drover_proto::{JobState, INFINITE};

use crate::ctld::Ctld;
use crate::job::Job;
use crate::sched;

/// The states of jobs that may hold resources.
const HOLDING: [JobState; 4] = [
    JobState::Running,
    JobState::Completing,
    JobState::Suspended,
    JobState::Configuring,
];

impl Ctld {
    /// The time limit a job runs with (minutes; INFINITE for none).
    pub fn effective_time_limit(&self, job: &Job, part: Option<usize>) -> u32 {
        let spec_limit = job.spec().time_limit;
        if spec_limit != 0 {
            return spec_limit;
        }
        part.and_then(|p| self.cluster.parts.get(p))
            .and_then(|p| p.conf.default_time_min.or(p.conf.max_time_min))
            .unwrap_or(INFINITE)
    }

    /// Who a job runs as (account defaulted from accounting).
    pub fn owner(&self, job: &Job) -> sched::Owner {
        sched::Owner {
            user: job.rec.user_name.clone(),
            account: self.account_of(job).to_string(),
            qos: job.spec().qos.clone(),
        }
    }

    /// The account a job runs under: its own, or its user's default.
    pub fn account_of<'a>(&'a self, job: &'a Job) -> &'a str {
        let spec = job.spec();
        if spec.account.is_empty() {
            self.assoc.default_account(&job.rec.user_name).unwrap_or("")
        } else {
            &spec.account
        }
    }

    /// Jobs that may hold resources (running, completing, suspended,
    /// configuring), by id, from the state index.
    fn holding_jobs(&self) -> impl Iterator<Item = &Job> + '_ {
        self.index
            .ids_in(&HOLDING)
            .into_iter()
            .filter_map(move |id| self.jobs.get(&id).map(|j| &**j))
    }

    /// Running jobs with their expected ends, for the scheduler.
    /// When each shared CPU of the snapshot is expected free: the latest
    /// expected end of the sharing jobs on it (now for jobs being stopped,
    /// never for suspended ones or jobs without a limit), as the core sees
    /// running jobs end.
    pub(super) fn share_untils(&self, nodes: &mut [sched::NodeSnap], now: i64) {
        if nodes.iter().all(|n| n.shared.is_empty()) {
            return;
        }
        for n in nodes.iter_mut() {
            for x in &mut n.shared {
                x.until = i64::MIN;
            }
        }
        for job in self.holding_jobs() {
            let st = job.state();
            let rt = job.rt();
            if rt.share <= 1 {
                continue;
            }
            let end = if rt.terminating || rt.preempted || st == JobState::Completing {
                now
            } else {
                match crate::suspend::limit_end(rt) {
                    Some(e) if st != JobState::Suspended => e.max(now + 1),
                    _ => i64::MAX,
                }
            };
            if rt.preempt_suspended {
                // Its CPUs are lent (`suspend::held_allocs`): none held.
                continue;
            }
            for a in &rt.alloc {
                let Some(n) = self
                    .cluster
                    .node_idx(&a.node)
                    .and_then(|i| nodes.get_mut(i))
                else {
                    continue;
                };
                for c in &a.cpu_ids {
                    if let Ok(k) = n.shared.binary_search_by_key(c, |x| x.id) {
                        n.shared[k].until = n.shared[k].until.max(end);
                    }
                }
            }
        }
        for n in nodes.iter_mut() {
            for x in &mut n.shared {
                if x.until == i64::MIN {
                    x.until = i64::MAX;
                }
            }
        }
    }

    /// The jobs holding resources as the planner sees them. Their owners
    /// are read only for association/QOS limits and preemption: without
    /// either (`owners` false) they are left empty, and each job's is kept
    /// between passes (`SchedState::runs`) until it changes (every change
    /// goes through [`Ctld::sync_queue`], which drops it) or the nodes and
    /// partitions do; a job waiting for its nodes to power up is built
    /// every pass (its end moves with them).
    pub(super) fn running_snaps(
        &mut self,
        nodes: &[sched::NodeSnap],
        owners: bool,
    ) -> Vec<sched::RunSnap> {
        let mut kept = std::mem::take(&mut self.sched.runs);
        let gen = self.cluster.kept_gen();
        if owners || self.sched.runs_gen != gen {
            kept.clear();
            self.sched.runs_gen = gen;
        }
        let mut out = Vec::new();
        let mut part_modes: Vec<(&str, crate::assoc::PreemptMode)> = Vec::new();
        for id in self.index.ids_in(&HOLDING) {
            // Kept: the job itself is not read (most of a pass's jobs).
            if let Some(r) = kept.get(&id) {
                debug_assert_eq!(
                    Some(r),
                    self.jobs
                        .get(&id)
                        .map(|job| self.run_snap(job, nodes, owners, &mut part_modes))
                        .as_ref(),
                    "kept snapshot of running job {id}"
                );
                out.push(r.clone());
                continue;
            }
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let r = self.run_snap(job, nodes, owners, &mut part_modes);
            if !owners && job.state() != JobState::Configuring {
                kept.insert(id, r.clone());
            }
            out.push(r);
        }
        self.sched.runs = kept;
        out
    }

    /// One job holding resources as the planner sees it (`part_modes`:
    /// the partitions' preempt modes, parsed once a pass).
    fn run_snap<'a>(
        &'a self,
        job: &'a Job,
        nodes: &[sched::NodeSnap],
        owners: bool,
        part_modes: &mut Vec<(&'a str, crate::assoc::PreemptMode)>,
    ) -> sched::RunSnap {
        let st = job.state();
        let rt = job.rt();
        let part = self.cluster.part_idx(&rt.partition).unwrap_or(usize::MAX);
        let owner = if owners {
            self.owner(job)
        } else {
            sched::Owner::default()
        };
        let qos_mode = if self.cfg.preempt_type == "preempt/qos" {
            let q = if owner.qos.is_empty() {
                "normal"
            } else {
                &owner.qos
            };
            self.assoc
                .qos
                .get(q)
                .map_or(crate::assoc::PreemptMode::Off, |q| q.preempt_mode)
        } else {
            crate::assoc::PreemptMode::Off
        };
        let preempt_mode = if st == JobState::Suspended {
            // Already stopped: not a victim again.
            crate::assoc::PreemptMode::Off
        } else if qos_mode != crate::assoc::PreemptMode::Off {
            qos_mode
        } else {
            // The partition's (or the cluster's) mode, parsed once a pass.
            match part_modes.iter().find(|(p, _)| *p == rt.partition) {
                Some(&(_, m)) => m,
                None => {
                    let m = crate::dispatch::state::preempt_mode(
                        &self.cfg,
                        Some(&rt.partition),
                        qos_mode,
                    );
                    part_modes.push((&rt.partition, m));
                    m
                }
            }
        };
        // Suspending a job frees its CPUs and GPUs but not its memory:
        // the core must not count on that memory when it picks victims.
        let mem_stays = preempt_mode == crate::assoc::PreemptMode::Suspend;
        // What it holds (`suspend::held_allocs`, read in place): a job
        // suspended by preemption lends its CPUs and GPUs.
        let lent = rt.preempt_suspended;
        let allocs: Vec<sched::RunAlloc> = rt
            .alloc
            .iter()
            .filter_map(|a| {
                let node = self.cluster.node_idx(&a.node)?;
                let snap = nodes.get(node)?;
                let gres = if lent {
                    Vec::new()
                } else {
                    a.gres
                        .iter()
                        .flat_map(|g| {
                            g.indices.iter().filter_map(|&ix| {
                                snap.gres
                                    .iter()
                                    .position(|d| d.name == g.name && d.index == ix)
                            })
                        })
                        .collect()
                };
                Some(sched::RunAlloc {
                    node,
                    cpus: if lent { 0 } else { a.cpu_ids.len() as u32 },
                    mem: if mem_stays { 0 } else { a.mem_mb },
                    gres,
                })
            })
            .collect();
        // A suspended job's end is unknown (it may stay suspended).
        let mut end = match crate::suspend::limit_end(rt) {
            Some(e) if st != JobState::Suspended => e,
            _ => i64::MAX,
        };
        // Waiting for its nodes to power up: it runs (and its limit
        // counts) from when they are up.
        if st == JobState::Configuring && end != i64::MAX {
            let ready = allocs
                .iter()
                .map(|a| nodes[a.node].ready)
                .fold(rt.start_time, i64::max);
            end = end.saturating_add(ready - rt.start_time);
        }
        sched::RunSnap {
            id: job.id(),
            partition: part,
            allocs: allocs.into(),
            end,
            priority: rt.priority,
            owner,
            preempt_mode,
            ending: rt.terminating || rt.preempted || st == JobState::Completing,
            share: rt.share > 1,
        }
    }
}

/// The partitions of each distinct `--partition` text a pass meets (a
/// queue has few), looked up once: their indexes, and whether the first is
/// `OverSubscribe=EXCLUSIVE` (every job gets whole nodes).
#[derive(Default)]
pub(super) struct PartLookup<'a> {
    seen: Vec<(&'a str, std::sync::Arc<[usize]>, bool)>,
}

impl<'a> PartLookup<'a> {
    pub fn of(
        &mut self,
        cluster: &crate::cluster::Cluster,
        text: &'a str,
    ) -> (std::sync::Arc<[usize]>, bool) {
        // Jobs of equal specs share them (`intern.rs`), and with them the
        // partition's text: the same text is most often the same bytes.
        let same = |t: &str| std::ptr::eq(t, text) || t == text;
        let k = match self.seen.iter().position(|(t, _, _)| same(t)) {
            Some(k) => k,
            None => {
                let pidx: std::sync::Arc<[usize]> = text
                    .split(',')
                    .filter_map(|n| cluster.part_idx(n.trim()))
                    .collect();
                let exclusive = pidx.first().is_some_and(|&p| {
                    cluster.parts[p]
                        .conf
                        .over_subscribe
                        .eq_ignore_ascii_case("EXCLUSIVE")
                });
                self.seen.push((text, pidx, exclusive));
                self.seen.len() - 1
            }
        };
        let (_, pidx, exclusive) = &self.seen[k];
        (pidx.clone(), *exclusive)
    }
}
