//! Which CPUs each task of a step is bound to on this node, and the
//! `SLURM_CPU_BIND*` variables, as Slurm's task/affinity plugin does (pure).
//!
//! CPU ids are Slurm's abstract block numbering, `(socket * cores + core) *
//! threads + thread`, which is the kernel's numbering on most machines.
//! Automatic masks (`sockets`, `cores`, `threads`, `ldoms`, or the implicit
//! choice when the step's tasks × CPUs per task fill whole sockets, cores
//! or threads) are laid out cyclically over the sockets, each task taking
//! its CPUs from one socket where it can; `ldoms` is `sockets` (no NUMA
//! information). The result is a `mask_cpu` binding, as in Slurm.

use drover_proto::bindopt::{mask_text, CpuBind, CpuMode, CpuUnit};

/// The node's shape (from its NodeName line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topo {
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
}

impl Topo {
    fn cpus_per_socket(&self) -> u32 {
        (self.cores * self.threads).max(1)
    }
    fn socket_of(&self, cpu: u32) -> u32 {
        cpu / self.cpus_per_socket()
    }
    fn core_of(&self, cpu: u32) -> u32 {
        cpu / self.threads.max(1)
    }
    fn total(&self) -> u32 {
        (self.sockets * self.cores * self.threads).max(1)
    }
}

/// What the agent does for each task.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuPlan {
    /// Per local task: the CPUs it is bound to (None: not bound).
    pub sets: Vec<Option<Vec<u32>>>,
    /// `SLURM_CPU_BIND`, `_TYPE`, `_LIST`, `_VERBOSE` (all tasks of the node).
    pub env: Vec<(String, String)>,
    /// `verbose`: the binding's name in the `cpu-bind=...` line.
    pub verbose: Option<&'static str>,
    /// Slurm's complaint when the request had to be changed.
    pub error: Option<String>,
}

/// How the node's tasks are placed.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The step's CPUs on this node.
    pub cpus: &'a [u32],
    /// Tasks of the step on this node.
    pub ntasks: u32,
    pub cpus_per_task: u32,
}

/// A whole-width mask (`bit_fmt_hexmask`): `0x` and one digit per 4 CPUs.
fn full_mask(ids: &[u32], width_cpus: u32) -> String {
    let t = mask_text(ids);
    let digits = (width_cpus.div_ceil(4) as usize).max(t.len());
    format!("0x{t:0>digits$}")
}

fn env(verbose: bool, kind: &str, list: &str) -> Vec<(String, String)> {
    let v = if verbose { "verbose" } else { "quiet" };
    let bind = if kind.is_empty() {
        v.to_string()
    } else {
        format!("{v},{kind}{list}")
    };
    vec![
        ("SLURM_CPU_BIND".into(), bind),
        ("SLURM_CPU_BIND_VERBOSE".into(), v.into()),
        ("SLURM_CPU_BIND_TYPE".into(), kind.into()),
        ("SLURM_CPU_BIND_LIST".into(), list.into()),
    ]
}

/// Counts of whole sockets / cores / threads in `avail`, and partial ones.
struct Counts {
    whole_sockets: u32,
    part_sockets: u32,
    whole_cores: u32,
    part_cores: u32,
    threads: u32,
}

fn counts(topo: &Topo, avail: &[u32]) -> Counts {
    let mut c = Counts {
        whole_sockets: 0,
        part_sockets: 0,
        whole_cores: 0,
        part_cores: 0,
        threads: avail.len() as u32,
    };
    for s in 0..topo.sockets {
        let (mut hit, mut miss) = (false, false);
        for core in 0..topo.cores {
            let base = (s * topo.cores + core) * topo.threads;
            let n = (base..base + topo.threads)
                .filter(|t| avail.contains(t))
                .count() as u32;
            if n == topo.threads {
                c.whole_cores += 1;
                hit = true;
            } else {
                miss = true;
                if n > 0 {
                    c.part_cores += 1;
                    hit = true;
                }
            }
        }
        if !miss {
            c.whole_sockets += 1;
        } else if hit {
            c.part_sockets += 1;
        }
    }
    c
}

/// The implicit unit when none is asked for: what the tasks fill exactly.
fn auto_unit(topo: &Topo, step: &Step<'_>) -> Option<CpuUnit> {
    let want = step.ntasks * step.cpus_per_task.max(1);
    let c = counts(topo, step.cpus);
    if want == c.whole_sockets && c.part_sockets == 0 {
        Some(CpuUnit::Sockets)
    } else if want == c.whole_cores && c.part_cores == 0 {
        Some(CpuUnit::Cores)
    } else if want == c.threads {
        Some(CpuUnit::Threads)
    } else {
        None
    }
}

