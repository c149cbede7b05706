//! Synthetic clusters and workloads for the scheduler benchmark and the
//! replay simulator: deterministic (a seeded xorshift), no I/O.

use super::{GresDev, GresReq, JobSnap, NodeSnap, Owner, PartSnap, Request, RunAlloc, RunSnap};

/// A small deterministic generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    /// Uniform in [lo, hi].
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
    pub fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next_u64() % v.len() as u64) as usize]
    }
}

/// `n` nodes: one in five has 8 GPUs; CPU counts 32, 64 or 128.
pub fn cluster(n: usize, rng: &mut Rng) -> (Vec<NodeSnap>, Vec<PartSnap>) {
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let gpus = if i % 5 == 4 { 8 } else { 0 };
        let cpus = if gpus > 0 {
            64
        } else {
            rng.pick(&[32u32, 64, 128])
        };
        let mem = u64::from(cpus) * 4000;
        nodes.push(NodeSnap {
            usable: true,
            cpus,
            free_cpus: (0..cpus).collect(),
            real_memory: mem,
            free_memory: mem,
            gres: (0..gpus)
                .map(|g| GresDev {
                    name: "gpu".into(),
                    r#type: "a100".into(),
                    index: g,
                    free: true,
                })
                .collect(),
            features: if gpus > 0 {
                vec!["gpu".into()]
            } else {
                vec!["cpu".into()]
            },
            weight: 1,
            jobs: 0,
            threads: 1,
            ready: 0,
            shared: Vec::new(),
        });
    }
    let parts = vec![PartSnap {
        nodes: (0..n).collect(),
        up: true,
        priority_tier: 1,
        name: "batch".into(),
        share: super::Share::No,
    }];
    (nodes, parts)
}

/// A job request: mostly small CPU jobs, a fifth GPU jobs, a few
/// multi-node jobs; time limits from 10 minutes to 2 days.
pub fn job(id: u32, rng: &mut Rng, users: u64) -> JobSnap {
    let kind = rng.range(0, 99);
    let mut req = Request {
        min_nodes: 1,
        max_nodes: 1,
        ntasks: 1,
        cpus_per_task: 1,
        mem_per_cpu: 2000,
        ..Default::default()
    };
    if kind < 20 {
        let g = rng.pick(&[1u32, 1, 2, 4, 8]);
        req.gres = vec![GresReq {
            name: "gpu".into(),
            r#type: None,
            count: g,
        }];
        req.ntasks = g * 4;
    } else if kind < 25 {
        let n = rng.pick(&[2u32, 4, 8]);
        req.min_nodes = n;
        req.max_nodes = n;
        req.ntasks = n * 32;
    } else {
        req.ntasks = rng.pick(&[1u32, 1, 2, 4, 8, 16, 32]);
    }
    let limit = rng.pick(&[600i64, 1800, 3600, 4 * 3600, 12 * 3600, 48 * 3600]);
    JobSnap {
        id,
        priority: 1_000_000 - id,
        partitions: [0].into(),
        req: req.into(),
        instances: 1,
        time_limit: limit,
        owner: Owner {
            user: format!("u{}", rng.range(0, users - 1)),
            ..Default::default()
        },
        reservation: None,
    }
}

/// Fill the cluster with running jobs (about `fill` of the CPUs), each
/// ending within two days of `now`.
pub fn fill(nodes: &mut [NodeSnap], now: i64, fill: f64, rng: &mut Rng) -> Vec<RunSnap> {
    let mut out = Vec::new();
    let mut id = 10_000_000;
    for (i, n) in nodes.iter_mut().enumerate() {
        let target = (f64::from(n.cpus) * fill) as usize;
        while n.cpus as usize - n.free_cpus.len() < target {
            let want = rng.range(1, 32).min(n.free_cpus.len() as u64) as usize;
            if want == 0 {
                break;
            }
            let _ids: Vec<u32> = n.free_cpus.drain(..want).collect();
            let mem = want as u64 * 2000;
            n.free_memory = n.free_memory.saturating_sub(mem);
            let mut gres = Vec::new();
            if !n.gres.is_empty() {
                for (k, d) in n.gres.iter_mut().enumerate() {
                    if d.free && gres.len() < (want / 8).max(1) {
                        d.free = false;
                        gres.push(k);
                    }
                }
            }
            n.jobs += 1;
            id += 1;
            out.push(RunSnap {
                id,
                partition: 0,
                allocs: vec![RunAlloc {
                    node: i,
                    cpus: want as u32,
                    mem,
                    gres,
                }]
                .into(),
                end: now + rng.range(60, 2 * 86400) as i64,
                priority: 1,
                owner: Owner::default(),
                preempt_mode: crate::sched::assoc::PreemptMode::Off,
                ending: false,
                share: false,
            });
        }
    }
    out
}
