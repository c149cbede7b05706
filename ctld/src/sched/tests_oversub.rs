//! OverSubscribe (CPU sharing) on the pure core: scenarios and the
//! "never more than N jobs on a CPU, a non-sharing job alone" invariant.

use std::sync::Arc;

use super::*;
use crate::sched::assoc::AssocSet;
use proptest::prelude::*;

const NOW: i64 = 1_000_000;

fn node(cpus: u32, mem: u64, gpus: u32) -> NodeSnap {
    NodeSnap {
        usable: true,
        cpus,
        free_cpus: (0..cpus).collect(),
        real_memory: mem,
        free_memory: mem,
        gres: (0..gpus)
            .map(|i| GresDev {
                name: "gpu".into(),
                r#type: String::new(),
                index: i,
                free: true,
            })
            .collect(),
        features: vec![],
        weight: 1,
        jobs: 0,
        threads: 1,
        shared: Vec::new(),
        ready: 0,
    }
}

fn part(name: &str, nodes: Vec<usize>, share: Share) -> PartSnap {
    PartSnap {
        nodes,
        up: true,
        priority_tier: 1,
        name: name.into(),
        share,
    }
}

/// A one-node job of `cpus` CPUs (one task) in partition `p`.
fn job(id: u32, cpus: u32, p: usize, flag: bool) -> JobSnap {
    JobSnap {
        id,
        priority: 1000 - id,
        partitions: [p].into(),
        req: Request {
            min_nodes: 1,
            max_nodes: 1,
            ntasks: 1,
            cpus_per_task: cpus,
            oversubscribe: flag,
            ..Default::default()
        }
        .into(),
        instances: 1,
        time_limit: 3600,
        owner: Owner::default(),
        reservation: None,
    }
}

fn run_plan(
    nodes: &[NodeSnap],
    parts: &[PartSnap],
    running: &[RunSnap],
    jobs: &[JobSnap],
) -> Vec<Decision> {
    let assoc = AssocSet::default();
    let params = Params {
        bf_resolution: 1,
        ..Params::default()
    };
    plan(&Input {
        now: NOW,
        params: &params,
        nodes,
        parts,
        running,
        jobs,
        resvs: &[],
        assoc: &assoc,
        index: None,
    })
}

/// Started jobs with their CPU ids on their first node.
fn starts(d: &[Decision]) -> Vec<(u32, Vec<u32>)> {
    d.iter()
        .filter_map(|x| match x {
            Decision::Start { job, allocs, .. } => Some((*job, allocs[0].cpu_ids.clone())),
            _ => None,
        })
        .collect()
}