/// Cyclic layout over sockets: each task takes `cpus_per_task` CPUs (whole
/// cores unless binding to threads), from one socket where it can; when
/// every CPU is taken the count starts again (overcommit).
fn layout(topo: &Topo, step: &Step<'_>, unit: CpuUnit) -> Vec<Vec<u32>> {
    let mut avail: Vec<u32> = step.cpus.to_vec();
    avail.sort_unstable();
    avail.dedup();
    let mut sockets: Vec<u32> = avail.iter().map(|c| topo.socket_of(*c)).collect();
    sockets.dedup();
    let cpt = step.cpus_per_task.max(1) as usize;
    // Units a task takes: CPUs (threads) or cores.
    let by_core = unit != CpuUnit::Threads && topo.threads > 1;
    let units: Vec<Vec<u32>> = if by_core {
        let mut v: Vec<Vec<u32>> = Vec::new();
        for &c in &avail {
            match v.last_mut() {
                Some(u) if topo.core_of(u[0]) == topo.core_of(c) => u.push(c),
                _ => v.push(vec![c]),
            }
        }
        v
    } else {
        avail.iter().map(|c| vec![*c]).collect()
    };
    let mut used = vec![false; units.len()];
    let mut out = Vec::new();
    for task in 0..step.ntasks as usize {
        let mut mine: Vec<u32> = Vec::new();
        let first = task % sockets.len().max(1);
        let order: Vec<u32> = sockets[first..]
            .iter()
            .chain(&sockets[..first])
            .copied()
            .collect();
        for pass in 0..2 {
            for &s in &order {
                for (i, u) in units.iter().enumerate() {
                    if mine.len() >= cpt || used[i] || topo.socket_of(u[0]) != s {
                        continue;
                    }
                    used[i] = true;
                    let take = if by_core { u.len() } else { 1 };
                    mine.extend_from_slice(&u[..take]);
                }
            }
            if mine.len() >= cpt || pass == 1 {
                break;
            }
            // Everything is taken: start over (more tasks than CPUs).
            used.iter_mut().for_each(|u| *u = false);
        }
        if unit == CpuUnit::Sockets || unit == CpuUnit::Ldoms {
            let socks: Vec<u32> = mine.iter().map(|c| topo.socket_of(*c)).collect();
            mine = avail
                .iter()
                .copied()
                .filter(|c| socks.contains(&topo.socket_of(*c)))
                .collect();
        }
        mine.sort_unstable();
        mine.dedup();
        out.push(mine);
    }
    out
}

/// The binding of a step's tasks on one node. `affinity`: TaskPlugin
/// includes task/affinity (otherwise nothing is bound and nothing set).
pub fn plan(opt: &CpuBind, affinity: bool, topo: Topo, step: &Step<'_>) -> CpuPlan {
    let n = step.ntasks as usize;
    if !affinity || n == 0 {
        return CpuPlan {
            sets: vec![None; n],
            ..Default::default()
        };
    }
    let mut avail: Vec<u32> = step.cpus.to_vec();
    avail.sort_unstable();
    avail.dedup();
    let width = topo.total().max(avail.last().map_or(0, |c| c + 1));
    let verbose = |name: &'static str| opt.verbose.then_some(name);
    // The step's CPUs for every task (what Slurm falls back to).
    let whole = |error: Option<String>| CpuPlan {
        sets: vec![Some(avail.clone()); n],
        env: env(opt.verbose, "mask_cpu:", &full_mask(&avail, width)),
        verbose: verbose("MASK"),
        error,
    };
    let outside = || {
        Some(format!(
            "CPU binding outside of job step allocation, allocated CPUs are: {}.",
            full_mask(&avail, width)
        ))
    };
    match &opt.mode {
        Some(CpuMode::None) => CpuPlan {
            sets: vec![None; n],
            env: env(opt.verbose, "none", ""),
            verbose: verbose("NONE"),
            error: None,
        },
        Some(CpuMode::Rank) => {
            if avail.len() as u32 != topo.total() {
                let mut p = whole(None);
                p.error = Some("Entire node must be allocated for rank".into());
                return p;
            }
            CpuPlan {
                sets: (0..n as u32)
                    .map(|i| Some(vec![i % topo.total()]))
                    .collect(),
                env: env(opt.verbose, "rank", ""),
                verbose: verbose("RANK"),
                error: None,
            }
        }
        Some(CpuMode::Map(list)) => {
            if list.is_empty() || list.iter().any(|c| !avail.contains(c)) {
                return whole(outside());
            }
            let text: Vec<String> = list.iter().map(u32::to_string).collect();
            CpuPlan {
                sets: (0..n).map(|i| Some(vec![list[i % list.len()]])).collect(),
                env: env(opt.verbose, "map_cpu:", &text.join(",")),
                verbose: verbose("MAP "),
                error: None,
            }
        }
        Some(CpuMode::Mask(list)) => {
            if list.is_empty() {
                return whole(outside());
            }
            let mut superset = true;
            let fixed: Vec<Vec<u32>> = list
                .iter()
                .map(|m| {
                    let inside: Vec<u32> =
                        m.iter().copied().filter(|c| avail.contains(c)).collect();
                    superset &= inside.len() == m.len();
                    if inside.is_empty() {
                        avail.clone()
                    } else {
                        inside
                    }
                })
                .collect();
            let text: Vec<String> = fixed.iter().map(|m| mask_text(m)).collect();
            CpuPlan {
                sets: (0..n)
                    .map(|i| Some(fixed[i % fixed.len()].clone()))
                    .collect(),
                env: env(opt.verbose, "mask_cpu:", &text.join(",")),
                verbose: verbose("MASK"),
                error: (!superset).then(outside).flatten(),
            }
        }
        None => {
            let Some(unit) = opt.unit.or_else(|| auto_unit(&topo, step)) else {
                // Auto binding off: every task gets the step's CPUs.
                return whole(None);
            };
            if avail.len() < n {
                return whole(None);
            }
            let masks = layout(&topo, step, unit);
            let text: Vec<String> = masks.iter().map(|m| full_mask(m, width)).collect();
            CpuPlan {
                sets: masks.into_iter().map(Some).collect(),
                env: env(opt.verbose, "mask_cpu:", &text.join(",")),
                verbose: verbose("MASK"),
                error: None,
            }
        }
    }
}

