//! Fair-share usage and priorities between passes: charging running jobs'
//! usage, logging and replaying it, the share tree, priority factors.

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use drover_proto::state::wal_record::Kind;
use drover_proto::state::{FairShareUsage, ResolvedRequest, UsageEntry, WalRecord};
use drover_proto::{JobState, ReservationInfo};

use crate::ctld::Ctld;
use crate::fairshare::Usage;
use crate::job::Job;
use crate::priority::{factors, JobFacts, PrioConf};

/// How often the fair-share table is written to the log, seconds (a crash
/// loses at most this much usage; usage is never acknowledged to anyone).
const USAGE_LOG_EVERY: i64 = 5;

impl Ctld {
    pub fn recover_sched(&mut self, usage: Option<FairShareUsage>, resvs: Vec<ReservationInfo>) {
        if let Some(u) = usage {
            self.sched.usage = usage_from(u);
        }
        self.sched.resvs = resvs;
    }

    pub fn replay_sched(&mut self, k: Kind) {
        match k {
            Kind::Usage(u) => self.sched.usage = usage_from(u),
            Kind::Resv(r) => match self.sched.resvs.iter_mut().find(|x| x.name == r.name) {
                Some(x) => *x = r,
                None => self.sched.resvs.push(r),
            },
            Kind::ResvDelete(n) => self.sched.resvs.retain(|r| r.name != n),
            _ => {}
        }
    }

    pub fn usage_record(&self) -> FairShareUsage {
        FairShareUsage {
            time: self.sched.usage.time,
            entries: self
                .sched
                .usage
                .map
                .iter()
                .map(|((a, u), v)| UsageEntry {
                    account: a.clone(),
                    user: u.clone(),
                    usage: *v,
                })
                .collect(),
        }
    }

    /// Charge running jobs for the time each ran since the last charge
    /// (billing TRES-seconds), decay the table, and log it now and then.
    pub fn charge_usage(&mut self, t: i64, pc: &PrioConf) {
        if self.sched.usage.time == 0 {
            self.sched.usage.time = t;
            return;
        }
        let since = self.sched.usage.time;
        if t <= since {
            return;
        }
        let mut usage = std::mem::take(&mut self.sched.usage);
        usage.decay_to(t, pc.half_life);
        let mut charges = Vec::new();
        // Running jobs in id order (the job table's): each (account,
        // user)'s amounts add up in the order they always did.
        for id in self.index.ids_in(&[JobState::Running]) {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if job.state() != JobState::Running {
                continue;
            }
            let ran = t - job.rt().start_time.max(since);
            if ran > 0 {
                let (account, user) = self.charged_owner(job);
                charges.push((account, user, self.billing_of(job) * ran as f64));
            }
        }
        usage.charge_all(charges);
        self.sched.usage = usage;
        if t - self.sched.usage_logged >= USAGE_LOG_EVERY {
            self.sched.usage_logged = t;
            let rec = self.usage_record();
            self.log(WalRecord {
                kind: Some(Kind::Usage(rec)),
            });
        }
    }

    /// A running job ends at `t`: its usage since the last charge (Slurm
    /// charges a job's last stretch as it ends, not at the next period).
    pub fn charge_ended(&mut self, id: u32, t: i64) {
        let since = self.sched.usage.time;
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let rt = job.rt();
        let ran = t - rt.start_time.max(since);
        if since == 0 || rt.start_time == 0 || ran <= 0 {
            return;
        }
        let amount = self.billing_of(job) * ran as f64;
        let (account, user) = self.charged_owner(job);
        let (account, user) = (account.to_string(), user.to_string());
        self.sched.usage.charge(&account, &user, amount);
    }