fn wait_of(d: &[Decision], id: u32) -> (&'static str, Option<i64>) {
    d.iter()
        .find_map(|x| match x {
            Decision::Wait { job, reason, start } if *job == id => Some((*reason, *start)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("job {id} does not wait: {d:?}"))
}

#[test]
fn share_parses_slurm_values() {
    assert_eq!(Share::parse("NO"), Share::No);
    assert_eq!(Share::parse("EXCLUSIVE"), Share::No);
    assert_eq!(Share::parse("YES"), Share::Yes(4));
    assert_eq!(Share::parse("yes:2"), Share::Yes(2));
    assert_eq!(Share::parse("FORCE"), Share::Force(4));
    assert_eq!(Share::parse("FORCE:1"), Share::Force(1));
    let mut r = Request::default();
    assert_eq!(Share::Yes(2).limit(&r), 1);
    assert_eq!(Share::Force(3).limit(&r), 3);
    assert_eq!(Share::Force(1).limit(&r), 1);
    r.oversubscribe = true;
    assert_eq!(Share::Yes(2).limit(&r), 2);
    assert_eq!(Share::No.limit(&r), 1);
    r.exclusive = true;
    assert_eq!(Share::Force(4).limit(&r), 1);
}

#[test]
fn force2_two_jobs_share_a_node_third_waits() {
    let nodes = vec![node(4, 4000, 0)];
    let parts = vec![part("p", vec![0], Share::Force(2))];
    let jobs: Vec<JobSnap> = (1..=3).map(|i| job(i, 4, 0, false)).collect();
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(
        starts(&d),
        vec![(1, vec![0, 1, 2, 3]), (2, vec![0, 1, 2, 3])]
    );
    assert_eq!(wait_of(&d, 3).0, "Resources");
    // FORCE:1 and NO: no sharing.
    for share in [Share::Force(1), Share::No] {
        let parts = vec![part("p", vec![0], share)];
        let d = run_plan(&nodes, &parts, &[], &jobs);
        assert_eq!(starts(&d), vec![(1, vec![0, 1, 2, 3])]);
    }
}

#[test]
fn sharing_jobs_take_shared_cpus_before_free_ones() {
    let nodes = vec![node(8, 8000, 0)];
    let parts = vec![part("p", vec![0], Share::Force(2))];
    let jobs = vec![
        job(1, 4, 0, false),
        job(2, 2, 0, false),
        job(3, 4, 0, false),
    ];
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(
        starts(&d),
        vec![
            (1, vec![0, 1, 2, 3]),
            (2, vec![0, 1]),
            (3, vec![2, 3, 4, 5])
        ]
    );
}

#[test]
fn yes2_shares_only_between_flagged_jobs() {
    let nodes = vec![node(4, 4000, 0)];
    let parts = vec![part("p", vec![0], Share::Yes(2))];
    // Flagged first: the unflagged job needs CPUs nobody uses.
    let jobs = vec![job(1, 4, 0, true), job(2, 4, 0, false), job(3, 4, 0, true)];
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(
        starts(&d),
        vec![(1, vec![0, 1, 2, 3]), (3, vec![0, 1, 2, 3])]
    );
    assert_eq!(wait_of(&d, 2).0, "Resources");
    // Unflagged first: nobody may join it.
    let jobs = vec![job(1, 4, 0, false), job(2, 4, 0, true), job(3, 4, 0, true)];
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d), vec![(1, vec![0, 1, 2, 3])]);
    assert_eq!(wait_of(&d, 2).0, "Resources");
}

#[test]
fn memory_still_limits_sharing_jobs() {
    let nodes = vec![node(4, 4000, 0)];
    let parts = vec![part("p", vec![0], Share::Force(4))];
    let mut jobs: Vec<JobSnap> = (1..=3).map(|i| job(i, 4, 0, false)).collect();
    for j in &mut jobs {
        Arc::make_mut(&mut j.req).mem_per_node = 1500;
    }
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d).len(), 2);
    assert_eq!(wait_of(&d, 3).0, "Resources");
}

#[test]
fn gpus_are_never_shared() {
    let nodes = vec![node(4, 4000, 1)];
    let parts = vec![part("p", vec![0], Share::Force(4))];
    let mut jobs: Vec<JobSnap> = (1..=2).map(|i| job(i, 1, 0, false)).collect();
    for j in &mut jobs {
        Arc::make_mut(&mut j.req).gres = vec![GresReq {
            name: "gpu".into(),
            r#type: None,
            count: 1,
        }];
    }
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d).len(), 1);
    assert_eq!(wait_of(&d, 2).0, "Resources");
}

#[test]
fn exclusive_jobs_share_with_nobody() {
    let nodes = vec![node(4, 4000, 0)];
    let parts = vec![part("p", vec![0], Share::Force(4))];
    let mut jobs = vec![job(1, 1, 0, false), job(2, 1, 0, false)];
    Arc::make_mut(&mut jobs[0].req).exclusive = true;
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d), vec![(1, vec![0, 1, 2, 3])]);
    // A sharing job already there: the exclusive one waits.
    jobs.swap(0, 1);
    jobs[0].id = 1;
    jobs[1].id = 2;
    jobs[1].priority = 1;
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d), vec![(1, vec![0])]);
    assert_eq!(wait_of(&d, 2).0, "Resources");
}

