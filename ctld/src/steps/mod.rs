//! Job steps (issue 6): `srun` inside an allocation.
//!
//! `CreateStep` places the step inside the job's allocation
//! ([`layout::place`]), records it in the job's runtime (so it survives a
//! restart and reaches accounting) and returns one `StepLaunchRequest` per
//! node; the gRPC service sends them to the agents all at once. Each agent
//! reports `StepEnded` when its tasks are done; the step ends when every node
//! has reported.

pub mod layout;

use std::collections::HashMap;

use crate::refusal::Refusal;
use drover_conf::hostlist;
use drover_proto::auth::Identity;
use drover_proto::{
    CompleteAllocationRequest, CompleteAllocationResponse, CreateStepResponse, JobState, NodeAlloc,
    StepEndedRequest, StepInfo, StepLaunchRequest, StepRequest,
};

use crate::ctld::Ctld;
use crate::ctld::Effect;
use crate::submit::msg;
use layout::LayoutError;

/// What the service sends out after a step was created.
pub type Launches = Vec<(String, Option<String>, StepLaunchRequest)>;

/// Slurm's wording when a step must wait for CPUs held by other steps.
pub const BUSY: &str = "Requested nodes are busy";
/// Slurm's ESLURM_DISABLED: a step of a suspended job (srun retries).
pub const DISABLED: &str = "Requested operation is presently disabled";

/// A step that is still running (its job running too).
pub fn is_running(s: &StepInfo) -> bool {
    s.end_time == 0
}

