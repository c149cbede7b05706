//! Power saving and cloud nodes (Slurm's power_save): idle nodes past
//! `SuspendTime` are powered down with `SuspendProgram`; a job placed on
//! powered-down nodes powers them up with `ResumeProgram` and waits in
//! CONFIGURING until every node has registered; a node that does not
//! register within `ResumeTimeout` goes DOWN, `ResumeFailProgram` runs and
//! its jobs are requeued. Decisions only: the programs are run by the
//! runtime (`Effect::RunProgram`), and every power state is logged.

use std::time::Duration;

use drover_proto::JobState;

use crate::ctld::{Ctld, Effect};
use crate::end::EndReport;
use crate::nodepower::room;
pub use crate::nodepower::{Power, Rates};

impl Ctld {
    /// Is power saving configured (a SuspendTime, globally or on a
    /// partition, and both programs)?
    pub fn power_save_on(&self) -> bool {
        let p = &self.cfg.power;
        let any_time = p.suspend_time.is_some()
            || self.cfg.partitions.iter().any(|part| {
                drover_conf::power::partition_secs(part, "SuspendTime").is_some_and(|s| s.is_some())
            });
        any_time && p.suspend_program.is_some() && p.resume_program.is_some()
    }

    /// Seconds node `i` may stay idle before it is powered down (None: never):
    /// the least of its partitions' own SuspendTime, else the global one.
    fn suspend_after(&self, i: usize) -> Option<u64> {
        let n = &self.cluster.nodes[i];
        let own: Vec<Option<u64>> = n
            .partitions
            .iter()
            .filter_map(|p| self.cfg.partition(p))
            .filter_map(|p| drover_conf::power::partition_secs(p, "SuspendTime"))
            .collect();
        if own.is_empty() {
            self.cfg.power.suspend_time
        } else {
            own.into_iter().flatten().min()
        }
    }

    /// ResumeTimeout of node `i`: the largest of its partitions' own, else
    /// the global one.
    pub fn resume_timeout(&self, i: usize) -> u64 {
        self.partition_power_secs(i, "ResumeTimeout")
            .unwrap_or(self.cfg.power.resume_timeout)
    }

    fn suspend_timeout(&self, i: usize) -> u64 {
        self.partition_power_secs(i, "SuspendTimeout")
            .unwrap_or(self.cfg.power.suspend_timeout)
    }

    fn partition_power_secs(&self, i: usize, key: &str) -> Option<u64> {
        self.cluster.nodes[i]
            .partitions
            .iter()
            .filter_map(|p| self.cfg.partition(p))
            .filter_map(|p| drover_conf::power::partition_secs(p, key).flatten())
            .max()
    }

    /// SuspendExcNodes (without a count), SuspendExcParts, SuspendExcStates.
    fn suspend_excluded(&self, i: usize) -> bool {
        let p = &self.cfg.power;
        let n = &self.cluster.nodes[i];
        if p.exc_nodes
            .iter()
            .any(|x| x.keep.is_none() && x.nodes.iter().any(|m| m == n.name()))
        {
            return true;
        }
        if n.partitions.iter().any(|x| p.exc_parts.contains(x)) {
            return true;
        }
        p.exc_states.iter().any(|s| match s.as_str() {
            "CLOUD" => n.cloud,
            "DOWN" | "FAIL" => n.down,
            "DRAIN" => n.drain,
            "NOT_RESPONDING" => !n.responding,
            "RESERVED" | "MAINTENANCE" => self.node_reservation(n.name(), self.now).is_some(),
            _ => false,
        })
    }