/// A node with `used` CPUs held by `k` sharing jobs each (allowing 4),
/// expected free at `until`.
fn shared_node(cpus: u32, used: u32, k: u32, until: i64) -> NodeSnap {
    let mut n = node(cpus, 64000, 0);
    n.free_cpus = (used..cpus).collect();
    n.shared = (0..used)
        .map(|id| SharedCpu {
            id,
            jobs: k,
            cap: 4,
            until,
        })
        .collect();
    n.jobs = k;
    n
}

fn sharer(id: u32, cpus: u32, end: i64) -> RunSnap {
    RunSnap {
        id,
        partition: 0,
        allocs: vec![RunAlloc {
            node: 0,
            cpus,
            mem: 0,
            gres: vec![],
        }]
        .into(),
        end,
        priority: 1,
        owner: Owner::default(),
        preempt_mode: crate::sched::assoc::PreemptMode::Off,
        ending: false,
        share: true,
    }
}

#[test]
fn running_sharers_count_per_cpu() {
    // Two jobs already share CPUs 0-3 of a 4-CPU node.
    let nodes = vec![shared_node(4, 4, 2, NOW + 200)];
    let running = vec![sharer(10, 4, NOW + 100), sharer(11, 4, NOW + 200)];
    let jobs = vec![job(1, 4, 0, false)];
    let d = run_plan(
        &nodes,
        &[part("p", vec![0], Share::Force(2))],
        &running,
        &jobs,
    );
    assert!(starts(&d).is_empty());
    // The CPUs are free only when both have ended (not at the first end,
    // not twice over).
    assert_eq!(wait_of(&d, 1), ("Resources", Some(NOW + 200)));
    let d = run_plan(
        &nodes,
        &[part("p", vec![0], Share::Force(3))],
        &running,
        &jobs,
    );
    assert_eq!(starts(&d), vec![(1, vec![0, 1, 2, 3])]);
    // A job that may not share waits for both.
    let d = run_plan(&nodes, &[part("p", vec![0], Share::No)], &running, &jobs);
    assert_eq!(wait_of(&d, 1), ("Resources", Some(NOW + 200)));
}

#[test]
fn two_partitions_decide_sharing_per_job() {
    // One 4-CPU node in a FORCE:2 partition and a NO partition.
    let nodes = vec![node(4, 4000, 0)];
    let parts = vec![
        part("shared", vec![0], Share::Force(2)),
        part("solo", vec![0], Share::No),
    ];
    let jobs = vec![
        job(1, 2, 0, false),
        job(2, 2, 1, false),
        job(3, 2, 0, false),
    ];
    let d = run_plan(&nodes, &parts, &[], &jobs);
    // 1 takes CPUs 0-1 (shareable), 2 needs CPUs nobody uses: 2-3; 3
    // shares 0-1 with 1.
    assert_eq!(
        starts(&d),
        vec![(1, vec![0, 1]), (2, vec![2, 3]), (3, vec![0, 1])]
    );
    // The NO job first on CPUs 0-3: nobody may join it.
    let jobs = vec![job(1, 4, 1, false), job(2, 2, 0, false)];
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d), vec![(1, vec![0, 1, 2, 3])]);
}

#[test]
fn no_oversubscribe_partitions_change_nothing() {
    // The pass with every partition NO is the one before OverSubscribe:
    // `shared` empty, placement by free CPUs alone.
    let nodes = vec![node(4, 4000, 0), node(4, 4000, 0)];
    let parts = vec![part("p", vec![0, 1], Share::No)];
    let jobs: Vec<JobSnap> = (1..=3).map(|i| job(i, 4, 0, true)).collect();
    let d = run_plan(&nodes, &parts, &[], &jobs);
    assert_eq!(starts(&d).len(), 2);
    assert_eq!(wait_of(&d, 3).0, "Resources");
}

