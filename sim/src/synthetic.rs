//! `--synthetic N`: a generated workload of N jobs (array tasks counted)
//! shaped to the cluster, deterministic for a seed (a xorshift generator,
//! no clock).
//!
//! Mix: mostly small CPU jobs (1-32 CPUs), 7% whole-node multi-node jobs,
//! 15% GPU jobs where the cluster has GPUs; run times log-uniform from 30 s
//! to 8 h; limits 1.2-4x the run time, except 8% that run into theirs;
//! 5% fail, 2% are cancelled while running and 1% while pending; 3% of
//! submissions are arrays (2-20 tasks), 3% depend (afterok) on the
//! user's previous job. 16 users with skewed activity in 4 accounts;
//! arrivals Poisson, at a rate that offers about `load` of the CPUs.

use drover_ctld::sched::synth::Rng;

use crate::trace::{Mem, Outcome, TraceJob};

/// One partition as the generator sees it.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    /// CPUs of each of its nodes.
    pub node_cpus: Vec<u32>,
    /// GPUs of each of its nodes (count, type).
    pub node_gpus: Vec<(u32, String)>,
    /// MaxTime, minutes (None: unlimited).
    pub max_time: Option<u32>,
}

/// What the generator needs to know of the cluster: its partitions (jobs
/// go to each in proportion to its CPUs, shaped to fit it).
#[derive(Debug, Clone)]
pub struct Shape {
    pub partitions: Vec<Part>,
    /// CPUs of the whole cluster (the offered load is a fraction of them).
    pub total_cpus: u64,
}

/// 2026-01-01T00:00:00Z: when generated workloads start.
pub const START: i64 = 1_767_225_600;

fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A partition index, in proportion to `weights`.
fn pick_part(rng: &mut Rng, weights: &[u64]) -> Option<usize> {
    let sum: u64 = weights.iter().sum();
    if sum == 0 {
        return None;
    }
    let mut x = rng.range(0, sum - 1);
    for (k, &w) in weights.iter().enumerate() {
        if x < w {
            return Some(k);
        }
        x -= w;
    }
    None
}