    /// Periodic power work (from `tick`).
    pub fn power_tick(&mut self, t: i64) {
        self.power_rates.roll(t);
        // Without power saving, only nodes already asked to power down or
        // not fully on have anything to do.
        let quiet = |n: &crate::cluster::Node| n.power == Power::On && !n.power_down_asap;
        if self.cluster.nodes.iter().all(quiet) && !self.power_save_on() {
            return;
        }
        let mut off = Vec::new();
        let mut failed = Vec::new();
        for i in 0..self.cluster.nodes.len() {
            let n = &self.cluster.nodes[i];
            let since = t - n.power_since;
            match n.power {
                Power::PoweringDown if since >= self.suspend_timeout(i) as i64 => off.push(i),
                Power::PoweringUp if since >= self.resume_timeout(i) as i64 => failed.push(i),
                _ => {}
            }
        }
        let idle_on_suspend =
            drover_conf::power::CloudParams::of(self.cfg.get("SlurmctldParameters"))
                .idle_on_node_suspend;
        for i in off {
            let n = &mut self.cluster.nodes[i];
            n.power = Power::Off;
            n.power_since = t;
            n.power_down_asap = false;
            n.registered = false;
            n.responding = false;
            if idle_on_suspend {
                n.down = false;
                n.drain = false;
                n.down_not_responding = false;
                n.reason.clear();
                n.reason_time = 0;
            }
            tracing::info!("node {} powered down", n.name());
            self.log_node(i);
            self.sched_needed = true;
        }
        if !failed.is_empty() {
            self.resume_failed(&failed, "ResumeTimeout reached");
        }
        self.resume_wanted();
        self.suspend_idle(t);
    }

    /// Power up the powered-down nodes that jobs were placed on, as many as
    /// ResumeRate allows this minute (the rest on a later tick).
    fn resume_wanted(&mut self) {
        let want: Vec<usize> = (0..self.cluster.nodes.len())
            .filter(|&i| {
                let n = &self.cluster.nodes[i];
                n.power == Power::Off && !n.jobs.is_empty()
            })
            .collect();
        if want.is_empty() {
            return;
        }
        self.power_rates.roll(self.now);
        let n = room(self.cfg.power.resume_rate, self.power_rates.resumed).min(want.len());
        self.power_rates.resumed += n as u32;
        self.resume_nodes(&want[..n]);
    }

    /// Run ResumeProgram for these nodes (now POWERING_UP).
    fn resume_nodes(&mut self, idx: &[usize]) {
        self.power_nodes(
            idx,
            Power::PoweringUp,
            "waking",
            "ResumeProgram",
            60,
            Self::resume_timeout,
        );
    }

    /// Mark these nodes `to`, log them and run `program` on them with the
    /// longest of their timeouts.
    fn power_nodes(
        &mut self,
        idx: &[usize],
        to: Power,
        doing: &str,
        program: &'static str,
        default_timeout: u64,
        timeout: fn(&Self, usize) -> u64,
    ) {
        if idx.is_empty() {
            return;
        }
        let t = self.now;
        let mut names = Vec::new();
        for &i in idx {
            let n = &mut self.cluster.nodes[i];
            n.power = to;
            n.power_since = t;
            names.push(n.name().to_string());
            self.log_node(i);
        }
        tracing::info!(
            "power_save: {doing} nodes {}",
            drover_conf::hostlist::compress(&names)
        );
        let timeout = idx
            .iter()
            .map(|&i| timeout(self, i))
            .max()
            .unwrap_or(default_timeout);
        self.run_program(program, names, timeout);
    }

