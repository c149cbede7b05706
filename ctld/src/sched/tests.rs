//! Scenario tests on the pure core, and property tests of its invariants.

use std::sync::Arc;

use super::*;
use proptest::prelude::*;

pub(super) fn node(cpus: u32, mem: u64, gpus: u32) -> NodeSnap {
    NodeSnap {
        usable: true,
        cpus,
        free_cpus: (0..cpus).collect(),
        real_memory: mem,
        free_memory: mem,
        gres: (0..gpus)
            .map(|i| GresDev {
                name: "gpu".into(),
                r#type: "a100".into(),
                index: i,
                free: true,
            })
            .collect(),
        features: vec![],
        weight: 1,
        jobs: 0,
        threads: 1,
        ready: 0,
        shared: Vec::new(),
    }
}

fn req(ntasks: u32, cpt: u32) -> Request {
    Request {
        min_nodes: 1,
        max_nodes: 1,
        ntasks,
        cpus_per_task: cpt,
        ..Default::default()
    }
}

fn job(id: u32, r: Request) -> JobSnap {
    JobSnap {
        id,
        priority: 1000 - id,
        partitions: [0].into(),
        req: r.into(),
        instances: 1,
        time_limit: 3600,
        owner: Owner::default(),
        reservation: None,
    }
}

fn part(n: usize) -> Vec<PartSnap> {
    vec![PartSnap {
        nodes: (0..n).collect(),
        up: true,
        priority_tier: 1,
        name: "p".into(),
        share: Share::No,
    }]
}