/// `n` jobs offering about `load` (0.9 = 90 %) of the cluster's CPUs.
pub fn generate(n: usize, seed: u64, shape: &Shape, load: f64) -> Vec<TraceJob> {
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5EED);
    let total_cpus = shape.total_cpus.max(1);
    let part_weight: Vec<u64> = shape
        .partitions
        .iter()
        .map(|p| p.node_cpus.iter().map(|&c| u64::from(c)).sum::<u64>())
        .collect();
    let weights: Vec<u64> = (1..=16u64).map(|k| 1000 / k).collect();
    let wsum: u64 = weights.iter().sum();
    let mut jobs: Vec<TraceJob> = Vec::with_capacity(n);
    let mut last_of_user: Vec<Option<usize>> = vec![None; 16];
    // Submissions (an array's tasks share one), with their CPU-seconds.
    let mut subs: Vec<(usize, usize)> = Vec::new();
    let mut work = 0f64;
    while jobs.len() < n {
        let mut pick = rng.range(0, wsum - 1);
        let mut user = 0;
        while pick >= weights[user] {
            pick -= weights[user];
            user += 1;
        }
        let part = pick_part(&mut rng, &part_weight).and_then(|k| shape.partitions.get(k));
        let (partition, max_time) =
            part.map_or((String::new(), None), |p| (p.name.clone(), p.max_time));
        let node_cpus = part.map_or(&[][..], |p| &p.node_cpus[..]);
        let max_cpus = node_cpus.iter().copied().max().unwrap_or(1).max(1);
        let min_cpus = node_cpus.iter().copied().min().unwrap_or(1).max(1);
        let nodes = node_cpus.len() as u32;
        let gpu_node = part.and_then(|p| {
            p.node_gpus
                .iter()
                .filter(|g| g.0 > 0)
                .max_by_key(|g| g.0)
                .cloned()
        });
        let all_gpu = part.is_some_and(|p| p.node_gpus.iter().all(|g| g.0 > 0));
        let kind = rng.range(0, 99);
        let (mut nodes_req, mut gpus, mut gpu_type) = (0u32, 0u32, String::new());
        let cpus = match (&gpu_node, kind) {
            (Some((g, t)), k) if k < 15 || all_gpu && k < 80 => {
                gpus = rng.pick(&[1u32, 1, 2, 4, 8]).min(*g);
                nodes_req = 1;
                gpu_type = t.clone();
                (gpus * 4).min(max_cpus)
            }
            (_, k) if k < 22 && nodes >= 4 => {
                nodes_req = rng.pick(&[2u32, 2, 4, 8]).min(nodes / 2);
                nodes_req * min_cpus
            }
            _ => rng.pick(&[1u32, 1, 1, 2, 4, 8, 16, 32]).min(min_cpus),
        };
        let tasks = if rng.range(0, 99) < 3 {
            rng.range(2, 20) as usize
        } else {
            1
        };
        let depend = tasks == 1 && rng.range(0, 99) < 3;
        let first = jobs.len();
        let array_id = (first + 1).to_string();
        // An array's tasks run about as long as each other.
        let typical = (30f64.ln() + unit(&mut rng) * (28_800f64.ln() - 30f64.ln())).exp();
        for t in 0..tasks.min(n - first) {
            let run = (typical * (0.8 + 0.2 * unit(&mut rng))) as i64;
            let fate = rng.range(0, 99);
            let (mut run, mut outcome, mut cancel_at) = (Some(run), Outcome::Completed, None);
            let limit_min = if fate < 8 {
                outcome = Outcome::Timeout;
                let m = (run.unwrap_or(60) / 60).max(1) as u32;
                run = Some(i64::from(m) * 60 + 5);
                m
            } else {
                let f = 1.2 + unit(&mut rng) * 2.8;
                let m = ((typical * f) / 60.0).ceil() as u32;
                m.div_ceil(5) * 5
            };
            let limit_min = max_time.map_or(limit_min, |mx| limit_min.min(mx));
            if (8..13).contains(&fate) {
                outcome = Outcome::Failed(1);
            } else if (13..15).contains(&fate) {
                outcome = Outcome::Cancelled;
                run = run.map(|r| r / 2);
            } else if fate == 15 {
                outcome = Outcome::Cancelled;
                run = None;
                cancel_at = Some(rng.range(60, 3600) as i64); // after submit; set below
            }
            work += f64::from(cpus) * run.unwrap_or(0) as f64;
            let id = jobs.len() + 1;
            jobs.push(TraceJob {
                line: 0,
                id: if tasks > 1 {
                    format!("{array_id}_{t}")
                } else {
                    id.to_string()
                },
                user: format!("user{:02}", user + 1),
                account: format!("acct{}", user % 4 + 1),
                partition: partition.clone(),
                qos: String::new(),
                submit: 0,
                nodes: nodes_req,
                cpus,
                mem: Mem::PerCpu(1000),
                gpus,
                gpu_type: gpu_type.clone(),
                time_limit: Some(limit_min.max(1)),
                run,
                outcome,
                cancel_at,
                array: (tasks > 1).then(|| (array_id.clone(), t as u32)),
                dependency: match (depend, last_of_user[user]) {
                    (true, Some(prev)) => format!("afterok:{}", jobs[prev].id),
                    _ => String::new(),
                },
            });
        }
        if tasks == 1 {
            last_of_user[user] = Some(first);
        }
        subs.push((first, jobs.len()));
    }
    // Arrivals: exponential gaps at the rate that offers `load`.
    let span = work / (total_cpus as f64 * load.max(0.01));
    let gap = span / subs.len().max(1) as f64;
    let mut t = START as f64;
    for &(a, b) in &subs {
        t += -gap * (1.0 - unit(&mut rng)).ln();
        for j in &mut jobs[a..b] {
            j.submit = t as i64;
            if let Some(c) = j.cancel_at.as_mut() {
                *c += j.submit;
            }
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            partitions: vec![
                Part {
                    name: "batch".into(),
                    node_cpus: vec![32; 8],
                    node_gpus: vec![(0, String::new()); 8],
                    max_time: Some(600),
                },
                Part {
                    name: "gpu".into(),
                    node_cpus: vec![32; 2],
                    node_gpus: vec![(4, "a100".into()); 2],
                    max_time: None,
                },
            ],
            total_cpus: 320,
        }
    }

    #[test]
    fn deterministic_and_shaped() {
        let a = generate(500, 7, &shape(), 0.9);
        let b = generate(500, 7, &shape(), 0.9);
        let c = generate(500, 8, &shape(), 0.9);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 500);
        assert!(a.windows(2).all(|w| w[0].submit <= w[1].submit));
        assert!(a
            .iter()
            .all(|j| j.cpus >= 1 && j.cpus <= 8 * 32 && j.gpus <= 4));
        assert!(a.iter().all(|j| j.gpus == 0 || j.partition == "gpu"));
        assert!(a
            .iter()
            .all(|j| j.partition == "gpu" || j.time_limit <= Some(600)));
        assert!(a.iter().any(|j| j.array.is_some()));
        assert!(a.iter().any(|j| !j.dependency.is_empty()));
        assert!(a.iter().any(|j| j.gpus > 0));
        assert!(a.iter().any(|j| j.outcome == Outcome::Timeout));
        assert!(a
            .iter()
            .filter(|j| j.cancel_at.is_some())
            .all(|j| j.cancel_at > Some(j.submit)));
    }
}
