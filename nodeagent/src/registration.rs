//! Registration with the controller (retried every second), then the
//! heartbeat loop; both report the jobs running here, and the controller's
//! answer names the jobs it does not know, which are terminated.

use std::sync::Arc;
use std::time::Duration;

use tonic::Request;
use tracing::{debug, info, warn};

use drover_proto::{AgentJob, HeartbeatRequest, RegisterRequest};

use crate::agent::Shared;
use crate::every::Every;
use crate::stepd::protocol::Request as StepdRequest;
use crate::supervisors::to_supervisor;

/// Terminate jobs the controller does not know. Only the runs this agent
/// reported in the request being answered are concerned (a requeued job may
/// have started a newer run meanwhile). Their step tasks on the nodes
/// reported go too: a job may have nothing else here.
fn kill_jobs(shared: &Arc<Shared>, ids: &[u32], reported: &[AgentJob]) {
    let kill_wait = shared.live().kill_wait;
    for &id in ids {
        let mine: Vec<&AgentJob> = reported.iter().filter(|j| j.job_id == id).collect();
        for j in &mine {
            if crate::steps::has_tasks(id, &j.node) {
                info!(
                    "job {id}: the controller does not run it on {}: killing its step tasks",
                    j.node
                );
                crate::steps::signal_job(id, Some(&j.node), 0, kill_wait);
            }
        }
        let Some(run) = mine.iter().find(|j| !j.steps_only).map(|j| j.restart_count) else {
            continue;
        };
        let running = shared.jobs().disown(id, run);
        if running != Some(true) {
            if running.is_some() {
                debug!("job {id}: the controller does not know it: its end is not reported");
            }
            continue;
        }
        info!("job {id}: the controller does not know it: terminating");
        let s = shared.clone();
        tokio::spawn(async move {
            let req = StepdRequest::Terminate {
                kill_wait,
                timeout: false,
            };
            if let Err(e) = to_supervisor(&s, id, req).await {
                warn!("job {id}: cannot terminate: {}", e.message());
            }
        });
    }
}

/// Every job with something running here: the job table's (batch scripts)
/// and, once per node, the jobs of which only step tasks run there (srun
/// inside salloc, or the other nodes of a batch job).
fn reported_jobs(shared: &Shared) -> Vec<AgentJob> {
    let mut v = shared.jobs().agent_jobs();
    for (job_id, node, run) in crate::steps::running_jobs() {
        if !v.iter().any(|j| j.job_id == job_id && j.node == node) {
            v.push(AgentJob {
                job_id,
                node,
                running: true,
                restart_count: run,
                steps_only: true,
            });
        }
    }
    v
}

fn register_request(shared: &Shared) -> RegisterRequest {
    RegisterRequest {
        nodes: shared.settings.registrations(shared.boot_time, &shared.os),
        jobs: reported_jobs(shared),
        agent_start_time: shared.start_time,
        version: env!("CARGO_PKG_VERSION").to_string(),
        conf_hash: shared.live().conf_hash,
    }
}

/// Register (retrying every second), then heartbeat; register again when
/// the controller asks. Never returns.
pub async fn control_loop(shared: Arc<Shared>) {
    let mut unreachable = Every::new(Duration::from_secs(60));
    // A configless agent the controller asks to register again (it lost
    // the agent, or marked it down while it was cut off) may have missed a
    // reconfigure: it fetches the config first.
    let mut refresh = false;
    loop {
        if refresh && shared.settings.conf_server.is_some() {
            if let Err(e) = crate::reconfigure::apply(&shared).await {
                warn!("before registering again: {e}");
            }
        }
        // New launches wait until this registration is answered: it lists
        // the jobs here, and one launched after the list was made would be
        // taken for lost (`batch_launch::launch` reads this).
        shared.registered.send_replace(false);
        let interval = loop {
            let reg = register_request(&shared);
            let reported = reg.jobs.clone();
            let mut r = Request::new(reg);
            r.set_timeout(Duration::from_secs(10));
            match shared.ctl.clone().register(r).await {
                Ok(resp) => {
                    let resp = resp.into_inner();
                    for e in &resp.errors {
                        warn!("controller: {e}");
                    }
                    info!(
                        "registered {} node(s) with the controller at {}",
                        shared.settings.nodes.len(),
                        shared.settings.controller
                    );
                    // Disown first, so no end report of those jobs goes out.
                    kill_jobs(&shared, &resp.kill_jobs, &reported);
                    shared.registered.send_replace(true);
                    break Duration::from_secs(u64::from(resp.heartbeat_interval.clamp(1, 300)));
                }
                Err(s) => {
                    if unreachable.due() {
                        warn!(
                            "cannot register with the controller at {}: {}; retrying every second",
                            shared.settings.controller,
                            s.message()
                        );
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        };
        unreachable = Every::new(Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shared.reregister.notified() => {
                    info!("configuration changed: registering again");
                    refresh = false;
                    break;
                }
            }
            let n = shared.settings.nodes.len();
            let load = crate::hostinfo::loadavg_x100();
            let free = crate::hostinfo::mem_available_mb().unwrap_or(0);
            let reported = reported_jobs(&shared);
            let hb = HeartbeatRequest {
                nodes: shared.settings.node_names(),
                jobs: reported.clone(),
                cpu_load: vec![load; n],
                free_memory: vec![free; n],
            };
            let mut r = Request::new(hb);
            r.set_timeout(Duration::from_secs(10));
            match shared.ctl.clone().heartbeat(r).await {
                Ok(resp) => {
                    let resp = resp.into_inner();
                    kill_jobs(&shared, &resp.kill_jobs, &reported);
                    if resp.reregister {
                        info!("the controller asked this agent to register again");
                        refresh = true;
                        break;
                    }
                }
                Err(s) => {
                    if unreachable.due() {
                        warn!(
                            "heartbeat to the controller at {} failed: {}",
                            shared.settings.controller,
                            s.message()
                        );
                    }
                }
            }
        }
    }
}
