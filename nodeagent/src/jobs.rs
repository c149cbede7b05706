//! The agent's table of jobs it knows: starting, running, or ended and not
//! yet acknowledged by the controller. Plus a bounded memory of runs that
//! were acknowledged, so a repeated Launch does not run a job twice. A run
//! is a job id plus its restart count: a requeued job comes back with the
//! same id and a higher count, and must run again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use drover_proto::AgentJob;
use tokio::sync::watch;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Launch in progress (supervisor not yet reported the script started).
    Starting,
    Running,
    /// Ended; JobEnded not yet acknowledged.
    Ended,
}

#[derive(Debug)]
pub struct JobEntry {
    /// Restart count of this run.
    pub run: u32,
    pub node: String,
    pub dir: PathBuf,
    pub phase: Phase,
    pub script_pid: Option<i32>,
    /// The controller said it does not know this job here (kill_jobs): its
    /// end is not reported (a late report could hit a requeued new run).
    pub disowned: bool,
    /// Becomes true when the launch finished (started or failed).
    pub ready: watch::Sender<bool>,
}

const RECENT_MAX: usize = 100_000;

/// What to do with a Launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchCheck {
    New,
    /// This run is known (running, or already finished): answer OK, do nothing.
    Duplicate,
    /// An earlier run of the job is still being wound up.
    Busy,
}

#[derive(Debug, Default)]
pub struct Jobs {
    map: HashMap<u32, JobEntry>,
    recent: HashSet<(u32, u32)>,
    recent_order: VecDeque<(u32, u32)>,
}

impl Jobs {
    pub fn get(&self, id: u32) -> Option<&JobEntry> {
        self.map.get(&id)
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut JobEntry> {
        self.map.get_mut(&id)
    }

    /// Whether run `run` of job `id` may be launched now.
    pub fn check_launch(&self, id: u32, run: u32) -> LaunchCheck {
        match self.map.get(&id) {
            Some(e) if e.run >= run => LaunchCheck::Duplicate,
            Some(_) => LaunchCheck::Busy,
            None if self.recent.contains(&(id, run)) => LaunchCheck::Duplicate,
            None => LaunchCheck::New,
        }
    }

    pub fn insert(&mut self, id: u32, run: u32, node: String, dir: PathBuf, phase: Phase) {
        let ready = watch::Sender::new(phase != Phase::Starting);
        self.map.insert(
            id,
            JobEntry {
                run,
                node,
                dir,
                phase,
                script_pid: None,
                disowned: false,
                ready,
            },
        );
    }

    pub fn set_phase(&mut self, id: u32, phase: Phase) {
        if let Some(e) = self.map.get_mut(&id) {
            e.phase = phase;
            if phase != Phase::Starting {
                e.ready.send_replace(true);
            }
        }
    }

    /// Mark run `run` of a job as unknown to the controller; returns
    /// whether it still runs (None: no such run here).
    pub fn disown(&mut self, id: u32, run: u32) -> Option<bool> {
        let e = self.map.get_mut(&id).filter(|e| e.run == run)?;
        e.disowned = true;
        Some(e.phase != Phase::Ended)
    }

    pub fn is_disowned(&self, id: u32) -> bool {
        self.map.get(&id).is_some_and(|e| e.disowned)
    }

    /// Forget a job the controller acknowledged; remember the run.
    pub fn finish(&mut self, id: u32) {
        let Some(e) = self.map.remove(&id) else {
            return;
        };
        e.ready.send_replace(true);
        let key = (id, e.run);
        if self.recent.insert(key) {
            self.recent_order.push_back(key);
            if self.recent_order.len() > RECENT_MAX {
                if let Some(old) = self.recent_order.pop_front() {
                    self.recent.remove(&old);
                }
            }
        }
    }

    /// Drop an entry without remembering it (a launch that turned out not to be ours).
    pub fn forget(&mut self, id: u32) {
        if let Some(e) = self.map.remove(&id) {
            e.ready.send_replace(true);
        }
    }

    /// The jobs list for Register / Heartbeat / Ping.
    pub fn agent_jobs(&self) -> Vec<AgentJob> {
        let mut v: Vec<AgentJob> = self
            .map
            .iter()
            .map(|(&id, e)| AgentJob {
                job_id: id,
                node: e.node.clone(),
                running: e.phase != Phase::Ended,
                restart_count: e.run,
                steps_only: false,
            })
            .collect();
        v.sort_by_key(|j| j.job_id);
        v
    }

    pub fn running_ids(&self) -> Vec<u32> {
        self.map
            .iter()
            .filter(|(_, e)| e.phase != Phase::Ended)
            .map(|(&id, _)| id)
            .collect()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifecycle() {
        let mut j = Jobs::default();
        assert_eq!(j.check_launch(1, 0), LaunchCheck::New);
        j.insert(1, 0, "n1".into(), PathBuf::from("/s/job1"), Phase::Starting);
        j.insert(2, 0, "n2".into(), PathBuf::from("/s/job2"), Phase::Running);
        assert_eq!(j.check_launch(1, 0), LaunchCheck::Duplicate);
        let rx = j.get(1).unwrap().ready.subscribe();
        assert!(!*rx.borrow());
        j.set_phase(1, Phase::Running);
        assert!(*rx.borrow());
        j.set_phase(2, Phase::Ended);
        assert_eq!(j.disown(2, 1), None, "another run");
        assert!(!j.is_disowned(2));
        assert_eq!(j.disown(2, 0), Some(false));
        assert!(j.is_disowned(2));
        assert_eq!(j.disown(99, 0), None);
        assert_eq!(j.agent_jobs()[1].restart_count, 0);
        let aj = j.agent_jobs();
        assert_eq!(aj.len(), 2);
        assert!(aj[0].running);
        assert!(!aj[1].running);
        assert_eq!(j.running_ids(), vec![1]);
        assert_eq!(
            j.check_launch(2, 1),
            LaunchCheck::Busy,
            "requeued, old run not done"
        );
        j.finish(2);
        assert_eq!(j.check_launch(2, 0), LaunchCheck::Duplicate);
        assert_eq!(
            j.check_launch(2, 1),
            LaunchCheck::New,
            "a requeued job runs again"
        );
        assert!(j.get(2).is_none());
        assert_eq!(j.len(), 1);
        j.forget(1);
        assert_eq!(j.check_launch(1, 0), LaunchCheck::New);
        assert!(j.is_empty());
    }
}