fn starts(d: &[Decision]) -> Vec<(u32, Vec<usize>)> {
    d.iter()
        .filter_map(|d| match d {
            Decision::Start { job, allocs, .. } => {
                Some((*job, allocs.iter().map(|a| a.node).collect()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn jobs_pack_onto_a_node_without_overcommit() {
    let nodes = vec![node(4, 4000, 0), node(4, 4000, 0)];
    let jobs: Vec<JobSnap> = (1..=5).map(|i| job(i, req(2, 1))).collect();
    let d = schedule(&nodes, &part(2), &jobs);
    let s = starts(&d);
    // Two 2-CPU jobs fill node 0 before node 1 is used; the fifth waits.
    assert_eq!(
        s,
        vec![(1, vec![0]), (2, vec![0]), (3, vec![1]), (4, vec![1])]
    );
    assert_eq!(reason(&d, 5), "Resources");
}

/// The reason given to a waiting job.
pub(super) fn reason(d: &[Decision], id: u32) -> &'static str {
    d.iter()
        .find_map(|x| match x {
            Decision::Wait { job, reason, .. } if *job == id => Some(*reason),
            _ => None,
        })
        .unwrap_or_else(|| panic!("job {id} does not wait: {d:?}"))
}

#[test]
fn free_cpus_alone_refuse_a_multi_node_job_that_cannot_fit() {
    use super::place::{could_fit, tasks_by_cpus};
    let fits = |r: &Request, cpus: &[u32]| could_fit(r, cpus.iter().map(|&c| tasks_by_cpus(r, c)));
    let mut r = req(128, 1);
    (r.min_nodes, r.max_nodes) = (2, 2);
    // Two 64-CPU nodes for 128 tasks: each whole.
    assert!(fits(&r, &[64, 64, 10]));
    assert!(!fits(&r, &[64, 63, 63]));
    // On 100-CPU nodes one may hold 100, the other 28.
    assert!(fits(&r, &[100, 28]));
    assert!(!fits(&r, &[100, 27]));
    // A range may spread: four nodes of 32.
    r.max_nodes = 4;
    assert!(fits(&r, &[32, 32, 32, 32]));
    assert!(!fits(&r, &[32, 32, 32, 31]));
    let mut r = req(8, 4);
    (r.min_nodes, r.max_nodes) = (2, 2);
    assert_eq!(tasks_by_cpus(&r, 18), 4, "tasks of 4 CPUs");
    assert!(!fits(&r, &[16, 15]));
    r.ntasks_per_node = 4;
    assert_eq!(tasks_by_cpus(&r, 64), 4, "--ntasks-per-node caps it");
    // Whole-node two-node jobs on a cluster with one such pair free: the
    // one whose nodes are busy is not started, the other is.
    let nodes = vec![node(4, 4000, 0), node(4, 4000, 0), node(4, 4000, 0)];
    let mut r = req(8, 1);
    (r.min_nodes, r.max_nodes) = (2, 2);
    let d = schedule(&nodes, &part(3), &[job(1, r.clone()), job(2, r)]);
    assert_eq!(starts(&d).len(), 1, "{d:?}");
}

/// `could_fit` against its definition (sort, take the roomiest
/// `max_nodes`, sum), on random capacities and node counts on both sides
/// of its small buffer.
#[test]
fn could_fit_answers_as_its_definition() {
    use super::place::could_fit;
    use super::synth::Rng;
    let mut rng = Rng::new(7);
    for _ in 0..20_000 {
        let mut r = req(1, 1);
        r.min_nodes = rng.range(1, 20) as u32;
        r.max_nodes = r.min_nodes + rng.range(0, 8) as u32;
        r.ntasks = rng.range(1, 200) as u32;
        let caps: Vec<u32> = (0..rng.range(0, 40))
            .map(|_| rng.range(0, 3).min(1) as u32 * rng.range(0, 24) as u32)
            .collect();
        let mut pos: Vec<u32> = caps.iter().copied().filter(|&c| c > 0).collect();
        pos.sort_unstable_by(|a, b| b.cmp(a));
        let max = r.max_nodes as usize;
        let want = u64::from(r.ntasks.max(r.min_nodes));
        let truth = pos.len() >= r.min_nodes as usize
            && pos.iter().take(max).map(|&c| u64::from(c)).sum::<u64>() >= want;
        assert_eq!(could_fit(&r, caps.iter().copied()), truth, "{r:?} {caps:?}");
    }
}

#[test]
fn multi_node_is_all_or_nothing_and_spreads_tasks() {
    let nodes = vec![node(4, 4000, 0), node(4, 4000, 0), node(4, 4000, 0)];
    let mut r = req(6, 1);
    r.min_nodes = 2;
    r.max_nodes = 2;
    let d = schedule(&nodes, &part(3), &[job(1, r.clone())]);
    let Decision::Start { allocs, .. } = &d[0] else {
        panic!("{d:?}")
    };
    assert_eq!(allocs.len(), 2);
    assert_eq!(allocs.iter().map(|a| a.tasks).sum::<u32>(), 6);
    let mut r4 = r;
    r4.min_nodes = 4;
    r4.max_nodes = 4;
    assert!(place(&r4, &[0, 1, 2], &nodes).is_err());
}

#[test]
fn gpu_jobs_best_fit_keep_whole_nodes_free() {
    // Node 0: 8 GPUs, all free. Node 1: 4 GPUs, 2 in use.
    let mut nodes = vec![node(16, 64000, 8), node(16, 64000, 4)];
    nodes[1].gres[0].free = false;
    nodes[1].gres[1].free = false;
    nodes[1].jobs = 1;
    nodes[1].free_cpus = (2..16).collect();
    let mut r = req(1, 1);
    r.gres = vec![GresReq {
        name: "gpu".into(),
        r#type: None,
        count: 1,
    }];
    let d = schedule(&nodes, &part(2), &[job(1, r)]);
    let Decision::Start { allocs, .. } = &d[0] else {
        panic!()
    };
    assert_eq!(allocs[0].node, 1, "partly used node chosen");
    assert_eq!(allocs[0].gres, vec![2]);
}

#[test]
fn typed_gres_and_constraints_and_exclusive() {
    let mut nodes = vec![node(8, 8000, 2), node(8, 8000, 0)];
    nodes[1].features = vec!["fast".into(), "ib".into()];
    let mut r = req(1, 1);
    r.gres = vec![GresReq {
        name: "gpu".into(),
        r#type: Some("h100".into()),
        count: 1,
    }];
    assert!(place(&r, &[0, 1], &nodes).is_err(), "no h100 anywhere");
    let mut r = req(1, 1);
    r.constraint = parse_constraint("fast&ib").unwrap();
    assert_eq!(place(&r, &[0, 1], &nodes).unwrap()[0].node, 1);
    r.constraint = parse_constraint("slow|ib").unwrap();
    assert_eq!(place(&r, &[0, 1], &nodes).unwrap()[0].node, 1);
    let mut ex = req(1, 1);
    ex.exclusive = true;
    let a = place(&ex, &[0], &nodes).unwrap();
    assert_eq!(a[0].cpu_ids.len(), 8);
    assert_eq!(a[0].mem, 8000);
    nodes[0].jobs = 1;
    nodes[0].free_cpus = (1..8).collect();
    assert!(
        place(&ex, &[0], &nodes).is_err(),
        "exclusive needs an idle node"
    );
}

#[test]
fn memory_is_accounted() {
    let nodes = vec![node(8, 1000, 0)];
    let mut r = req(1, 1);
    r.mem_per_node = 600;
    let d = schedule(&nodes, &part(1), &[job(1, r.clone()), job(2, r)]);
    assert_eq!(starts(&d).len(), 1);
    let mut per_cpu = req(4, 1);
    per_cpu.mem_per_cpu = 300;
    assert!(
        place(&per_cpu, &[0], &nodes).is_err(),
        "4 x 300 MB > 1000 MB"
    );
}

#[test]
fn arrays_start_several_instances_and_nodelist_is_honoured() {
    let nodes = vec![node(2, 1000, 0), node(2, 1000, 0)];
    let mut j = job(1, req(1, 1));
    j.instances = 3;
    let d = schedule(&nodes, &part(2), &[j]);
    assert_eq!(starts(&d).len(), 3);
    let mut r = req(1, 1);
    r.required = vec![1];
    assert_eq!(place(&r, &[0, 1], &nodes).unwrap()[0].node, 1);
    let mut r = req(1, 1);
    r.excluded = vec![0];
    assert_eq!(place(&r, &[0, 1], &nodes).unwrap()[0].node, 1);
}

#[test]
fn unusable_nodes_give_req_node_not_avail() {
    let mut nodes = vec![node(2, 1000, 0)];
    nodes[0].usable = false;
    let d = schedule(&nodes, &part(1), &[job(1, req(1, 1))]);
    assert_eq!(
        d,
        vec![Decision::Wait {
            job: 1,
            reason: "ReqNodeNotAvail",
            start: None
        }]
    );
}

fn arb_cluster() -> impl Strategy<Value = (Vec<NodeSnap>, Vec<JobSnap>)> {
    let nodes = prop::collection::vec((1u32..=16, 1u64..=8, 0u32..=4), 1..6).prop_map(|v| {
        v.into_iter()
            .map(|(c, m, g)| node(c, m * 1000, g))
            .collect::<Vec<_>>()
    });
    let jobs = prop::collection::vec(
        (
            1u32..=3,
            1u32..=8,
            1u32..=4,
            0u64..=3000,
            0u32..=2,
            any::<bool>(),
            1u32..=3,
        ),
        1..30,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (nn, nt, cpt, mem, gpus, excl, inst))| {
                let mut r = req(nt.max(nn), cpt);
                r.min_nodes = nn;
                r.max_nodes = nn;
                r.mem_per_node = mem;
                r.exclusive = excl && i % 5 == 0;
                if gpus > 0 {
                    r.gres = vec![GresReq {
                        name: "gpu".into(),
                        r#type: None,
                        count: gpus,
                    }];
                }
                JobSnap {
                    id: i as u32 + 1,
                    priority: (i as u32 * 7919) % 100,
                    partitions: [0].into(),
                    req: r.into(),
                    instances: inst,
                    time_limit: 600 * (i as i64 % 4 + 1),
                    owner: Owner::default(),
                    reservation: None,
                }
            })
            .collect::<Vec<_>>()
    });
    (nodes, jobs)
}

proptest! {
    /// Never hand out a CPU, a byte of memory or a GPU twice, and honour
    /// every request exactly.
    #[test]
    fn never_overallocates((nodes, jobs) in arb_cluster()) {
        let parts = part(nodes.len());
        let d = schedule(&nodes, &parts, &jobs);
        let mut cpu_used: Vec<Vec<bool>> = nodes.iter().map(|n| vec![false; n.cpus as usize]).collect();
        let mut gpu_used: Vec<Vec<bool>> = nodes.iter().map(|n| vec![false; n.gres.len()]).collect();
        let mut mem_used = vec![0u64; nodes.len()];
        let mut started = std::collections::HashMap::new();
        for dec in &d {
            if let Decision::Start { job, allocs, .. } = dec {
                *started.entry(*job).or_insert(0u32) += 1;
                let j = jobs.iter().find(|x| x.id == *job).unwrap();
                prop_assert_eq!(allocs.len() as u32, j.req.min_nodes);
                let mut seen_nodes = std::collections::HashSet::new();
                for a in allocs {
                    prop_assert!(seen_nodes.insert(a.node));
                    for &c in &a.cpu_ids {
                        prop_assert!(!cpu_used[a.node][c as usize], "cpu {} on node {} twice", c, a.node);
                        cpu_used[a.node][c as usize] = true;
                    }
                    for &g in &a.gres {
                        prop_assert!(!gpu_used[a.node][g], "gpu twice");
                        gpu_used[a.node][g] = true;
                    }
                    mem_used[a.node] += a.mem;
                    prop_assert!(mem_used[a.node] <= nodes[a.node].real_memory);
                    prop_assert!(a.cpu_ids.len() as u32 >= a.tasks * j.req.cpus_per_task);
                    if !j.req.exclusive {
                        let want: u32 = j.req.gres.iter().map(|g| g.count).sum();
                        prop_assert_eq!(a.gres.len() as u32, want);
                    }
                }
                prop_assert!(allocs.iter().map(|a| a.tasks).sum::<u32>() >= j.req.ntasks);
            }
        }
        for (id, n) in started {
            let j = jobs.iter().find(|x| x.id == id).unwrap();
            prop_assert!(n <= j.instances);
        }
    }

    /// Same input, same output.
    #[test]
    fn deterministic((nodes, jobs) in arb_cluster()) {
        let parts = part(nodes.len());
        prop_assert_eq!(schedule(&nodes, &parts, &jobs), schedule(&nodes, &parts, &jobs));
    }
}

proptest! {
    /// A best-fit index lent to a pass gives the decisions of the index
    /// the pass would build itself, and comes back as it was lent.
    #[test]
    fn a_lent_index_comes_back_as_lent((nodes, jobs) in arb_cluster()) {
        let parts = part(nodes.len());
        let assoc = assoc::AssocSet::default();
        let lent = std::cell::RefCell::new(Index::new(&nodes, &parts));
        let params = Params::default();
        let input = |index| Input {
            now: 0,
            params: &params,
            nodes: &nodes,
            parts: &parts,
            running: &[],
            jobs: &jobs,
            resvs: &[],
            assoc: &assoc,
            index,
        };
        let with = plan(&input(Some(&lent)));
        prop_assert_eq!(with, plan(&input(None)));
        prop_assert_eq!(lent.into_inner(), Index::new(&nodes, &parts));
    }
}

proptest! {
    /// Whatever numbers a client sends, validation, request building,
    /// placement and the job view never panic.
    #[test]
    fn arbitrary_specs_never_panic(
        nums in prop::collection::vec(prop_oneof![0u32..8, 0u32..5000, any::<u32>()], 14),
        mems in prop::collection::vec(prop_oneof![0u64..16000, 0u64..(1 << 31), any::<u64>()], 3),
        gres in "[a-z0-9:,/]{0,20}",
        constraint in "[a-z|&,\\[\\]]{0,12}",
    ) {
        let spec = drover_proto::JobSpec {
            ntasks: nums[0], cpus_per_task: nums[1], min_nodes: nums[2], max_nodes: nums[3],
            ntasks_per_node: nums[4], min_cpus_per_node: nums[5], gpus: nums[6],
            gpus_per_node: nums[7], gpus_per_task: nums[8], cpus_per_gpu: nums[9],
            time_limit: nums[10], nice: nums[11] as i32, priority: nums[12], ntasks_per_gpu: nums[13],
            mem_per_node_mb: mems[0], mem_per_cpu_mb: mems[1], mem_per_gpu_mb: mems[2],
            gres, constraint, script: b"#!/bin/sh\n".to_vec(),
            ..Default::default()
        };
        let cfg = drover_conf::slurmconf::Config::default();
        let mut conf = drover_conf::slurmconf::NodeConf::new("n1");
        conf.cpus = 8;
        conf.real_memory = 8000;
        let mut cfg = cfg;
        cfg.nodes = vec![conf];
        let mut p = drover_conf::slurmconf::PartitionConf::new("p");
        p.nodes = vec!["n1".into()];
        cfg.partitions = [p].into();
        let cluster = crate::cluster::Cluster::from_config(&cfg, 0);
        if crate::submit::check_bounds(&spec).is_ok() {
            let resolved = crate::request::resolve(&spec, Some(&cluster.parts[0].conf), &cfg);
            if let Ok(req) = resolved.and_then(|r| crate::request::to_sched(&r, |n| cluster.node_idx(n))) {
                let (nodes, _) = cluster.snapshot();
                let _ = place(&req, &[0], &nodes);
            }
            let job = crate::job::Job::from_record(drover_proto::state::JobRecord {
                job_id: 1,
                spec: Some(Box::new(spec)),
                ..Default::default()
            });
            let mut names = crate::users::NameCache::default();
            let _ = crate::jobinfo::job_info(&cfg, &mut names, &job, true, 0);
        }
    }
}

/// A forced multi-node job (whole 64-CPU nodes, `-N n -n 64n`) is planned
/// and started as the general way would (every tried start, one-task
/// answers for every node, a whole placement for "could it ever run"):
/// the same decisions on random clusters and queues.
#[test]
fn forced_multi_node_jobs_plan_as_the_general_way() {
    use super::synth::{fill, job as synth_job, Rng};
    let now = 1_000_000;
    for seed in 1..=40u64 {
        let mut rng = Rng::new(seed);
        let n = 24;
        let mut nodes: Vec<NodeSnap> = (0..n).map(|_| node(64, 256_000, 0)).collect();
        let running = fill(
            &mut nodes,
            now,
            0.4 + 0.5 * (seed % 3) as f64 / 2.0,
            &mut rng,
        );
        let parts = vec![PartSnap {
            nodes: (0..n).collect(),
            up: true,
            priority_tier: 1,
            name: "batch".into(),
            share: Share::No,
        }];
        let jobs: Vec<JobSnap> = (1..=40u32)
            .map(|id| {
                let mut j = synth_job(id, &mut rng, 4);
                let r = Arc::make_mut(&mut j.req);
                r.gres.clear();
                if rng.range(0, 2) == 0 {
                    let k = rng.pick(&[2u32, 3, 4, 8]);
                    r.min_nodes = k;
                    r.max_nodes = k;
                    r.ntasks = k * 64;
                    r.mem_per_cpu = 1000;
                }
                j
            })
            .collect();
        let params = Params::default();
        let assoc = assoc::AssocSet::default();
        let inp = Input {
            now,
            params: &params,
            nodes: &nodes,
            parts: &parts,
            running: &running,
            jobs: &jobs,
            resvs: &[],
            assoc: &assoc,
            index: None,
        };
        let forced = plan(&inp);
        plan::UNFORCED.set(true);
        let general = plan(&inp);
        plan::UNFORCED.set(false);
        assert_eq!(forced, general, "seed {seed}");
        assert!(
            forced
                .iter()
                .any(|d| matches!(d, Decision::Wait { start: Some(_), .. })),
            "seed {seed}: nothing planned"
        );
    }
}