    /// Idle nodes past their SuspendTime (and nodes an admin asked to power
    /// down once idle) are powered down, as many as SuspendRate allows.
    fn suspend_idle(&mut self, t: i64) {
        let save = self.power_save_on();
        let mut asked = Vec::new();
        let mut due = Vec::new();
        for i in 0..self.cluster.nodes.len() {
            let n = &self.cluster.nodes[i];
            if n.power != Power::On || !n.jobs.is_empty() || n.cpus_alloc() > 0 || n.future() {
                continue;
            }
            if n.power_down_asap {
                asked.push(i);
                continue;
            }
            if !save || !(n.registered || n.down) {
                continue;
            }
            let Some(after) = self.suspend_after(i) else {
                continue;
            };
            if t - n.last_busy >= after as i64 && !self.suspend_excluded(i) {
                due.push(i);
            }
        }
        // SuspendExcNodes=list:N keeps N of the list up.
        let mut keep_up: Vec<(Vec<String>, u32, usize)> = self
            .cfg
            .power
            .exc_nodes
            .iter()
            .filter_map(|x| x.keep.map(|k| (x.nodes.clone(), k, 0)))
            .collect();
        for g in &mut keep_up {
            g.2 = self
                .cluster
                .nodes
                .iter()
                .filter(|n| {
                    matches!(n.power, Power::On | Power::PoweringUp)
                        && g.0.iter().any(|m| m == n.name())
                })
                .count();
        }
        due.retain(|&i| {
            let name = self.cluster.nodes[i].name();
            for g in keep_up.iter_mut().filter(|g| g.0.iter().any(|m| m == name)) {
                if g.2 as u32 <= g.1 {
                    return false;
                }
                g.2 -= 1;
            }
            true
        });
        let n = room(self.cfg.power.suspend_rate, self.power_rates.suspended).min(due.len());
        self.power_rates.suspended += n as u32;
        due.truncate(n);
        asked.extend(due);
        self.suspend_nodes(&asked);
    }

    /// Run SuspendProgram for these nodes (now POWERING_DOWN).
    fn suspend_nodes(&mut self, idx: &[usize]) {
        if idx.is_empty() {
            return;
        }
        self.power_nodes(
            idx,
            Power::PoweringDown,
            "suspending",
            "SuspendProgram",
            30,
            Self::suspend_timeout,
        );
        self.sched_needed = true;
    }

    /// Ask the runtime to run a configured program on a node list.
    fn run_program(&mut self, kind: &'static str, nodes: Vec<String>, timeout: u64) {
        let p = &self.cfg.power;
        let path = match kind {
            "SuspendProgram" => p.suspend_program.clone(),
            "ResumeProgram" => p.resume_program.clone(),
            _ => p.resume_fail_program.clone(),
        };
        let Some(path) = path else {
            if kind != "ResumeFailProgram" {
                tracing::warn!(
                    "power_save: {kind} is not set; nothing run for {}",
                    drover_conf::hostlist::compress(&nodes)
                );
            }
            return;
        };
        self.effects.push(Effect::RunProgram {
            kind,
            path,
            nodes,
            timeout: Duration::from_secs(timeout.max(1)),
        });
    }

    /// A program failed (missing, not executable, non-zero exit, hung):
    /// the nodes get the reason; a failed ResumeProgram fails the resume.
    pub fn program_failed(&mut self, kind: &str, nodes: &[String], why: &str) {
        let reason = format!("{kind} failed: {why}");
        tracing::error!(
            "power_save: {reason} (nodes {})",
            drover_conf::hostlist::compress(nodes)
        );
        let idx: Vec<usize> = nodes
            .iter()
            .filter_map(|n| self.cluster.node_idx(n))
            .collect();
        match kind {
            "ResumeProgram" => {
                let resuming: Vec<usize> = idx
                    .into_iter()
                    .filter(|&i| self.cluster.nodes[i].power == Power::PoweringUp)
                    .collect();
                self.resume_failed(&resuming, &reason);
            }
            "SuspendProgram" => {
                for i in idx {
                    let t = self.now;
                    let n = &mut self.cluster.nodes[i];
                    n.reason = reason.clone();
                    n.reason_time = t;
                    n.reason_uid = self.slurm_user_uid;
                    self.log_node(i);
                }
            }
            _ => {}
        }
    }

