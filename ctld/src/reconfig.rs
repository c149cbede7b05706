//! `scontrol show config` and `scontrol reconfigure`.

use std::sync::Arc;

use drover_conf::{ConfError, ConfWarning, Config};
use drover_proto::{ConfigEntry, ConfigResponse, JobState, ReconfigureResponse};
use tonic::Status;

use crate::cluster::Cluster;
use crate::ctld::Ctld;

fn opt(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "(null)".into())
}

fn mem(v: Option<u64>) -> String {
    v.map_or("UNLIMITED".into(), |m| format!("{m}"))
}

impl Ctld {
    /// Effective settings, Slurm's key names and units.
    pub fn config_entries(&self) -> ConfigResponse {
        let c = &self.cfg;
        let mut e: Vec<(String, String)> = vec![
            (
                "AccountingStorageType".into(),
                c.accounting_storage_type.clone(),
            ),
            ("AuthInfo".into(), format!("socket={}", c.auth_socket())),
            ("AuthKeyFile".into(), c.auth_key_file.clone()),
            ("AuthType".into(), c.auth_type.clone()),
            ("ClusterName".into(), c.cluster_name.clone()),
            ("DefMemPerCPU".into(), mem(c.def_mem_per_cpu)),
            ("DefMemPerNode".into(), mem(c.def_mem_per_node)),
            ("EnforcePartLimits".into(), c.enforce_part_limits.clone()),
            ("Epilog".into(), opt(&c.epilog)),
            ("FirstJobId".into(), c.first_job_id.to_string()),
            (
                "GresTypes".into(),
                if c.gres_types.is_empty() {
                    "(null)".into()
                } else {
                    c.gres_types.join(",")
                },
            ),
            ("KillWait".into(), format!("{} sec", c.kill_wait)),
            ("MaxArraySize".into(), c.max_array_size.to_string()),
            ("MaxJobCount".into(), c.max_job_count.to_string()),
            ("MaxJobId".into(), c.max_job_id.to_string()),
            ("MaxMemPerNode".into(), mem(c.max_mem_per_node)),
            ("MinJobAge".into(), format!("{} sec", c.min_job_age)),
            ("NEXT_JOB_ID".into(), self.next_job_id.to_string()),
            (
                "OverTimeLimit".into(),
                if c.over_time_limit_min == u32::MAX {
                    "UNLIMITED".into()
                } else {
                    format!("{} min", c.over_time_limit_min)
                },
            ),
            ("PriorityType".into(), c.priority_type.clone()),
            ("Prolog".into(), opt(&c.prolog)),
            ("ReturnToService".into(), c.return_to_service.to_string()),
            ("SchedulerType".into(), c.scheduler_type.clone()),
            ("SelectType".into(), c.select_type.clone()),
            (
                "SelectTypeParameters".into(),
                if c.select_type_parameters.is_empty() {
                    "(null)".into()
                } else {
                    c.select_type_parameters.join(",")
                },
            ),
            ("SLURM_CONF".into(), self.config_path.display().to_string()),
            ("SLURM_VERSION".into(), env!("CARGO_PKG_VERSION").into()),
            (
                "SlurmUser".into(),
                format!("{}({})", c.slurm_user, self.slurm_user_uid),
            ),
            (
                "SlurmctldHost[0]".into(),
                c.slurmctld_host
                    .first()
                    .map(|h| match &h.addr {
                        Some(a) => format!("{}({a})", h.name),
                        None => h.name.clone(),
                    })
                    .unwrap_or_default(),
            ),
            ("SlurmctldPort".into(), c.slurmctld_port.to_string()),
            ("SlurmdPort".into(), c.slurmd_port.to_string()),
            ("SlurmdSpoolDir".into(), c.slurmd_spool_dir.clone()),
            ("SlurmdTimeout".into(), format!("{} sec", c.slurmd_timeout)),
            ("StateSaveLocation".into(), c.state_save_location.clone()),
            ("TaskProlog".into(), opt(&c.task_prolog)),
            ("TmpFS".into(), c.tmp_fs.clone()),
        ];
        for (k, v) in &c.raw {
            if !e.iter().any(|(x, _)| x.eq_ignore_ascii_case(k)) {
                e.push((k.clone(), v.clone()));
            }
        }
        e.sort_by_key(|a| a.0.to_ascii_lowercase());
        ConfigResponse {
            entries: e
                .into_iter()
                .map(|(key, value)| ConfigEntry { key, value })
                .collect(),
            config_file: self.config_path.display().to_string(),
            boot_time: self.start_time,
        }
    }

    /// Take the configuration as re-read from [`Ctld::config_path`] (the
    /// runtime reads the file); jobs and node states carry over.
    pub fn reconfigure(
        &mut self,
        loaded: Result<(Config, Vec<ConfWarning>), ConfError>,
    ) -> Result<ReconfigureResponse, Status> {
        let (cfg, warnings) = loaded.map_err(|e| Status::invalid_argument(e.to_string()))?;
        let mut cluster = Cluster::from_config(&cfg, self.now);
        for n in &mut cluster.nodes {
            if let Some(i) = self.cluster.node_idx(n.name()) {
                let old = &self.cluster.nodes[i];
                n.registered = old.registered;
                n.responding = old.responding;
                n.last_seen = old.last_seen;
                n.drain = old.drain;
                n.down = old.down;
                n.down_not_responding = old.down_not_responding;
                n.reason = old.reason.clone();
                n.reason_uid = old.reason_uid;
                n.reason_time = old.reason_time;
                n.agent_start_time = old.agent_start_time;
                n.boot_time = old.boot_time;
                n.os = old.os.clone();
                n.version = old.version.clone();
            }
        }
        for (id, j) in &self.jobs {
            if matches!(
                j.state(),
                JobState::Running | JobState::Completing | JobState::Suspended
            ) {
                cluster.allocate(*id, &crate::suspend::held_allocs(j.rt()), j.rt().share);
            }
        }
        self.cluster = cluster;
        self.cfg = Arc::new(cfg);
        self.effects.push(crate::effect::Effect::ForgetAgents);
        self.sched_needed = true;
        tracing::info!("reconfigured from {}", self.config_path.display());
        Ok(ReconfigureResponse {
            warnings: warnings.iter().map(|w| w.to_string()).collect(),
        })
    }
}
