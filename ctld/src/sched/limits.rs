//! Run-time QOS and association limits: a job over a limit stays pending
//! with the limit's Slurm reason. Usage counts running jobs and the jobs
//! the pass starts; limits come from the accounting cache (`AssocSet`).

use std::collections::HashMap;

use crate::sched::assoc::{AssocSet, Limits, Tres};

use super::{NodeSnap, Request, RunAlloc};

/// Who a job runs as, for limits, shares and preemption.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Owner {
    pub user: String,
    pub account: String,
    /// Empty: the association's default QOS, else `normal`.
    pub qos: String,
}

#[derive(Debug, Clone, Default)]
struct Usage {
    jobs: u32,
    tres: Tres,
}

impl Usage {
    fn add(&mut self, t: &Tres) {
        self.jobs += 1;
        for (k, v) in t {
            *self.tres.entry(k.clone()).or_default() += v;
        }
    }
}

/// What a request asks for in total: CPUs, nodes, memory (MiB), GPUs of
/// any type (the numbers of [`request_tres`], without building its map).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    pub cpus: u64,
    pub nodes: u64,
    pub mem: u64,
    pub gpus: u64,
}

pub fn request_totals(r: &Request) -> Totals {
    let nodes = u64::from(r.min_nodes.max(1));
    let ntasks = u64::from(r.ntasks.max(r.min_nodes).max(1));
    let cpus =
        (ntasks * u64::from(r.cpus_per_task.max(1))).max(nodes * u64::from(r.min_cpus_per_node));
    let gpus = r
        .gres
        .iter()
        .filter(|g| g.name == "gpu")
        .map(|g| u64::from(g.count) * nodes)
        .sum::<u64>()
        + r.gpus_total.as_ref().map_or(0, |g| u64::from(g.count))
        + u64::from(r.gpus_per_task) * ntasks;
    let mem = r.mem_per_node * nodes + r.mem_per_cpu * cpus + r.mem_per_gpu * gpus;
    Totals {
        cpus,
        nodes,
        mem,
        gpus,
    }
}