    /// Whose usage a job's is: (account, or "root" without one; user).
    fn charged_owner<'a>(&'a self, job: &'a Job) -> (&'a str, &'a str) {
        let account = match self.account_of(job) {
            "" => "root",
            a => a,
        };
        (account, job.rec.user_name.as_str())
    }

    /// A job's billing per second of its allocation (TRESBillingWeights of
    /// its partition; CPUs without).
    fn billing_of(&self, job: &Job) -> f64 {
        let rt = job.rt();
        let cpus: u64 = rt.alloc.iter().map(|a| a.cpu_ids.len() as u64).sum();
        let mem: u64 = rt.alloc.iter().map(|a| a.mem_mb).sum();
        let gpus: u64 = rt
            .alloc
            .iter()
            .flat_map(|a| a.gres.iter())
            .filter(|g| g.name == "gpu")
            .map(|g| g.indices.len() as u64)
            .sum();
        let weights = self
            .cfg
            .partition(&rt.partition)
            .and_then(|p| p.tres_billing_weights.as_deref())
            .map(crate::priority::parse_weights)
            .unwrap_or_default();
        crate::fairshare::billing(cpus, mem, gpus, &weights)
    }

    /// The share tree with every association's factor.
    pub fn share_rows(&self, pc: &PrioConf) -> Vec<crate::fairshare::Row> {
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        if self.assoc.is_empty() {
            // Borrowed first: one copy per (account, user), not per job;
            // hashed (a cluster has far fewer owners than jobs), then put in
            // order once each.
            let mut owners: rustc_hash::FxHashSet<(&str, &str)> = Default::default();
            for j in self.jobs.values().filter(|j| !j.state().is_final()) {
                owners.insert((self.account_of(j), j.rec.user_name.as_str()));
            }
            seen.extend(
                owners
                    .into_iter()
                    .map(|(a, u)| (a.to_string(), u.to_string())),
            );
            for (a, u) in self.sched.usage.map.keys() {
                seen.insert((
                    if a == "root" {
                        String::new()
                    } else {
                        a.clone()
                    },
                    u.clone(),
                ));
            }
        }
        crate::fairshare::compute(&self.assoc, &self.sched.usage, &seen, pc.fair_tree)
    }

    /// Is it time to charge usage and recompute every pending job's
    /// priority (PriorityCalcPeriod since the last time)?
    pub fn priorities_due(&self, t: i64, pc: &PrioConf) -> bool {
        self.sched.prio_calc_at == 0 || t >= self.sched.prio_calc_at.saturating_add(pc.calc_period)
    }

    /// Recompute every pending job's multifactor priority, held jobs aside
    /// (as Slurm: priority 0 is a hold; a released job is prioritised by
    /// the full pass its release asks for, see `Ctld::sync_queue`), from
    /// the share tree now, kept for [`Ctld::prioritize_new`].
    pub fn recompute_priorities(&mut self, t: i64, pc: &PrioConf) {
        if !pc.multifactor {
            self.sched.factors.clear();
            return;
        }
        let rows = self.share_rows(pc);
        let no_assoc = self.assoc.is_empty();
        let mut shares: FxHashMap<String, FxHashMap<String, f64>> = FxHashMap::default();
        for r in rows.into_iter().filter(|r| !r.user.is_empty()) {
            let account = if r.account == "root" && no_assoc {
                String::new()
            } else {
                r.account
            };
            shares
                .entry(account)
                .or_default()
                .insert(r.user, r.fairshare);
        }
        self.sched.shares = shares;
        self.prioritize(t, pc, false);
    }

    /// Prioritise the unheld pending jobs that have no priority factors yet
    /// (submitted, released, requeued or updated since the last
    /// recomputation), with the fair-share factors it found; every job
    /// again when one belongs to an owner it did not know.
    pub fn prioritize_new(&mut self, t: i64, pc: &PrioConf) {
        if !pc.multifactor {
            self.sched.factors.clear();
            return;
        }
        let Some(unknown) = self.owner_unknown() else {
            return;
        };
        if unknown {
            self.recompute_priorities(t, pc);
        } else {
            self.prioritize(t, pc, true);
        }
    }

    /// Of the unheld pending jobs without priority factors (None: there
    /// are none), does one belong to an owner the last recomputation did
    /// not know?
    fn owner_unknown(&self) -> Option<bool> {
        let known = |job: &Job| {
            self.sched
                .shares
                .get(self.account_of(job))
                .is_some_and(|users| users.contains_key(&job.rec.user_name))
        };
        let mut lacking = self
            .unheld()
            .filter(|(_, id)| !self.sched.factors.contains_key(id))
            .filter_map(|(_, id)| self.jobs.get(id))
            .map(|job| known(job));
        let first = lacking.next()?;
        Some(!first || lacking.any(|k| !k))
    }

    /// Set the multifactor priority of the unheld pending jobs (`only_new`:
    /// of those without factors). Per job it only looks things up: the
    /// fair-share factors by (account, user), the TRES of each distinct
    /// (shared) request and of each partition are built once per call.
    fn prioritize(&mut self, t: i64, pc: &PrioConf, only_new: bool) {
        let total_cpus: u64 = self
            .cluster
            .nodes
            .iter()
            .map(|n| u64::from(n.conf.cpus))
            .sum();
        let total_nodes = self.cluster.nodes.len() as u64;
        let max_part = self
            .cluster
            .parts
            .iter()
            .map(|p| p.conf.priority_job_factor)
            .max()
            .unwrap_or(0);
        let max_qos = self
            .assoc
            .qos
            .values()
            .map(|q| q.priority)
            .max()
            .unwrap_or(0);
        let part_tres: Vec<crate::assoc::Tres> = self
            .cluster
            .parts
            .iter()
            .map(|p| {
                // Summed first: four map entries a partition, not a node.
                let (mut cpu, mut mem, mut gpu) = (0u64, 0u64, 0u64);
                for &i in &p.nodes {
                    let n = &self.cluster.nodes[i];
                    cpu += u64::from(n.conf.cpus);
                    mem += n.conf.real_memory;
                    gpu += n.gres.iter().filter(|g| g.name == "gpu").count() as u64;
                }
                let mut t = crate::assoc::Tres::new();
                if !p.nodes.is_empty() {
                    t.insert("cpu".into(), cpu);
                    t.insert("mem".into(), mem);
                    t.insert("node".into(), p.nodes.len() as u64);
                    t.insert("gres/gpu".into(), gpu);
                }
                t
            })
            .collect();
        let no_tres = crate::assoc::Tres::new();
        // The TRES of each distinct request, by its shared allocation
        // (`intern.rs`: equal requests are one `Arc`).
        let mut request_tres: FxHashMap<*const ResolvedRequest, crate::assoc::Tres> =
            FxHashMap::default();
        let mut factors_now = if only_new {
            std::mem::take(&mut self.sched.factors)
        } else {
            FxHashMap::with_capacity_and_hasher(self.sched.factors.len(), Default::default())
        };
        let mut changed = Vec::new();
        for &(_, id) in self.unheld() {
            if only_new && factors_now.contains_key(&id) {
                continue;
            }
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let spec = job.spec();
            let pidx = spec
                .partition
                .split(',')
                .find_map(|p| self.cluster.part_idx(p.trim()));
            let tres = match job.request() {
                Some(r) => &*request_tres
                    .entry(r as *const _)
                    .or_insert_with(|| crate::request::tres(r)),
                None => &no_tres,
            };
            let account = self.account_of(job);
            let qos = if spec.qos.is_empty() {
                "normal"
            } else {
                spec.qos.as_str()
            };
            let facts = JobFacts {
                eligible: job.rt().eligible_time,
                cpus: tres.get("cpu").copied().unwrap_or(1),
                nodes: tres.get("node").copied().unwrap_or(1),
                tres,
                part_job_factor: pidx.map_or(0, |p| self.cluster.parts[p].conf.priority_job_factor),
                max_part_job_factor: max_part,
                qos_priority: self.assoc.qos.get(qos).map_or(0, |q| q.priority),
                max_qos_priority: max_qos,
                fairshare: self
                    .sched
                    .shares
                    .get(account)
                    .and_then(|users| users.get(&job.rec.user_name))
                    .copied()
                    .unwrap_or(0.0),
                nice: spec.nice,
                total_cpus,
                total_nodes,
                part_tres: pidx.map_or(&no_tres, |p| &part_tres[p]),
            };
            let f = factors(pc, &facts, t);
            let prio = if spec.priority > 0 {
                spec.priority
            } else {
                f.priority()
            };
            factors_now.insert(id, f);
            if job.rt().priority != prio {
                changed.push((id, prio));
            }
        }
        // Every unheld pending job's factors, and no other job's.
        self.sched.factors = factors_now;
        for (id, prio) in changed {
            if let Some(j) = self.jobs.get_mut(&id) {
                j.rt_mut().priority = prio;
            }
            self.sync_queue(id);
        }
    }
}

fn usage_from(u: FairShareUsage) -> Usage {
    Usage {
        time: u.time,
        map: u
            .entries
            .into_iter()
            .map(|e| ((e.account, e.user), e.usage))
            .collect(),
    }
}