impl Ctld {
    pub fn create_step(
        &mut self,
        who: &Identity,
        mut req: StepRequest,
    ) -> Result<(CreateStepResponse, Launches), Refusal> {
        let id = req.job_id;
        let admin = self.is_admin(who);
        let job = self
            .jobs
            .get(&id)
            .ok_or_else(|| Refusal::not_found(msg::INVALID_JOB))?;
        if !admin && job.rec.uid != who.uid {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        match job.state() {
            JobState::Running => {}
            // Slurm: srun waits (and retries) while the job is suspended.
            JobState::Suspended => return Err(Refusal::unavailable(DISABLED)),
            JobState::Pending => return Err(Refusal::failed_precondition(msg::PENDING)),
            _ => return Err(Refusal::failed_precondition(msg::ALREADY_DONE)),
        }
        if job.rt().terminating {
            return Err(Refusal::failed_precondition(msg::ALREADY_DONE));
        }
        // srun retrying after losing the controller mid-call: the step was
        // made (and maybe launched) before; answer with it and launch it
        // again where it has not ended (agents ignore a repeated launch).
        if !req.create_token.is_empty() {
            if let Some(s) = job
                .rt()
                .steps
                .iter()
                .find(|s| s.create_token == req.create_token)
                .cloned()
            {
                return Ok(self.step_launches(id, &s, req));
            }
        }
        let mut busy: HashMap<String, Vec<u32>> = HashMap::new();
        let mut busy_gpus: HashMap<String, Vec<u32>> = HashMap::new();
        for s in job.rt().steps.iter().filter(|s| is_running(s)) {
            for a in &s.alloc {
                busy_gpus
                    .entry(a.node.clone())
                    .or_default()
                    .extend(a.gres.iter().flat_map(|g| g.indices.iter().copied()));
                let e = busy.entry(a.node.clone()).or_default();
                if a.cpu_ids.is_empty() {
                    e.extend(0..a.cpus);
                } else {
                    e.extend(&a.cpu_ids);
                }
            }
        }
        // A bare srun takes the job's shape: its -n, else
        // --ntasks-per-node on each of its nodes.
        let spec_ntasks = match job.spec().ntasks {
            0 => job.spec().ntasks_per_node * job.rt().alloc.len() as u32,
            n => n,
        };
        let to_status = |e| match e {
            LayoutError::Busy => Refusal::unavailable(BUSY),
            LayoutError::Invalid(m) => Refusal::invalid_argument(m),
        };
        // Impossible in this allocation (whatever runs now): refuse at once.
        let none = HashMap::new();
        let mut alone =
            layout::place(&job.rt().alloc, &none, &req, spec_ntasks).map_err(to_status)?;
        layout::assign_gpus(&mut alone, &job.rt().alloc, &none, &req).map_err(to_status)?;
        // srun --mem (per node) beyond what the job holds on a node.
        if req.mem_mb > 0 {
            let short = alone.nodes.iter().any(|n| {
                job.rt()
                    .alloc
                    .iter()
                    .find(|a| a.node == n.node)
                    .is_some_and(|a| a.mem_mb > 0 && req.mem_mb > a.mem_mb)
            });
            if short {
                return Err(Refusal::invalid_argument(
                    "Memory required by task is not available",
                ));
            }
        }
        let mut placed =
            layout::place(&job.rt().alloc, &busy, &req, spec_ntasks).map_err(to_status)?;
        layout::assign_gpus(&mut placed, &job.rt().alloc, &busy_gpus, &req).map_err(to_status)?;
        let names: Vec<&str> = placed.nodes.iter().map(|n| n.node.as_str()).collect();
        let nodelist = hostlist::compress(&names);
        let job = job.clone();
        let step_id = job.rt().next_step_id;
        if req.name.is_empty() {
            req.name = req
                .argv
                .first()
                .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
                .unwrap_or_default();
        }
        let info = StepInfo {
            step_id,
            name: req.name.clone(),
            nodelist: nodelist.clone(),
            ntasks: placed.ntasks,
            ncpus: placed.nodes.iter().map(|n| n.cpus).sum(),
            start_time: self.now,
            state: JobState::Running as i32,
            pending_nodes: placed.nodes.iter().map(|n| n.node.clone()).collect(),
            alloc: if req.overlap {
                Vec::new()
            } else {
                placed
                    .nodes
                    .iter()
                    .map(|n| NodeAlloc {
                        node: n.node.clone(),
                        cpus: n.cpus,
                        cpu_ids: n.cpu_ids.clone(),
                        gres: if n.gpu_ids.is_empty() {
                            Vec::new()
                        } else {
                            vec![drover_proto::GresAlloc {
                                name: "gpu".into(),
                                indices: n.gpu_ids.clone(),
                                count: n.gpu_ids.len() as u64,
                                ..Default::default()
                            }]
                        },
                        ..Default::default()
                    })
                    .collect()
            },
            mem_mb: req.mem_mb,
            create_token: req.create_token.clone(),
            layout: placed.nodes,
            ..Default::default()
        };
        {
            let j = self.jobs.get_mut(&id).expect("job looked up above");
            let rt = j.rt_mut();
            rt.next_step_id += 1;
            rt.steps.push(info.clone());
        }
        self.log_runtime(id);
        Ok(self.step_launches(id, &info, req))
    }

    /// The answer to srun and the launch requests for the step's nodes that
    /// have not reported its end.
    fn step_launches(
        &mut self,
        id: u32,
        info: &StepInfo,
        mut req: StepRequest,
    ) -> (CreateStepResponse, Launches) {
        if req.name.is_empty() {
            req.name = info.name.clone();
        }
        let base = self.job_launch_request(id);
        let alloc: Vec<String> = self
            .jobs
            .get(&id)
            .map(|j| j.rt().alloc.iter().map(|a| a.node.clone()).collect())
            .unwrap_or_default();
        let mut launches = Vec::new();
        for n in info
            .layout
            .iter()
            .filter(|n| info.pending_nodes.contains(&n.node))
        {
            let mut jr = base.clone();
            jr.node = n.node.clone();
            jr.node_id = alloc.iter().position(|a| *a == n.node).unwrap_or(0) as u32;
            let agent = self.agent_addr(&n.node);
            launches.push((
                n.node.clone(),
                agent,
                StepLaunchRequest {
                    job: Some(jr),
                    step_id: info.step_id,
                    step: Some(req.clone()),
                    nodes: info.layout.clone(),
                    nodelist: info.nodelist.clone(),
                    ntasks: info.ntasks,
                },
            ));
        }
        let resp = CreateStepResponse {
            step_id: info.step_id,
            nodes: info.layout.clone(),
            nodelist: info.nodelist.clone(),
            ntasks: info.ntasks,
        };
        (resp, launches)
    }

    /// A node finished its part of a step (or could not start it).
    pub fn step_ended(&mut self, r: StepEndedRequest) {
        let Some(job) = self.jobs.get_mut(&r.job_id) else {
            return;
        };
        let Some(s) = job
            .rt_mut()
            .steps
            .iter_mut()
            .find(|s| s.step_id == r.step_id)
        else {
            return;
        };
        let before = s.pending_nodes.len();
        s.pending_nodes.retain(|n| *n != r.node);
        if s.pending_nodes.len() == before {
            return; // repeated report
        }
        s.exit_code = s.exit_code.max(r.exit_code);
        if r.exit_signal != 0 {
            s.exit_signal = r.exit_signal;
        }
        s.cpu_time_usec += r.cpu_time_usec;
        s.max_rss_kb = s.max_rss_kb.max(r.max_rss_kb);
        s.oom |= r.oom;
        if s.pending_nodes.is_empty() {
            s.end_time = self.now;
            s.state = if s.oom {
                // As for jobs (Slurm): OUT_OF_MEMORY, exit code 0:125.
                s.exit_code = 0;
                s.exit_signal = 125;
                JobState::OutOfMemory as i32
            } else if s.exit_signal != 0 {
                if [libc::SIGKILL, libc::SIGINT, libc::SIGTERM].contains(&s.exit_signal) {
                    JobState::Cancelled as i32
                } else {
                    JobState::Failed as i32
                }
            } else if s.exit_code != 0 {
                JobState::Failed as i32
            } else {
                JobState::Completed as i32
            };
            self.log_runtime(r.job_id);
        }
    }
}

impl Ctld {
    /// `scancel -s SIG JOB`: the signal to every running step of the job
    /// (not its batch shell), where the step runs.
    pub fn signal_steps(&mut self, id: u32, signal: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let running: Vec<(u32, Vec<String>)> = job
            .rt()
            .steps
            .iter()
            .filter(|s| is_running(s))
            .map(|s| (s.step_id, s.pending_nodes.clone()))
            .collect();
        for (step_id, nodes) in running {
            self.signal_step_on(id, step_id, nodes, signal);
        }
    }