/// TRES a request asks for in total (`cpu`, `mem` MiB, `node`, `gres/gpu`,
/// `gres/gpu:TYPE`, `billing` = cpu).
pub fn request_tres(r: &Request) -> Tres {
    let Totals {
        cpus,
        nodes,
        mem,
        gpus: total_gpus,
    } = request_totals(r);
    let ntasks = u64::from(r.ntasks.max(r.min_nodes).max(1));
    let mut gpus: HashMap<Option<String>, u64> = HashMap::new();
    for g in r.gres.iter().filter(|g| g.name == "gpu") {
        *gpus.entry(g.r#type.clone()).or_default() += u64::from(g.count) * nodes;
    }
    if let Some(g) = &r.gpus_total {
        *gpus.entry(g.r#type.clone()).or_default() += u64::from(g.count);
    }
    if r.gpus_per_task > 0 {
        let ty = r.gpus_total.as_ref().and_then(|g| g.r#type.clone());
        *gpus.entry(ty).or_default() += u64::from(r.gpus_per_task) * ntasks;
    }
    let mut t = Tres::new();
    t.insert("cpu".into(), cpus);
    t.insert("billing".into(), cpus);
    t.insert("node".into(), nodes);
    if mem > 0 {
        t.insert("mem".into(), mem);
    }
    if total_gpus > 0 {
        t.insert("gres/gpu".into(), total_gpus);
    }
    for (ty, n) in gpus {
        if let Some(ty) = ty {
            *t.entry(format!("gres/gpu:{ty}")).or_default() += n;
        }
    }
    t
}

/// TRES of a running job's allocation.
pub fn run_tres(nodes: &[NodeSnap], allocs: &[RunAlloc]) -> Tres {
    let mut t = Tres::new();
    for a in allocs {
        *t.entry("cpu".into()).or_default() += u64::from(a.cpus);
        *t.entry("billing".into()).or_default() += u64::from(a.cpus);
        *t.entry("node".into()).or_default() += 1;
        if a.mem > 0 {
            *t.entry("mem".into()).or_default() += a.mem;
        }
        for &g in &a.gres {
            if let Some(d) = nodes.get(a.node).and_then(|n| n.gres.get(g)) {
                if d.name == "gpu" {
                    *t.entry("gres/gpu".into()).or_default() += 1;
                    if !d.r#type.is_empty() {
                        *t.entry(format!("gres/gpu:{}", d.r#type)).or_default() += 1;
                    }
                }
            }
        }
    }
    t
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Qos,
    Assoc,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Grp,
    PerUser,
    PerJob,
}

/// Slurm's reason for a TRES limit.
fn tres_reason(scope: Scope, kind: Kind, key: &str) -> &'static str {
    let res = if key == "cpu" {
        0
    } else if key == "mem" {
        1
    } else if key == "node" {
        2
    } else if key == "billing" {
        3
    } else {
        4
    };
    use Kind::*;
    use Scope::*;
    const T: [[[&str; 5]; 3]; 2] = [
        [
            [
                "QOSGrpCpuLimit",
                "QOSGrpMemLimit",
                "QOSGrpNodeLimit",
                "QOSGrpBillingLimit",
                "QOSGrpGRES",
            ],
            [
                "QOSMaxCpuPerUserLimit",
                "QOSMaxMemoryPerUser",
                "QOSMaxNodePerUserLimit",
                "QOSMaxBillingPerUser",
                "QOSMaxGRESPerUser",
            ],
            [
                "QOSMaxCpuPerJobLimit",
                "QOSMaxMemoryPerJob",
                "QOSMaxNodePerJobLimit",
                "QOSMaxBillingPerJob",
                "QOSMaxGRESPerJob",
            ],
        ],
        [
            [
                "AssocGrpCpuLimit",
                "AssocGrpMemLimit",
                "AssocGrpNodeLimit",
                "AssocGrpBillingLimit",
                "AssocGrpGRES",
            ],
            [
                "AssocMaxCpuPerUserLimit",
                "AssocMaxMemPerUser",
                "AssocMaxNodePerUserLimit",
                "AssocMaxBillingPerUser",
                "AssocMaxGRESPerUser",
            ],
            [
                "AssocMaxCpuPerJobLimit",
                "AssocMaxMemPerJob",
                "AssocMaxNodePerJobLimit",
                "AssocMaxBillingPerJob",
                "AssocMaxGRESPerJob",
            ],
        ],
    ];
    let s = match scope {
        Qos => 0,
        Assoc => 1,
    };
    let k = match kind {
        Grp => 0,
        PerUser => 1,
        PerJob => 2,
    };
    T[s][k][res]
}

/// First TRES of `limit` that `used + want` exceeds.
fn over(limit: &Tres, used: Option<&Tres>, want: &Tres) -> Option<String> {
    for (k, &max) in limit {
        let u = used.and_then(|u| u.get(k)).copied().unwrap_or(0);
        let w = want.get(k).copied().unwrap_or(0);
        if w > 0 && u + w > max {
            return Some(k.clone());
        }
    }
    None
}

/// Usage by running jobs (and jobs started this pass), per limit scope.
pub struct LimitState<'a> {
    set: &'a AssocSet,
    /// Some association or QOS sets a limit.
    any: bool,
    qos_user: HashMap<(String, String), Usage>,
    qos_grp: HashMap<String, Usage>,
    assoc_user: HashMap<(String, String), Usage>,
    account: HashMap<String, Usage>,
}

impl<'a> LimitState<'a> {
    pub fn new(set: &'a AssocSet) -> Self {
        LimitState {
            any: set.has_limits(),
            set,
            qos_user: HashMap::new(),
            qos_grp: HashMap::new(),
            assoc_user: HashMap::new(),
            account: HashMap::new(),
        }
    }

    /// Whether any association or QOS could limit a job (without, `check`
    /// finds nothing and `add` counts nothing).
    pub fn any(&self) -> bool {
        self.any
    }

    /// The QOS a job runs under.
    pub fn qos_name<'b>(&'b self, o: &'b Owner, partition: &str) -> &'b str {
        if !o.qos.is_empty() {
            return &o.qos;
        }
        self.set
            .find(&o.user, &o.account, partition)
            .map(|a| a.default_qos.as_str())
            .filter(|q| !q.is_empty())
            .unwrap_or("normal")
    }

    /// Count a running (or just started) job.
    pub fn add(&mut self, o: &Owner, partition: &str, t: &Tres) {
        if self.set.is_empty() && self.set.qos.is_empty() {
            return;
        }
        let q = self.qos_name(o, partition).to_string();
        self.qos_user
            .entry((q.clone(), o.user.clone()))
            .or_default()
            .add(t);
        self.qos_grp.entry(q).or_default().add(t);
        self.assoc_user
            .entry((o.account.clone(), o.user.clone()))
            .or_default()
            .add(t);
        let accounts: Vec<String> = self
            .set
            .lineage(&o.account)
            .iter()
            .map(|a| a.account.clone())
            .collect();
        for a in accounts {
            self.account.entry(a).or_default().add(t);
        }
    }

    /// The reason a job may not start now, if a limit holds it.
    pub fn check(
        &self,
        o: &Owner,
        partition: &str,
        t: &Tres,
        time_limit_min: u32,
    ) -> Option<&'static str> {
        if let Some(q) = self.set.qos.get(self.qos_name(o, partition)) {
            let key = (q.name.clone(), o.user.clone());
            if let Some(r) = check_one(
                Scope::Qos,
                &q.limits,
                t,
                time_limit_min,
                self.qos_user.get(&key),
                self.qos_grp.get(&q.name),
            ) {
                return Some(r);
            }
        }
        if let Some(a) = self.set.find(&o.user, &o.account, partition) {
            let key = (o.account.clone(), o.user.clone());
            let u = self.assoc_user.get(&key);
            if let Some(r) = check_one(Scope::Assoc, &a.limits, t, time_limit_min, u, u) {
                return Some(r);
            }
            for anc in self.set.lineage(&o.account) {
                let g = self.account.get(&anc.account);
                let l = Limits {
                    grp_tres: anc.limits.grp_tres.clone(),
                    grp_jobs: anc.limits.grp_jobs,
                    max_wall_min: anc.limits.max_wall_min,
                    ..Default::default()
                };
                if let Some(r) = check_one(Scope::Assoc, &l, t, time_limit_min, None, g) {
                    return Some(r);
                }
            }
        }
        None
    }
}

fn check_one(
    scope: Scope,
    l: &Limits,
    t: &Tres,
    time_limit_min: u32,
    user: Option<&Usage>,
    grp: Option<&Usage>,
) -> Option<&'static str> {
    let q = scope == Scope::Qos;
    if let Some(w) = l.max_wall_min {
        if time_limit_min > w {
            return Some(if q {
                "QOSMaxWallDurationPerJobLimit"
            } else {
                "AssocMaxWallDurationPerJobLimit"
            });
        }
    }
    if let Some(k) = over(&l.max_tres_per_job, None, t) {
        return Some(tres_reason(scope, Kind::PerJob, &k));
    }
    if let Some(m) = l.max_jobs {
        if user.map_or(0, |u| u.jobs) >= m {
            return Some(if q {
                "QOSMaxJobsPerUserLimit"
            } else {
                "AssocMaxJobsLimit"
            });
        }
    }
    if let Some(k) = over(&l.max_tres_per_user, user.map(|u| &u.tres), t) {
        return Some(tres_reason(scope, Kind::PerUser, &k));
    }
    if let Some(m) = l.grp_jobs {
        if grp.map_or(0, |u| u.jobs) >= m {
            return Some(if q {
                "QOSGrpJobsLimit"
            } else {
                "AssocGrpJobsLimit"
            });
        }
    }
    if let Some(k) = over(&l.grp_tres, grp.map(|u| &u.tres), t) {
        return Some(tres_reason(scope, Kind::Grp, &k));
    }
    None
}