    /// These nodes did not come up: DOWN with `why`, ResumeFailProgram,
    /// their jobs requeued.
    fn resume_failed(&mut self, idx: &[usize], why: &str) {
        if idx.is_empty() {
            return;
        }
        let t = self.now;
        let mut names = Vec::new();
        let mut jobs = Vec::new();
        for &i in idx {
            let n = &mut self.cluster.nodes[i];
            n.power = Power::Off;
            n.power_since = t;
            n.registered = false;
            n.responding = false;
            n.down = true;
            n.down_not_responding = false;
            n.reason = why.to_string();
            n.reason_time = t;
            n.reason_uid = self.slurm_user_uid;
            tracing::error!("node {} not resumed: {why}; setting it DOWN", n.name());
            names.push(n.name().to_string());
            jobs.extend(n.jobs.iter().map(|&id| (id, n.name().to_string())));
            self.log_node(i);
        }
        self.run_program("ResumeFailProgram", names, 60);
        for (id, node) in jobs {
            self.requeue_for_power(id, &node, &format!("node {node} failed to resume: {why}"));
        }
        self.sched_needed = true;
    }

    /// Requeue a job (whatever its own --requeue says): its nodes were
    /// never or no longer there to run it.
    fn requeue_for_power(&mut self, id: u32, node: &str, failure: &str) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if !matches!(
            job.state(),
            JobState::Configuring | JobState::Running | JobState::Suspended | JobState::Completing
        ) {
            return;
        }
        tracing::info!("job {id}: requeued ({failure})");
        job.rt_mut().requeue_pending = true;
        self.job_ended(
            id,
            node,
            EndReport {
                node_fail: true,
                failure: failure.to_string(),
                ..Default::default()
            },
        );
    }

    /// A job was just given nodes: while any is not powered up it waits in
    /// CONFIGURING (true), and the powered-down ones are woken.
    pub fn power_wait(&mut self, id: u32) -> bool {
        let Some(job) = self.jobs.get(&id) else {
            return false;
        };
        let waiting = job.rt().alloc.iter().any(|a| {
            self.cluster
                .node_idx(&a.node)
                .is_some_and(|i| self.cluster.nodes[i].power != Power::On)
        });
        if !waiting {
            return false;
        }
        let job = self.jobs.get_mut(&id).expect("job present");
        job.rt_mut().state = JobState::Configuring as i32;
        tracing::info!("job {id}: waiting for its nodes to power up (CONFIGURING)");
        self.log_runtime(id);
        self.resume_wanted();
        true
    }

    /// Node `i` registered: a node powering up (or powered down) is on; the
    /// jobs that waited for it start once all their nodes are.
    pub fn power_registered(&mut self, i: usize) {
        let t = self.now;
        let n = &mut self.cluster.nodes[i];
        if !matches!(n.power, Power::Off | Power::PoweringUp) {
            return;
        }
        tracing::info!(
            "node {} is powered up ({}s after its resume)",
            n.name(),
            t - n.power_since
        );
        n.power = Power::On;
        n.power_since = t;
        n.last_busy = t;
        if n.down && n.reason == "ResumeTimeout reached" {
            n.down = false;
            n.reason.clear();
            n.reason_time = 0;
        }
        let jobs: Vec<u32> = n.jobs.iter().copied().collect();
        self.log_node(i);
        for id in jobs {
            self.start_configured(id);
        }
    }

    /// A CONFIGURING job whose nodes are all up and registered runs now.
    fn start_configured(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        if job.state() != JobState::Configuring {
            return;
        }
        let ready = job.rt().alloc.iter().all(|a| {
            self.cluster.node_idx(&a.node).is_some_and(|i| {
                let n = &self.cluster.nodes[i];
                n.power == Power::On && n.registered
            })
        });
        if !ready {
            return;
        }
        let t = self.now;
        let interactive = job.spec().interactive;
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        rt.state = JobState::Running as i32;
        // Slurm counts the run (and the time limit) from here.
        rt.start_time = t;
        if interactive {
            rt.launched = true;
            rt.batch_host.clear();
        }
        tracing::info!("job {id}: nodes powered up, running");
        self.log_runtime(id);
        // BEGIN mail when it runs (not while its nodes start).
        self.mail_started(id);
        if !interactive {
            self.send_launch(id);
        }
    }

    /// A CLOUD node registered from `ip`: reach it there when its NodeAddr
    /// is not configured (or `cloud_reg_addrs`), unless `cloud_dns` says
    /// its name resolves. True when the address changed.
    pub fn learn_addr(&mut self, i: usize, ip: &str) -> bool {
        let params = drover_conf::power::CloudParams::of(self.cfg.get("SlurmctldParameters"));
        let n = &mut self.cluster.nodes[i];
        let unset = n.conf.node_addr == n.conf.name;
        if !n.cloud || params.cloud_dns || !(unset || params.cloud_reg_addrs) {
            return false;
        }
        if n.learned_addr.as_deref() == Some(ip) {
            return false;
        }
        tracing::info!("node {}: address {ip} (learned at registration)", n.name());
        n.learned_addr = Some(ip.to_string());
        true
    }

    /// Is node `i` left out of node lists? A powered-down CLOUD node is,
    /// unless `PrivateData=cloud` (Slurm's rule); named, it is shown.
    pub fn node_hidden(&self, i: usize) -> bool {
        let n = &self.cluster.nodes[i];
        n.cloud && n.power == Power::Off && !self.private().cloud
    }

    /// Is any node powered down or powering up ([`Ctld::power_ready`] has
    /// something to say)?
    pub fn power_waits(&self) -> bool {
        self.cluster
            .nodes
            .iter()
            .any(|n| matches!(n.power, Power::Off | Power::PoweringUp))
    }

    /// When each node of a scheduling snapshot can run work: a node
    /// powered down is ResumeTimeout away, one powering up ResumeTimeout
    /// after its resume began.
    pub fn power_ready(&self, nodes: &mut [crate::sched::NodeSnap]) {
        for (i, snap) in nodes.iter_mut().enumerate() {
            let Some(n) = self.cluster.nodes.get(i) else {
                break;
            };
            let wait = self.resume_timeout(i) as i64;
            snap.ready = match n.power {
                Power::Off => self.now + wait,
                Power::PoweringUp => (n.power_since + wait).max(self.now),
                _ => 0,
            };
        }
    }

    /// scontrol update NodeName=X State=POWER_DOWN|POWER_DOWN_ASAP|
    /// POWER_DOWN_FORCE|POWER_UP.
    pub fn power_update(&mut self, i: usize, state: &str) -> Result<(), String> {
        let name = self.cluster.nodes[i].name().to_string();
        let power = self.cluster.nodes[i].power;
        match state {
            "POWER_UP" => match power {
                Power::Off => {
                    self.cluster.nodes[i].power_down_asap = false;
                    self.resume_nodes(&[i]);
                    Ok(())
                }
                Power::PoweringDown => Err(format!("Node {name} is powering down")),
                Power::On | Power::PoweringUp => {
                    self.cluster.nodes[i].power_down_asap = false;
                    Ok(())
                }
            },
            "POWER_DOWN" | "POWER_DOWN_ASAP" | "POWER_DOWN_FORCE" => {
                if matches!(power, Power::Off | Power::PoweringDown) {
                    return Ok(());
                }
                if state == "POWER_DOWN_FORCE" {
                    let jobs: Vec<u32> = self.cluster.nodes[i].jobs.iter().copied().collect();
                    for id in jobs {
                        self.signal_node(id, &name, 0, false, false);
                        self.requeue_for_power(id, &name, &format!("node {name} powered down"));
                    }
                }
                let n = &mut self.cluster.nodes[i];
                if power == Power::PoweringUp {
                    // Nothing registered yet: back to off at once.
                    n.power = Power::Off;
                    n.power_since = self.now;
                    return Ok(());
                }
                if n.jobs.is_empty() && n.cpus_alloc() == 0 {
                    self.suspend_nodes(&[i]);
                } else {
                    n.power_down_asap = true;
                }
                Ok(())
            }
            _ => Err(format!("Invalid node state specified: {state}")),
        }
    }
}
