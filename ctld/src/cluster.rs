//! Nodes and partitions as the controller tracks them: configuration plus
//! live state (registration, heartbeats, drain/down, allocations).

use std::collections::BTreeSet;

use drover_conf::slurmconf::{Config, NodeConf, PartitionConf};

use crate::sched::{GresDev, NodeSnap, PartSnap, Request, Share};

mod kept;

/// One CPU's use: jobs on it, and the least share limit among them since
/// it was last free (1: a job that shares it with nobody).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuUse {
    pub jobs: u32,
    pub cap: u32,
}

impl CpuUse {
    /// May a job sharing up to `share` per CPU (1: none) take it?
    pub fn open_to(self, share: u32) -> bool {
        self.jobs == 0 || self.jobs < share.min(self.cap)
    }

    fn take(&mut self, share: u32) {
        let share = share.max(1);
        self.cap = if self.jobs == 0 {
            share
        } else {
            self.cap.min(share)
        };
        self.jobs = self.jobs.saturating_add(1);
    }

    fn give(&mut self) {
        self.jobs = self.jobs.saturating_sub(1);
        if self.jobs == 0 {
            self.cap = 0;
        }
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub conf: NodeConf,
    pub gres: Vec<GresDev>,
    pub partitions: Vec<String>,
    // Live state.
    pub registered: bool,
    pub responding: bool,
    /// Unix seconds of the last message from the agent (or controller start).
    pub last_seen: i64,
    pub drain: bool,
    /// DOWN: set by an admin or after SlurmdTimeout without word from the agent.
    pub down: bool,
    /// Down because it stopped answering (ReturnToService may revive it).
    pub down_not_responding: bool,
    pub reason: String,
    pub reason_uid: u32,
    pub reason_time: i64,
    /// Per CPU: the jobs on it (OverSubscribe lets several share one).
    pub cpu_use: Vec<CpuUse>,
    pub alloc_mem: u64,
    pub jobs: BTreeSet<u32>,
    pub agent_start_time: i64,
    pub boot_time: i64,
    pub last_busy: i64,
    pub cpu_load: u32,
    pub free_mem: u64,
    pub os: String,
    pub version: String,
    /// `State=CLOUD` in the configuration.
    pub cloud: bool,
    /// Power saving (`power.rs`): on, powering down, off, powering up.
    pub power: crate::nodepower::Power,
    /// When `power` was entered.
    pub power_since: i64,
    /// Power down once idle (scontrol POWER_DOWN / POWER_DOWN_ASAP).
    pub power_down_asap: bool,
    /// A CLOUD node's address as learned from its registration (its
    /// NodeAddr not configured, or `SlurmctldParameters=cloud_reg_addrs`).
    pub learned_addr: Option<String>,
}

impl Node {
    pub fn new(conf: NodeConf, partitions: Vec<String>, now: i64) -> Node {
        let mut gres = Vec::new();
        for g in &conf.gres {
            let already = gres.iter().filter(|d: &&GresDev| d.name == g.name).count() as u32;
            for k in 0..g.count.min(4096) as u32 {
                gres.push(GresDev {
                    name: g.name.clone(),
                    r#type: g.r#type.clone().unwrap_or_default(),
                    index: already + k,
                    free: true,
                });
            }
        }
        let state = conf.state.to_ascii_uppercase();
        let words: Vec<&str> = state.split('+').collect();
        let (drain, down) = (
            state.starts_with("DRAIN"),
            state == "DOWN" || state == "FAIL",
        );
        let cloud = words.contains(&"CLOUD");
        let off = cloud || words.contains(&"POWERED_DOWN") || words.contains(&"POWER_DOWN");
        Node {
            cpu_use: vec![CpuUse::default(); conf.cpus as usize],
            reason: conf.reason.clone().unwrap_or_default(),
            conf,
            gres,
            partitions,
            registered: false,
            responding: false,
            last_seen: now,
            drain,
            down,
            down_not_responding: false,
            reason_uid: 0,
            reason_time: if drain || down { now } else { 0 },
            alloc_mem: 0,
            jobs: BTreeSet::new(),
            agent_start_time: 0,
            boot_time: 0,
            last_busy: now,
            cpu_load: 0,
            free_mem: 0,
            os: String::new(),
            version: String::new(),
            cloud,
            power: if off {
                crate::nodepower::Power::Off
            } else {
                crate::nodepower::Power::On
            },
            power_since: now,
            power_down_asap: false,
            learned_addr: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.conf.name
    }

    pub fn future(&self) -> bool {
        self.conf.state.eq_ignore_ascii_case("FUTURE")
    }

    /// May new work start here? A powered-down node (or one powering up)
    /// may: the job waits in CONFIGURING while it comes up.
    pub fn usable(&self) -> bool {
        use crate::nodepower::Power;
        let up = match self.power {
            Power::On => self.registered && self.responding,
            Power::Off | Power::PoweringUp => true,
            Power::PoweringDown => false,
        };
        up && !self.power_down_asap && !self.drain && !self.down && !self.future()
    }

    pub fn cpus_alloc(&self) -> u32 {
        self.cpu_use.iter().filter(|a| a.jobs > 0).count() as u32
    }

    /// Base state name as sinfo/scontrol use it.
    pub fn state_name(&self) -> &'static str {
        let used = self.cpus_alloc();
        if self.future() {
            "FUTURE"
        } else if self.down {
            "DOWN"
        } else if self.drain {
            if self.jobs.is_empty() {
                "DRAINED"
            } else {
                "DRAINING"
            }
        } else if !self.registered && self.power == crate::nodepower::Power::On {
            "UNKNOWN"
        } else if used == 0 && self.jobs.is_empty() {
            "IDLE"
        } else if used >= self.conf.cpus {
            "ALLOCATED"
        } else {
            "MIXED"
        }
    }

