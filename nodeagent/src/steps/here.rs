//! The steps running on this agent's nodes, as other callers than srun see
//! them: whose they are, their tasks' pids and ranks (`scontrol listpids`),
//! their output as it comes and a way to their tasks' stdin (`sattach`).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use drover_proto::stepio::Frame;
use tokio::sync::{broadcast, mpsc};

use crate::cgroup::job::JobCgroup;

/// One started task: (pid, rank on the node, rank in the step).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskPid {
    pub pid: i32,
    pub local_id: i32,
    pub global_id: i32,
}

/// A step's part on one node.
#[derive(Clone)]
pub struct StepHere {
    pub uid: u32,
    pub tasks: Vec<TaskPid>,
    /// The job's groups when the tasks joined `step_<id>` in them.
    pub cgroup: Option<JobCgroup>,
    /// Every Stdout/Stderr frame of the tasks (sattach subscribes).
    pub output: broadcast::Sender<Frame>,
    /// Into the step's control loop: `Some(Stdin frame)`; `None` is only
    /// ever sent by srun's reader (srun gone).
    pub control: mpsc::Sender<Option<Frame>>,
}

/// Key: (job, step, node).
type Registry = HashMap<(u32, u32, String), StepHere>;
static STEPS: LazyLock<Mutex<Registry>> = LazyLock::new(Default::default);

fn steps() -> MutexGuard<'static, Registry> {
    STEPS.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn insert(job_id: u32, step_id: u32, node: &str, s: StepHere) {
    steps().insert((job_id, step_id, node.to_string()), s);
}

pub fn remove(job_id: u32, step_id: u32, node: &str) {
    steps().remove(&(job_id, step_id, node.to_string()));
}

/// The step on `node` ("" = any node served here).
pub fn get(job_id: u32, step_id: u32, node: &str) -> Option<StepHere> {
    steps()
        .iter()
        .find(|((j, s, n), _)| *j == job_id && *s == step_id && (node.is_empty() || n == node))
        .map(|(_, v)| v.clone())
}

/// Every step here: ((job, step, node), step), sorted by job, step, node.
pub fn all() -> Vec<((u32, u32, String), StepHere)> {
    let mut v: Vec<_> = steps()
        .iter()
        .map(|(k, s)| (k.clone(), s.clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// (rank on the node, rank in the step) of each started task: the node's
/// ranks are the positions in the step layout's task list. Pure.
pub fn task_pids(started: &[(u32, Option<i32>)], node_task_ids: &[u32]) -> Vec<TaskPid> {
    started
        .iter()
        .filter_map(|&(global, pid)| {
            let pid = pid?;
            let local = node_task_ids.iter().position(|t| *t == global)?;
            Some(TaskPid {
                pid,
                local_id: local as i32,
                global_id: global as i32,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_the_layout() {
        let t = task_pids(&[(4, Some(100)), (5, None), (6, Some(102))], &[4, 5, 6]);
        assert_eq!(
            t,
            vec![
                TaskPid {
                    pid: 100,
                    local_id: 0,
                    global_id: 4
                },
                TaskPid {
                    pid: 102,
                    local_id: 2,
                    global_id: 6
                }
            ]
        );
        assert!(task_pids(&[(9, Some(1))], &[4]).is_empty());
    }
}
