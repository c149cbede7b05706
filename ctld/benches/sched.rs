//! Scheduler core benchmark and replay simulator.
//!
//!   cargo bench -p drover-ctld --bench sched                 # both pass sizes
//!   cargo bench -p drover-ctld --bench sched -- pass 10000 1000 [bf_max_job_test]
//!   cargo bench -p drover-ctld --bench sched -- replay 2000 64
//!   cargo bench -p drover-ctld --bench sched -- requests 10000
//!
//! A pass: the whole queue over a cluster ~85% busy, backfill on, every
//! pending job planned (bf_max_job_test = queue length unless given).

use std::time::Instant;

use drover_ctld::assoc::AssocSet;
use drover_ctld::sched::replay::{replay, TraceJob};
use drover_ctld::sched::synth::{self, Rng};
use drover_ctld::sched::{plan, Decision, Input, Params};

fn peak_rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb / 1024)
}

/// FNV-1a over the decisions as printed: equal digests, equal decisions
/// (to check that a speed-up changes nothing).
fn digest(d: &[Decision]) -> u64 {
    format!("{d:?}")
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

fn pass(jobs: usize, nodes: usize, max_test: Option<usize>) {
    let mut rng = Rng::new(42);
    let (mut ns, parts) = synth::cluster(nodes, &mut rng);
    let now = 1_700_000_000;
    let running = synth::fill(&mut ns, now, 0.85, &mut rng);
    let queue: Vec<_> = (0..jobs)
        .map(|i| synth::job(i as u32 + 1, &mut rng, 200))
        .collect();
    let params = Params {
        bf_max_job_test: max_test.unwrap_or(jobs),
        ..Params::default()
    };
    let assoc = AssocSet::default();
    let input = Input {
        now,
        params: &params,
        nodes: &ns,
        parts: &parts,
        running: &running,
        jobs: &queue,
        resvs: &[],
        assoc: &assoc,
        index: None,
    };
    let runs = if jobs * nodes > 100_000_000 { 1 } else { 3 };
    let mut times = Vec::new();
    let mut d = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        d = plan(&input);
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let started = d
        .iter()
        .filter(|x| matches!(x, Decision::Start { .. }))
        .count();
    let planned = d
        .iter()
        .filter(|x| matches!(x, Decision::Wait { start: Some(_), .. }))
        .count();
    println!(
        "pass: {jobs} pending x {nodes} nodes ({} running), bf_max_job_test={}: \
         {:.1} ms (median of {runs}); started {started}, planned {planned}; peak RSS {} MiB; \
         decisions digest {:016x}",
        running.len(),
        params.bf_max_job_test,
        times[times.len() / 2],
        peak_rss_mb(),
        digest(&d)
    );
}

/// What a controller pass spends turning the queue's requests into the
/// scheduler's form: resolving every job's options (what each pass did
/// before requests were resolved once, at submit) against cloning the
/// stored scheduler form (what a pass does now).
fn requests_mode(jobs: usize) {
    use drover_proto::JobSpec;
    let cfg = drover_conf::Config::default();
    let mut part = drover_conf::PartitionConf::new("batch");
    part.def_mem_per_cpu = Some(2000);
    let node_idx = |n: &str| n.strip_prefix("n").and_then(|i| i.parse::<usize>().ok());
    let mut rng = Rng::new(11);
    let specs: Vec<JobSpec> = (0..jobs)
        .map(|_| JobSpec {
            ntasks: rng.range(1, 32) as u32,
            cpus_per_task: rng.range(1, 4) as u32,
            mem_per_node_mb: if rng.range(0, 1) == 0 { 4000 } else { 0 },
            gres: if rng.range(0, 4) == 0 {
                "gpu:a100:2".into()
            } else {
                String::new()
            },
            constraint: if rng.range(0, 3) == 0 {
                "ib&(skylake|icelake)".into()
            } else {
                String::new()
            },
            exclude: if rng.range(0, 9) == 0 {
                "n[1-8]".into()
            } else {
                String::new()
            },
            ..Default::default()
        })
        .collect();
    let resolve_all = || -> Vec<drover_ctld::sched::Request> {
        specs
            .iter()
            .filter_map(|s| drover_ctld::request::resolve(s, Some(&part), &cfg).ok())
            .filter_map(|r| drover_ctld::request::to_sched(&r, node_idx).ok())
            .collect()
    };
    let stored = resolve_all();
    let mut per_pass = Vec::new();
    let mut cached = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let v = resolve_all();
        per_pass.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(v.len(), stored.len());
        let t = Instant::now();
        let v: Vec<_> = stored.to_vec();
        cached.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(v, stored);
    }
    per_pass.sort_by(f64::total_cmp);
    cached.sort_by(f64::total_cmp);
    println!(
        "requests: {jobs} pending: resolved on every pass {:.2} ms, stored form cloned {:.2} ms \
         (medians of 5)",
        per_pass[2], cached[2]
    );
}

fn replay_mode(jobs: u32, nodes: usize) {
    let mut rng = Rng::new(7);
    let (ns, parts) = synth::cluster(nodes, &mut rng);
    let trace: Vec<TraceJob> = (0..jobs)
        .map(|i| {
            let job = synth::job(i + 1, &mut rng, 20);
            let run = (job.time_limit as f64 * (rng.range(5, 100) as f64 / 100.0)) as i64;
            TraceJob {
                submit: rng.range(0, 86400) as i64,
                run,
                job,
            }
        })
        .collect();
    for (name, params) in [
        ("sched/backfill", Params::default()),
        (
            "sched/builtin",
            Params {
                backfill: false,
                ..Params::default()
            },
        ),
    ] {
        let t = Instant::now();
        let s = replay(&ns, &parts, &params, &trace, 365 * 86400);
        println!(
            "replay {name}: {} jobs on {nodes} nodes: utilization {:.1}%, mean wait {:.0} s, \
             mean bounded slowdown {:.2}, makespan {} s ({} passes, {:.1} s wall)",
            s.finished,
            s.utilization * 100.0,
            s.mean_wait,
            s.mean_slowdown,
            s.makespan,
            s.passes,
            t.elapsed().as_secs_f64()
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(d);
    match args.first().map(String::as_str) {
        Some("pass") => pass(
            num(1, 10_000),
            num(2, 1_000),
            args.get(3).and_then(|v| v.parse().ok()),
        ),
        Some("replay") => replay_mode(num(1, 2000) as u32, num(2, 64)),
        Some("requests") => requests_mode(num(1, 10_000)),
        _ => {
            pass(10_000, 1_000, None);
            pass(100_000, 10_000, None);
            replay_mode(2000, 64);
        }
    }
}