/// Slurm's verbose line up to the pid, and after it:
/// `cpu-bind=MASK - n1, task  0  0 [` PID `]: mask 0x1 set`.
pub fn verbose_parts(
    name: &str,
    node: &str,
    task_id: u32,
    local_id: u32,
    set: Option<&[u32]>,
    all: &[u32],
) -> (String, String) {
    let (mask, action) = match set {
        Some(s) => (mask_text(s), " set"),
        None => (mask_text(all), ""),
    };
    (
        format!("cpu-bind={name} - {node}, task {task_id:2} {local_id:2} ["),
        format!("]: mask 0x{mask}{action}\n"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::bindopt::parse_cpu_bind;

    const FLAT4: Topo = Topo {
        sockets: 1,
        cores: 4,
        threads: 1,
    };

    fn get<'a>(p: &'a CpuPlan, k: &str) -> &'a str {
        p.env
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("<unset>")
    }

    fn run(opt: &str, topo: Topo, cpus: &[u32], ntasks: u32, cpt: u32) -> CpuPlan {
        let o = parse_cpu_bind(opt).unwrap();
        plan(
            &o,
            true,
            topo,
            &Step {
                cpus,
                ntasks,
                cpus_per_task: cpt,
            },
        )
    }

    #[test]
    fn cores_one_cpu_each() {
        let p = run("cores", FLAT4, &[0, 1], 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0]), Some(vec![1])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND"), "quiet,mask_cpu:0x1,0x2");
        assert_eq!(get(&p, "SLURM_CPU_BIND_TYPE"), "mask_cpu:");
        assert_eq!(get(&p, "SLURM_CPU_BIND_LIST"), "0x1,0x2");
        assert_eq!(get(&p, "SLURM_CPU_BIND_VERBOSE"), "quiet");
        assert_eq!(p.verbose, None);
        // Masks are as wide as the node: 64 CPUs, 16 digits.
        let big = Topo {
            sockets: 2,
            cores: 16,
            threads: 2,
        };
        let p = run("verbose,cores", big, &[62, 63], 1, 1);
        assert_eq!(get(&p, "SLURM_CPU_BIND_LIST"), "0xC000000000000000");
        assert_eq!(p.verbose, Some("MASK"));
        assert_eq!(get(&p, "SLURM_CPU_BIND_VERBOSE"), "verbose");
    }

    #[test]
    fn implicit_binding_when_tasks_fill_the_cores() {
        // 2 tasks x 2 CPUs on 4 whole cores: cores.
        let p = run("", FLAT4, &[0, 1, 2, 3], 2, 2);
        assert_eq!(p.sets, vec![Some(vec![0, 1]), Some(vec![2, 3])]);
        // 1 task on 4 CPUs of a 4-core socket: the socket.
        let p = run("", FLAT4, &[0, 1, 2, 3], 1, 4);
        assert_eq!(p.sets, vec![Some(vec![0, 1, 2, 3])]);
        // 1 task, 1 CPU, step holds 2: no auto binding, the step's CPUs.
        let p = run("", FLAT4, &[1, 2], 1, 1);
        assert_eq!(p.sets, vec![Some(vec![1, 2])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND"), "quiet,mask_cpu:0x6");
    }

    #[test]
    fn cyclic_over_sockets_and_whole_cores() {
        let t = Topo {
            sockets: 2,
            cores: 2,
            threads: 2,
        };
        // CPUs 0-7: socket 0 = 0-3 (cores {0,1},{2,3}), socket 1 = 4-7.
        let all: Vec<u32> = (0..8).collect();
        let p = run("cores", t, &all, 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0, 1]), Some(vec![4, 5])]);
        let p = run("threads", t, &all, 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0]), Some(vec![4])]);
        let p = run("sockets", t, &all, 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0, 1, 2, 3]), Some(vec![4, 5, 6, 7])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND_LIST"), "0x0F,0xF0");
        let p = run("ldoms", t, &all, 1, 1);
        assert_eq!(p.sets, vec![Some(vec![0, 1, 2, 3])]);
        // More tasks than cores: the count starts over.
        let p = run("cores", t, &[0, 1], 3, 1);
        assert_eq!(p.sets.len(), 3);
        assert!(p.sets.iter().all(|s| s == &Some(vec![0, 1])));
    }

    #[test]
    fn map_and_mask() {
        let p = run("map_cpu:3,1", FLAT4, &[0, 1, 2, 3], 3, 1);
        assert_eq!(p.sets, vec![Some(vec![3]), Some(vec![1]), Some(vec![3])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND"), "quiet,map_cpu:3,1");
        assert_eq!(get(&p, "SLURM_CPU_BIND_TYPE"), "map_cpu:");
        assert_eq!(get(&p, "SLURM_CPU_BIND_LIST"), "3,1");
        assert_eq!(p.error, None);
        // Outside the step: all of the step's CPUs and Slurm's complaint.
        let p = run("map_cpu:7", FLAT4, &[0, 1], 1, 1);
        assert_eq!(p.sets, vec![Some(vec![0, 1])]);
        assert_eq!(
            p.error.as_deref(),
            Some("CPU binding outside of job step allocation, allocated CPUs are: 0x3.")
        );
        let p = run("mask_cpu:0x3,0xC", FLAT4, &[0, 1, 2, 3], 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0, 1]), Some(vec![2, 3])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND"), "quiet,mask_cpu:3,C");
        // A mask partly outside is cut down; wholly outside gets the step's.
        let p = run("mask_cpu:0x6,0x8", FLAT4, &[0, 1, 2], 2, 1);
        assert_eq!(p.sets, vec![Some(vec![1, 2]), Some(vec![0, 1, 2])]);
        assert!(p.error.is_some());
    }

    #[test]
    fn none_rank_and_no_affinity() {
        let p = run("none", FLAT4, &[0, 1], 2, 1);
        assert_eq!(p.sets, vec![None, None]);
        assert_eq!(get(&p, "SLURM_CPU_BIND"), "quiet,none");
        assert_eq!(get(&p, "SLURM_CPU_BIND_TYPE"), "none");
        assert_eq!(get(&p, "SLURM_CPU_BIND_LIST"), "");
        let p = run("rank", FLAT4, &[0, 1, 2, 3], 2, 1);
        assert_eq!(p.sets, vec![Some(vec![0]), Some(vec![1])]);
        assert_eq!(get(&p, "SLURM_CPU_BIND_TYPE"), "rank");
        let p = run("rank", FLAT4, &[2, 3], 2, 1);
        assert_eq!(
            p.error.as_deref(),
            Some("Entire node must be allocated for rank")
        );
        assert_eq!(p.sets, vec![Some(vec![2, 3]), Some(vec![2, 3])]);
        let o = parse_cpu_bind("cores").unwrap();
        let step = Step {
            cpus: &[0, 1],
            ntasks: 2,
            cpus_per_task: 1,
        };
        let p = plan(&o, false, FLAT4, &step);
        assert_eq!(p.sets, vec![None, None]);
        assert!(p.env.is_empty());
    }

    #[test]
    fn verbose_line() {
        let (a, b) = verbose_parts("MASK", "n1", 0, 0, Some(&[0]), &[0, 1]);
        assert_eq!(
            format!("{a}123{b}"),
            "cpu-bind=MASK - n1, task  0  0 [123]: mask 0x1 set\n"
        );
        let (a, b) = verbose_parts("NONE", "n1", 12, 3, None, &[0, 1]);
        assert_eq!(
            format!("{a}9{b}"),
            "cpu-bind=NONE - n1, task 12  3 [9]: mask 0x3\n"
        );
    }
}