fn arb_case() -> impl Strategy<Value = (Vec<NodeSnap>, Vec<PartSnap>, Vec<JobSnap>)> {
    let nodes = prop::collection::vec((1u32..9, 0u32..3), 1..4);
    let parts = prop::collection::vec((0u8..3, 1u32..5), 1..4);
    let jobs = prop::collection::vec(
        (
            1u32..6,
            0usize..4,
            any::<bool>(),
            0u64..3000,
            0u32..2,
            0u8..10,
            1u32..3,
        ),
        1..25,
    );
    (nodes, parts, jobs).prop_map(|(nodes, parts, jobs)| {
        let nn = nodes.len();
        let nodes: Vec<NodeSnap> = nodes.into_iter().map(|(c, g)| node(c, 8000, g)).collect();
        let np = parts.len();
        let parts: Vec<PartSnap> = parts
            .into_iter()
            .enumerate()
            .map(|(k, (kind, n))| {
                let share = match kind {
                    0 => Share::No,
                    1 => Share::Yes(n),
                    _ => Share::Force(n),
                };
                // Every partition has node 0; others some of the rest.
                let members = (0..nn).filter(|i| *i == 0 || (i + k) % 2 == 0).collect();
                part(&format!("p{k}"), members, share)
            })
            .collect();
        let jobs = jobs
            .into_iter()
            .enumerate()
            .map(|(i, (cpus, p, flag, mem, gpus, excl, inst))| {
                let mut j = job(i as u32 + 1, cpus, p % np, flag);
                j.priority = (i as u32 * 7919) % 100;
                Arc::make_mut(&mut j.req).mem_per_node = mem;
                Arc::make_mut(&mut j.req).exclusive = excl == 0;
                j.instances = inst;
                if gpus > 0 {
                    Arc::make_mut(&mut j.req).gres = vec![GresReq {
                        name: "gpu".into(),
                        r#type: None,
                        count: gpus,
                    }];
                }
                j
            })
            .collect();
        (nodes, parts, jobs)
    })
}

proptest! {
    /// Never more than N jobs on a CPU (N of every job on it), a job that
    /// may not share alone on its CPUs; memory and GPUs never twice.
    #[test]
    fn never_more_than_n_jobs_on_a_cpu((nodes, parts, jobs) in arb_case()) {
        // Two passes: the second sees the first's starts running (its
        // snapshot built as the controller would), with the same jobs again.
        let first = run_plan(&nodes, &parts, &[], &jobs);
        let mut next = nodes.clone();
        let mut running = Vec::new();
        for dec in &first {
            if let Decision::Start { job, partition, allocs } = dec {
                let j = jobs.iter().find(|x| x.id == *job).unwrap();
                let limit = parts[*partition].share.limit(&j.req);
                for a in allocs {
                    apply_share(&mut next[a.node], a, limit, NOW + j.time_limit);
                }
                running.push(RunSnap {
                    id: *job,
                    partition: *partition,
                    allocs: allocs.iter().map(|a| RunAlloc {
                        node: a.node, cpus: a.ncpus, mem: a.mem, gres: a.gres.clone(),
                    }).collect(),
                    end: NOW + j.time_limit,
                    priority: j.priority,
                    owner: Owner::default(),
                    preempt_mode: crate::sched::assoc::PreemptMode::Off,
                    ending: false,
                    share: limit > 1,
                });
            }
        }
        let again: Vec<JobSnap> = jobs
            .iter()
            .map(|j| JobSnap { id: j.id + 1000, ..j.clone() })
            .collect();
        let second = run_plan(&next, &parts, &running, &again);
        let all_jobs: Vec<JobSnap> = jobs.iter().chain(again.iter()).cloned().collect();
        let d: Vec<Decision> = first.into_iter().chain(second).collect();
        // Per node and CPU: the share limits of the jobs on it.
        let mut on_cpu: Vec<Vec<Vec<u32>>> =
            nodes.iter().map(|n| vec![Vec::new(); n.cpus as usize]).collect();
        let mut gpu_used: Vec<Vec<bool>> = nodes.iter().map(|n| vec![false; n.gres.len()]).collect();
        let mut mem_used = vec![0u64; nodes.len()];
        for dec in &d {
            if let Decision::Start { job, partition, allocs } = dec {
                let j = all_jobs.iter().find(|x| x.id == *job).unwrap();
                let limit = parts[*partition].share.limit(&j.req);
                for a in allocs {
                    prop_assert!(parts[*partition].nodes.contains(&a.node));
                    for &c in &a.cpu_ids {
                        on_cpu[a.node][c as usize].push(limit);
                    }
                    for &g in &a.gres {
                        prop_assert!(!gpu_used[a.node][g], "gpu twice");
                        gpu_used[a.node][g] = true;
                    }
                    mem_used[a.node] += a.mem;
                    prop_assert!(mem_used[a.node] <= nodes[a.node].real_memory);
                    prop_assert!(a.cpu_ids.len() as u32 >= a.tasks * j.req.cpus_per_task);
                    let mut ids = a.cpu_ids.clone();
                    ids.dedup();
                    prop_assert_eq!(ids.len(), a.cpu_ids.len());
                }
            }
        }
        for (i, cpus) in on_cpu.iter().enumerate() {
            for (c, limits) in cpus.iter().enumerate() {
                let n = limits.len() as u32;
                for &l in limits {
                    prop_assert!(n <= l, "node {} cpu {}: {} jobs, one allows {}", i, c, n, l);
                }
            }
        }
    }

    /// Same input, same output.
    #[test]
    fn sharing_is_deterministic((nodes, parts, jobs) in arb_case()) {
        prop_assert_eq!(
            run_plan(&nodes, &parts, &[], &jobs),
            run_plan(&nodes, &parts, &[], &jobs)
        );
    }
}

