//! `sstat`: who may see a running job's live usage and which agents to ask.

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::JobState;

use crate::ctld::Ctld;

/// Where to ask for a running job's live usage: (node, its agent's address).
pub type StatsTargets = Vec<(String, String)>;

impl Ctld {
    /// `sstat`: check the caller may see the job and that it runs, and name
    /// the agents to ask (the fan-out runs outside the owner task).
    pub fn stats_targets(&self, who: &Identity, job_id: u32) -> Result<StatsTargets, Refusal> {
        let job = self.owned_job(who, job_id)?;
        if job.state() != JobState::Running {
            return Err(Refusal::failed_precondition(format!(
                "no steps running for job {job_id}"
            )));
        }
        let nodes: Vec<String> = job.rt().alloc.iter().map(|a| a.node.clone()).collect();
        Ok(nodes
            .into_iter()
            .filter_map(|n| self.agent_addr(&n).map(|a| (n, a)))
            .collect())
    }
}
