//! `scontrol listpids`: the processes of the jobs on this agent's nodes, by
//! step. A batch step's processes come from its cgroup (`step_batch`) or,
//! without cgroups, from the supervisor's process tree; an srun step's from
//! its `step_<id>` group or its tasks' process trees. The tasks themselves
//! carry their ranks (the batch script is rank 0).

use std::sync::Arc;

use drover_proto::ProcEntry;
use tonic::Status;

use crate::agent::Shared;
use crate::cgroup::job::JobCgroup;
use crate::cgroup::plan::BATCH_STEP;
use crate::cgroup::Plan;
use crate::steps::here::{self, TaskPid};

/// Who asks: their own jobs only, unless an administrator.
#[derive(Debug, Clone, Copy)]
pub struct Caller {
    pub uid: u32,
    pub admin: bool,
}

impl Caller {
    fn may_see(&self, owner: u32) -> bool {
        self.admin || self.uid == owner
    }
}

/// The rows of one step: its live tasks first (with their ranks), then the
/// other processes (ranks -1). Pure.
pub fn step_rows(job_id: u32, step: &str, pids: &[i32], tasks: &[TaskPid]) -> Vec<ProcEntry> {
    let mut out: Vec<ProcEntry> = tasks
        .iter()
        .filter(|t| pids.contains(&t.pid))
        .map(|t| ProcEntry {
            pid: t.pid,
            job_id,
            step: step.to_string(),
            local_id: t.local_id,
            global_id: t.global_id,
        })
        .collect();
    for &p in pids {
        if !tasks.iter().any(|t| t.pid == p) {
            out.push(ProcEntry {
                pid: p,
                job_id,
                step: step.to_string(),
                local_id: -1,
                global_id: -1,
            });
        }
    }
    out
}

/// Every process of `job_id` (0: every job) on `node` ("": every node
/// served here) that `caller` may see. Naming a job of someone else is
/// refused. Blocking (reads /proc and cgroup files).
pub fn list(
    shared: &Arc<Shared>,
    job_id: u32,
    node: &str,
    caller: Caller,
) -> Result<Vec<ProcEntry>, Status> {
    let denied = || Status::permission_denied("Access/permission denied");
    let mut out = Vec::new();
    let batch: Vec<(u32, std::path::PathBuf, Option<i32>)> = {
        let jobs = shared.jobs();
        let mut ids = jobs.running_ids();
        ids.sort_unstable();
        ids.into_iter()
            .filter(|id| job_id == 0 || *id == job_id)
            .filter_map(|id| jobs.get(id).map(|e| (id, e)))
            .filter(|(_, e)| node.is_empty() || e.node == node)
            .map(|(id, e)| (id, e.dir.clone(), e.script_pid))
            .collect()
    };
    let mut tree: Option<Vec<crate::proctree::ProcStat>> = None;
    for (id, dir, script_pid) in batch {
        let Ok(launch) = crate::jobdir::read_launch(&dir) else {
            continue;
        };
        if !caller.may_see(launch.uid) {
            if job_id != 0 {
                return Err(denied());
            }
            continue;
        }
        let pids = match read_plan(&dir) {
            Some(plan) => JobCgroup::open(plan).group_pids(BATCH_STEP),
            None => match crate::usage::supervisor_pid(&dir) {
                Some(sup) => {
                    let t = tree.get_or_insert_with(crate::proctree::scan);
                    let mut v = crate::proctree::descendants(t, sup);
                    v.sort_unstable();
                    v
                }
                None => Vec::new(),
            },
        };
        let script: Vec<TaskPid> = script_pid
            .map(|pid| TaskPid {
                pid,
                local_id: 0,
                global_id: 0,
            })
            .into_iter()
            .collect();
        out.extend(step_rows(id, "batch", &pids, &script));
    }
    for ((j, s, n), st) in here::all() {
        if (job_id != 0 && j != job_id) || (!node.is_empty() && n != node) {
            continue;
        }
        if !caller.may_see(st.uid) {
            if job_id != 0 {
                return Err(denied());
            }
            continue;
        }
        let pids = match &st.cgroup {
            Some(cg) => cg.group_pids(&format!("step_{s}")),
            None => {
                let t = tree.get_or_insert_with(crate::proctree::scan);
                let mut v: Vec<i32> = st.tasks.iter().map(|t| t.pid).collect();
                for task in &st.tasks {
                    v.extend(crate::proctree::descendants(t, task.pid));
                }
                // Only what still runs (a task that exited is not listed).
                v.retain(|p| t.iter().any(|x| x.pid == *p && x.state != 'Z'));
                v.sort_unstable();
                v.dedup();
                v
            }
        };
        out.extend(step_rows(j, &s.to_string(), &pids, &st.tasks));
    }
    Ok(out)
}

fn read_plan(dir: &std::path::Path) -> Option<Plan> {
    std::fs::read_to_string(dir.join(crate::stepd::CGROUP_PLAN_FILE))
        .ok()
        .and_then(|t| Plan::parse(&t).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_first_with_ranks_then_the_rest() {
        let tasks = [
            TaskPid {
                pid: 20,
                local_id: 0,
                global_id: 2,
            },
            TaskPid {
                pid: 30,
                local_id: 1,
                global_id: 3,
            },
        ];
        let rows = step_rows(7, "0", &[10, 20, 25], &tasks);
        let got: Vec<(i32, i32, i32)> = rows
            .iter()
            .map(|r| (r.pid, r.local_id, r.global_id))
            .collect();
        // Task 3 (pid 30) has exited: not listed.
        assert_eq!(got, vec![(20, 0, 2), (10, -1, -1), (25, -1, -1)]);
        assert!(rows.iter().all(|r| r.job_id == 7 && r.step == "0"));
    }

    #[test]
    fn owners_and_admins() {
        let c = Caller {
            uid: 1000,
            admin: false,
        };
        assert!(c.may_see(1000));
        assert!(!c.may_see(0));
        let a = Caller {
            uid: 0,
            admin: true,
        };
        assert!(a.may_see(1000));
    }
}