#[test]
fn sharing_does_not_delay_a_planned_start() {
    // Two sharers hold CPUs 0-3 until NOW+100; a job that may not share
    // is planned then. A sharing job that would outlive them waits; one
    // that ends before joins them now.
    let nodes = vec![shared_node(4, 4, 2, NOW + 100)];
    let parts = vec![
        part("shared", vec![0], Share::Force(4)),
        part("solo", vec![0], Share::No),
    ];
    let running = vec![sharer(10, 4, NOW + 100), sharer(11, 4, NOW + 100)];
    let mut jobs = vec![
        job(1, 4, 1, false),
        job(2, 4, 0, false),
        job(3, 4, 0, false),
    ];
    jobs[2].time_limit = 50;
    let d = run_plan(&nodes, &parts, &running, &jobs);
    assert_eq!(wait_of(&d, 1), ("Resources", Some(NOW + 100)));
    assert!(wait_of(&d, 2).1.is_some_and(|t| t >= NOW + 100 + 3600));
    assert_eq!(starts(&d), vec![(3, vec![0, 1, 2, 3])]);
}

#[test]
fn shared_cpus_come_back_when_their_last_job_ends() {
    // CPUs 0-1 shared until NOW+200, 2-3 until NOW+100. A job that may not
    // share, 2 CPUs, is planned at NOW+100 on 2-3. A sharing 4-CPU job
    // ending at NOW+150 would hold 2-3 past then: it waits. A sharing
    // 2-CPU one takes 0-1 (busy longest) and starts now.
    let mut n = shared_node(4, 4, 1, NOW + 200);
    n.shared[2].until = NOW + 100;
    n.shared[3].until = NOW + 100;
    n.jobs = 2;
    let nodes = vec![n];
    let parts = vec![
        part("shared", vec![0], Share::Force(4)),
        part("solo", vec![0], Share::No),
    ];
    let running = vec![sharer(10, 2, NOW + 200), sharer(11, 2, NOW + 100)];
    let mut jobs = vec![
        job(1, 2, 1, false),
        job(2, 4, 0, false),
        job(3, 2, 0, false),
    ];
    jobs[1].time_limit = 150;
    jobs[2].time_limit = 150;
    let d = run_plan(&nodes, &parts, &running, &jobs);
    assert_eq!(wait_of(&d, 1), ("Resources", Some(NOW + 100)));
    assert!(wait_of(&d, 2).1.is_some_and(|t| t > NOW));
    assert_eq!(starts(&d), vec![(3, vec![0, 1])]);
}
