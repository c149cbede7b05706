//! srun and a node that fails under its step: the controller ends the job
//! `NODE_FAIL` after `SlurmdTimeout`, but a node cut off the network never
//! closes its connection to srun. srun therefore also waits on the job
//! (WaitJob, asked again while the controller is away); when the job ends
//! `NODE_FAIL` it asks which of the step's nodes are down, says Slurm's
//! `srun: error: Node failure on NODES`, and stops waiting for them.

use drover_conf::Config;
use drover_proto::{GetNodesRequest, JobState, NodeInfo, WaitJobRequest};
use std::time::Duration;

use crate::salloc::alloc::{fresh_client, is_gone};

/// The step's nodes that failed, once the job has ended `NODE_FAIL`; never
/// resolves for a job that ends any other way (its nodes close their
/// connections themselves).
pub async fn failed_nodes(cfg: Config, job_id: u32, step_nodes: Vec<String>) -> Vec<String> {
    loop {
        if let Some(mut ctl) = fresh_client(&cfg) {
            match ctl.wait_job(WaitJobRequest { job_id }).await {
                Ok(r) => {
                    let state = r.into_inner().job.map_or(0, |j| j.state);
                    if state != JobState::NodeFail as i32 {
                        return std::future::pending().await;
                    }
                    let nodes = ctl
                        .get_nodes(GetNodesRequest {
                            names: step_nodes.clone(),
                        })
                        .await
                        .map(|r| r.into_inner().nodes)
                        .unwrap_or_default();
                    return down_nodes(&nodes, &step_nodes);
                }
                Err(st) if is_gone(&st) => return std::future::pending().await,
                Err(st) => tracing::debug!("job {job_id}: controller away: {}", st.message()),
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Which of `step_nodes` (in that order) the controller reports down or
/// not responding.
pub fn down_nodes(nodes: &[NodeInfo], step_nodes: &[String]) -> Vec<String> {
    step_nodes
        .iter()
        .filter(|s| {
            nodes
                .iter()
                .any(|n| &n.name == *s && (n.down || !n.responding))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, down: bool, responding: bool) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            down,
            responding,
            ..Default::default()
        }
    }

    #[test]
    fn down_or_silent_nodes_of_the_step_in_step_order() {
        let nodes = [
            node("n3", true, false),
            node("n1", false, true),
            node("n2", false, false),
            node("n9", true, false),
        ];
        let step: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        assert_eq!(down_nodes(&nodes, &step), vec!["n2", "n3"]);
        assert!(down_nodes(&[node("n1", false, true)], &step).is_empty());
    }
}