    /// `signal` to step `id.step_id`'s tasks on each of `nodes`.
    fn signal_step_on(&mut self, id: u32, step_id: u32, nodes: Vec<String>, signal: u32) {
        let kill_wait = self.cfg.kill_wait as u32;
        for node in nodes {
            let req = drover_proto::SignalJobRequest {
                job_id: id,
                signal,
                node: node.clone(),
                kill_wait,
                step_only: true,
                step_id,
                ..Default::default()
            };
            self.effects.push(Effect::Signal { node, req });
        }
    }

    /// `scancel JOB.STEP` (with `-s SIG`: signal the step's tasks).
    pub fn cancel_step(
        &mut self,
        who: &Identity,
        text: &str,
        signal: u32,
    ) -> Result<(), &'static str> {
        let (j, s) = text.split_once('.').ok_or(msg::INVALID_JOB)?;
        let (Ok(id), Ok(step_id)) = (j.parse::<u32>(), s.parse::<u32>()) else {
            return Err(msg::INVALID_JOB);
        };
        let job = self.jobs.get(&id).ok_or(msg::INVALID_JOB)?;
        if !self.is_admin(who) && job.rec.uid != who.uid {
            return Err(msg::ACCESS);
        }
        let step = job
            .rt()
            .steps
            .iter()
            .find(|st| st.step_id == step_id)
            .ok_or(msg::INVALID_JOB)?;
        if !is_running(step) || job.state() != JobState::Running {
            return Err(msg::ALREADY_DONE);
        }
        let nodes = step.pending_nodes.clone();
        self.signal_step_on(id, step_id, nodes, signal);
        Ok(())
    }

    /// salloc (or srun's own allocation) is done: the job ends with the
    /// command's exit status, and whatever still runs on its nodes is killed.
    pub fn complete_allocation(
        &mut self,
        who: &Identity,
        r: CompleteAllocationRequest,
    ) -> Result<CompleteAllocationResponse, Refusal> {
        let job = self.owned_job(who, r.job_id)?;
        if job.state().is_final() {
            return Ok(CompleteAllocationResponse {});
        }
        if job.state() == JobState::Pending {
            self.cancel_pending(r.job_id, who.uid, "None");
            return Ok(CompleteAllocationResponse {});
        }
        self.job_ended(
            r.job_id,
            "",
            crate::end::EndReport {
                exit_code: r.exit_code,
                exit_signal: r.exit_signal,
                ..Default::default()
            },
        );
        Ok(CompleteAllocationResponse {})
    }
}

/// A step as seen from outside: steps of an ended job that never reported
/// are shown ended with the job (CANCELLED at the job's end).
pub fn effective(step: &StepInfo, job_state: JobState, job_end: i64) -> StepInfo {
    let mut s = step.clone();
    if is_running(&s) && job_state.is_final() {
        s.end_time = job_end;
        s.state = JobState::Cancelled as i32;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_of_an_ended_job_show_ended() {
        let running = StepInfo {
            step_id: 1,
            start_time: 10,
            state: JobState::Running as i32,
            ..Default::default()
        };
        let s = effective(&running, JobState::Running, 0);
        assert_eq!(s.state, JobState::Running as i32);
        assert_eq!(s.end_time, 0);
        let s = effective(&running, JobState::Cancelled, 50);
        assert_eq!(s.state, JobState::Cancelled as i32);
        assert_eq!(s.end_time, 50);
        let done = StepInfo {
            end_time: 20,
            state: JobState::Failed as i32,
            ..running
        };
        let s = effective(&done, JobState::Completed, 50);
        assert_eq!((s.state, s.end_time), (JobState::Failed as i32, 20));
    }
}