    pub fn snap(&self) -> NodeSnap {
        NodeSnap {
            usable: self.usable(),
            cpus: self.conf.cpus,
            free_cpus: self
                .cpu_use
                .iter()
                .enumerate()
                .filter(|(_, a)| a.jobs == 0)
                .map(|(i, _)| i as u32)
                .collect(),
            real_memory: self.conf.real_memory,
            free_memory: self.conf.real_memory.saturating_sub(self.alloc_mem),
            gres: self.gres.clone(),
            features: self.conf.features.clone(),
            weight: self.conf.weight,
            jobs: self.jobs.len() as u32,
            threads: self.conf.threads_per_core.max(1),
            ready: 0,
            shared: self
                .cpu_use
                .iter()
                .enumerate()
                .filter(|(_, a)| a.jobs > 0 && a.cap > 1)
                .map(|(i, a)| crate::sched::SharedCpu {
                    id: i as u32,
                    jobs: a.jobs,
                    cap: a.cap,
                    // The controller fills in expected ends
                    // (`Ctld::share_untils`).
                    until: i64::MAX,
                })
                .collect(),
        }
    }

    /// "gpu:a100:4" as configured.
    pub fn gres_text(&self) -> String {
        self.conf
            .gres
            .iter()
            .map(|g| match &g.r#type {
                Some(t) => format!("{}:{}:{}", g.name, t, g.count),
                None => format!("{}:{}", g.name, g.count),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// "gpu:a100:1(IDX:0)" for devices in use.
    pub fn gres_used_text(&self) -> String {
        let mut out = Vec::new();
        let mut names: Vec<(&str, &str)> = self
            .gres
            .iter()
            .map(|d| (d.name.as_str(), d.r#type.as_str()))
            .collect();
        names.dedup();
        for (name, ty) in names {
            let used: Vec<u32> = self
                .gres
                .iter()
                .filter(|d| d.name == name && d.r#type == ty && !d.free)
                .map(|d| d.index)
                .collect();
            let idx = if used.is_empty() {
                "N/A".to_string()
            } else {
                crate::array::ranges(&used)
            };
            if ty.is_empty() {
                out.push(format!("{name}:{}(IDX:{idx})", used.len()));
            } else {
                out.push(format!("{name}:{ty}:{}(IDX:{idx})", used.len()));
            }
        }
        out.join(",")
    }
}

#[derive(Debug, Clone)]
pub struct Partition {
    pub conf: PartitionConf,
    pub nodes: Vec<usize>,
    /// AllowGroups resolved to gids (None = ALL).
    pub allow_gids: Option<Vec<u32>>,
}

impl Partition {
    /// Its jobs are scheduled: UP, or DRAIN (which takes no new jobs but
    /// runs those it has), as Slurm's PARTITION_SCHED.
    pub fn up(&self) -> bool {
        let s = &self.conf.state;
        s.eq_ignore_ascii_case("UP") || s.eq_ignore_ascii_case("DRAIN")
    }

    /// It takes new jobs: UP or DOWN (Slurm's PARTITION_SUBMIT).
    pub fn accepts_jobs(&self) -> bool {
        let s = &self.conf.state;
        s.eq_ignore_ascii_case("UP") || s.eq_ignore_ascii_case("DOWN")
    }
}

/// Nodes and partitions, indexed.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    /// Node index by name (FxHash: looked up for every allocation of
    /// every running job on each pass).
    pub by_name: rustc_hash::FxHashMap<String, usize>,
    pub parts: Vec<Partition>,
    pub default_part: Option<usize>,
    /// Every node as configured, empty and usable ([`Cluster::pristine`]),
    /// built on first use; [`Cluster::node_conf_changed`] drops it.
    pristine: std::cell::OnceCell<Vec<NodeSnap>>,
    /// Answers of [`Cluster::fits_pristine`] by partition and request, kept
    /// as long as the pristine cluster and the partitions' node lists.
    fits: std::cell::RefCell<rustc_hash::FxHashMap<usize, rustc_hash::FxHashMap<Request, bool>>>,
    /// Each node as the scheduler sees it, kept between passes
    /// ([`Cluster::take_snaps`]): only the nodes whose resources changed
    /// since (`stale`) are built again.
    snaps: Vec<NodeSnap>,
    stale: Vec<bool>,
    /// The best-fit index of the kept snapshot, kept current with it
    /// ([`Cluster::take_index`]).
    index: Option<crate::sched::Index>,
    /// Bumped whenever the kept snapshot is dropped or built afresh: one
    /// lent to a pass before then is not taken back ([`Cluster::give_back`]).
    kept_gen: u64,
}

impl Cluster {
    pub fn from_config(cfg: &Config, now: i64) -> Cluster {
        let mut nodes = Vec::with_capacity(cfg.nodes.len());
        let mut by_name = rustc_hash::FxHashMap::default();
        for n in &cfg.nodes {
            by_name.insert(n.name.clone(), nodes.len());
            nodes.push(Node::new(n.clone(), Vec::new(), now));
        }
        let mut c = Cluster {
            nodes,
            by_name,
            parts: Vec::new(),
            default_part: None,
            pristine: std::cell::OnceCell::new(),
            fits: Default::default(),
            snaps: Vec::new(),
            stale: Vec::new(),
            index: None,
            kept_gen: 0,
        };
        c.set_partitions(&cfg.partitions);
        c
    }

    /// Take these partitions (slurm.conf's, or as `scontrol create|update|
    /// delete partition` left them): indices, the default partition and each
    /// node's partition list follow.
    pub fn set_partitions(&mut self, confs: &[drover_conf::PartitionConf]) {
        self.fits.get_mut().clear();
        self.index = None;
        self.kept_gen += 1;
        self.parts = confs
            .iter()
            .map(|p| Partition {
                nodes: p
                    .nodes
                    .iter()
                    .filter_map(|n| self.by_name.get(n).copied())
                    .collect(),
                allow_gids: p.allow_groups.as_ref().map(|gs| {
                    gs.iter()
                        .filter_map(|g| crate::users::group_gid(g))
                        .collect()
                }),
                conf: p.clone(),
            })
            .collect();
        self.default_part = confs
            .iter()
            .rposition(|p| p.default)
            .or(if self.parts.len() == 1 { Some(0) } else { None });
        for n in &mut self.nodes {
            n.partitions = confs
                .iter()
                .filter(|p| p.nodes.iter().any(|x| x == n.name()))
                .map(|p| p.name.clone())
                .collect();
        }
    }

    pub fn node_idx(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn part_idx(&self, name: &str) -> Option<usize> {
        self.parts.iter().position(|p| p.conf.name == name)
    }

    /// Nodes and partitions as the scheduler sees them, built afresh.
    pub fn snapshot(&self) -> (Vec<NodeSnap>, Vec<PartSnap>) {
        let nodes = self.nodes.iter().map(Node::snap).collect();
        (nodes, self.part_snaps())
    }

    /// Partitions as the scheduler sees them.
    pub fn part_snaps(&self) -> Vec<PartSnap> {
        self.parts
            .iter()
            .map(|p| PartSnap {
                nodes: p.nodes.clone(),
                up: p.up(),
                priority_tier: p.conf.priority_tier,
                name: p.conf.name.clone(),
                share: Share::parse(&p.conf.over_subscribe),
            })
            .collect()
    }

    /// Every node as configured, empty and usable (the submit-time "could
    /// this ever run" check), kept until a node's configuration changes.
    pub fn pristine(&self) -> &[NodeSnap] {
        let p = self
            .pristine
            .get_or_init(|| self.nodes.iter().map(|n| n.snap().pristine()).collect());
        debug_assert_eq!(p.len(), self.nodes.len());
        p
    }

    /// Could `req` be placed on partition `part`'s nodes were they all
    /// empty (the submit-time "could this ever run" check)? A placement
    /// over every node of the partition, so the answer is kept: equal
    /// requests are the rule (arrays, scripts submitted in loops). At most
    /// `FITS_KEPT` answers: beyond, the table starts afresh.
    pub fn fits_pristine(&self, req: &Request, part: usize) -> bool {
        const FITS_KEPT: usize = 4096;
        if let Some(&fits) = self.fits.borrow().get(&part).and_then(|t| t.get(req)) {
            return fits;
        }
        let nodes = &self.parts[part].nodes;
        let fits = (req.min_nodes as usize) <= nodes.len()
            && crate::sched::place(req, nodes, self.pristine()).is_ok();
        let mut tables = self.fits.borrow_mut();
        let table = tables.entry(part).or_default();
        if table.len() >= FITS_KEPT {
            table.clear();
        }
        table.insert(req.clone(), fits);
        fits
    }

    /// A node's configuration (features, weight) changed: the pristine
    /// cluster is built again on next use.
    pub fn node_conf_changed(&mut self) {
        self.pristine.take();
        self.fits.get_mut().clear();
        self.snaps.clear();
        self.index = None;
        self.kept_gen += 1;
    }

    /// How many jobs may share each CPU of a job with this spec running in
    /// partition `part` (OverSubscribe; 1: its CPUs are its own).
    pub fn share_limit(&self, part: usize, spec: &drover_proto::JobSpec) -> u32 {
        let Some(p) = self.parts.get(part) else {
            return 1;
        };
        if spec.exclusive || p.conf.over_subscribe.eq_ignore_ascii_case("EXCLUSIVE") {
            return 1;
        }
        Share::parse(&p.conf.over_subscribe).limit_for(false, spec.oversubscribe)
    }

    /// Whether a planned allocation (positions as in the snapshot `nodes`)
    /// is still free and its nodes still usable, for a job sharing each
    /// CPU with up to `share` jobs.
    pub fn still_free(
        &self,
        allocs: &[crate::sched::Alloc],
        nodes: &[NodeSnap],
        share: u32,
    ) -> bool {
        allocs.iter().all(|a| {
            let Some(n) = self.nodes.get(a.node) else {
                return false;
            };
            n.usable()
                && a.cpu_ids
                    .iter()
                    .all(|&c| n.cpu_use.get(c as usize).is_some_and(|u| u.open_to(share)))
                && a.gres.iter().all(|&g| {
                    nodes
                        .get(a.node)
                        .and_then(|s| s.gres.get(g))
                        .is_some_and(|d| {
                            n.gres
                                .iter()
                                .any(|x| x.name == d.name && x.index == d.index && x.free)
                        })
                })
        })
    }

    /// Take a running job's resources out of its nodes (`share`: jobs that
    /// may share each of its CPUs; 0 or 1: they are its own).
    pub fn allocate(&mut self, job_id: u32, allocs: &[drover_proto::NodeAlloc], share: u32) {
        self.mark(allocs, true, share);
        for a in allocs {
            let Some(&i) = self.by_name.get(&a.node) else {
                continue;
            };
            self.touch(i);
            let n = &mut self.nodes[i];
            n.alloc_mem += a.mem_mb;
            n.jobs.insert(job_id);
        }
    }

    /// A job suspended by preemption lends its CPUs and GPUs (`allocs`
    /// without memory): they are free for others, the job stays on its nodes.
    pub fn lend(&mut self, allocs: &[drover_proto::NodeAlloc]) {
        self.mark(allocs, false, 1);
    }

    /// The lender resumes: its CPUs and GPUs are taken again (`share` as
    /// in [`Cluster::allocate`]).
    pub fn take_back(&mut self, allocs: &[drover_proto::NodeAlloc], share: u32) {
        self.mark(allocs, true, share);
    }

    fn mark(&mut self, allocs: &[drover_proto::NodeAlloc], used: bool, share: u32) {
        for a in allocs {
            let Some(&i) = self.by_name.get(&a.node) else {
                continue;
            };
            self.touch(i);
            let n = &mut self.nodes[i];
            for &c in &a.cpu_ids {
                if let Some(slot) = n.cpu_use.get_mut(c as usize) {
                    if used {
                        slot.take(share);
                    } else {
                        slot.give();
                    }
                }
            }
            for g in &a.gres {
                for &idx in &g.indices {
                    if let Some(d) = n
                        .gres
                        .iter_mut()
                        .find(|d| d.name == g.name && d.index == idx)
                    {
                        d.free = !used;
                    }
                }
            }
        }
    }

    /// Are all these CPUs and GPUs free (CPUs: for a job sharing each with
    /// up to `share` jobs)?
    pub fn all_free(&self, allocs: &[drover_proto::NodeAlloc], share: u32) -> bool {
        allocs.iter().all(|a| {
            let Some(&i) = self.by_name.get(&a.node) else {
                return false;
            };
            let n = &self.nodes[i];
            a.cpu_ids
                .iter()
                .all(|&c| n.cpu_use.get(c as usize).is_some_and(|u| u.open_to(share)))
                && a.gres.iter().all(|g| {
                    g.indices.iter().all(|&idx| {
                        n.gres
                            .iter()
                            .any(|d| d.name == g.name && d.index == idx && d.free)
                    })
                })
        })
    }

    /// Give a finished job's resources back.
    pub fn release(&mut self, job_id: u32, allocs: &[drover_proto::NodeAlloc], now: i64) {
        for a in allocs {
            let Some(&i) = self.by_name.get(&a.node) else {
                continue;
            };
            self.touch(i);
            let n = &mut self.nodes[i];
            if !n.jobs.remove(&job_id) {
                continue;
            }
            for &c in &a.cpu_ids {
                if let Some(slot) = n.cpu_use.get_mut(c as usize) {
                    slot.give();
                }
            }
            n.alloc_mem = n.alloc_mem.saturating_sub(a.mem_mb);
            for g in &a.gres {
                for &idx in &g.indices {
                    if let Some(d) = n
                        .gres
                        .iter_mut()
                        .find(|d| d.name == g.name && d.index == idx)
                    {
                        d.free = true;
                    }
                }
            }
            n.last_busy = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::NodeAlloc;

    fn cluster(over_subscribe: &str) -> Cluster {
        let mut cfg = Config::default();
        let mut n = NodeConf::new("n1");
        n.cpus = 4;
        n.real_memory = 4000;
        cfg.nodes = vec![n];
        let mut p = PartitionConf::new("p");
        p.nodes = vec!["n1".into()];
        p.over_subscribe = over_subscribe.into();
        cfg.partitions = vec![p];
        let mut c = Cluster::from_config(&cfg, 0);
        c.nodes[0].registered = true;
        c.nodes[0].responding = true;
        c
    }

    fn alloc(cpus: &[u32], mem: u64) -> Vec<NodeAlloc> {
        vec![NodeAlloc {
            node: "n1".into(),
            cpus: cpus.len() as u32,
            cpu_ids: cpus.to_vec(),
            mem_mb: mem,
            ..Default::default()
        }]
    }

    #[test]
    fn shared_cpus_are_counted_per_cpu_and_released_exactly() {
        let mut c = cluster("FORCE:2");
        let spec = drover_proto::JobSpec::default();
        assert_eq!(c.share_limit(0, &spec), 2);
        let a = alloc(&[0, 1, 2, 3], 100);
        c.allocate(1, &a, 2);
        assert!(c.all_free(&a, 2));
        assert!(!c.all_free(&a, 1));
        c.allocate(2, &a, 2);
        assert!(!c.all_free(&a, 2));
        let n = &c.nodes[0];
        assert_eq!(n.cpus_alloc(), 4);
        assert_eq!(n.alloc_mem, 200);
        let s = n.snap();
        assert!(s.free_cpus.is_empty());
        let v: Vec<(u32, u32, u32)> = s.shared.iter().map(|x| (x.id, x.jobs, x.cap)).collect();
        assert_eq!(v, vec![(0, 2, 2), (1, 2, 2), (2, 2, 2), (3, 2, 2)]);
        // A release twice counts once.
        c.release(1, &a, 5);
        c.release(1, &a, 6);
        assert!(c.all_free(&a, 2));
        assert_eq!(c.nodes[0].snap().shared.len(), 4);
        c.release(2, &a, 7);
        let s = c.nodes[0].snap();
        assert_eq!((s.free_cpus.len(), s.shared.len()), (4, 0));
        assert_eq!(c.nodes[0].cpus_alloc(), 0);
        assert_eq!(c.nodes[0].alloc_mem, 0);
    }

    #[test]
    fn could_ever_run_is_answered_again_after_the_partitions_change() {
        let mut c = cluster("NO");
        let want = |cpus: u32| Request {
            min_nodes: 1,
            max_nodes: 1,
            ntasks: cpus,
            cpus_per_task: 1,
            ..Default::default()
        };
        assert!(c.fits_pristine(&want(4), 0));
        assert!(!c.fits_pristine(&want(8), 0), "one node of 4 CPUs");
        assert!(!c.fits_pristine(&want(8), 0), "the kept answer");
        // The partition loses its node: nothing fits any more.
        let mut empty = PartitionConf::new("p");
        empty.nodes = Vec::new();
        c.set_partitions(&[empty]);
        assert!(!c.fits_pristine(&want(4), 0));
        // The node's configuration changes: answered afresh.
        let mut p = PartitionConf::new("p");
        p.nodes = vec!["n1".into()];
        c.set_partitions(&[p]);
        c.nodes[0].conf.cpus = 8;
        c.node_conf_changed();
        assert!(c.fits_pristine(&want(8), 0));
    }

    #[test]
    fn a_job_that_may_not_share_is_alone() {
        let mut c = cluster("YES:3");
        let mut spec = drover_proto::JobSpec::default();
        assert_eq!(c.share_limit(0, &spec), 1);
        spec.oversubscribe = true;
        assert_eq!(c.share_limit(0, &spec), 3);
        spec.exclusive = true;
        assert_eq!(c.share_limit(0, &spec), 1);
        let a = alloc(&[0, 1], 0);
        c.allocate(1, &a, 1);
        assert!(!c.all_free(&a, 3));
        let s = c.nodes[0].snap();
        assert_eq!(s.free_cpus, vec![2, 3]);
        assert!(s.shared.is_empty());
        // A CPU with a 2-limit job on it takes no third job, whatever the
        // newcomer's own limit.
        let b = alloc(&[2], 0);
        c.allocate(2, &b, 2);
        c.allocate(3, &b, 3);
        assert!(!c.all_free(&b, 3));
        c.release(2, &b, 1);
        assert!(c.all_free(&b, 3));
    }
}
