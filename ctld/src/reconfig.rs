//! `scontrol show config` and `scontrol reconfigure`.

use std::sync::Arc;

use crate::refusal::Refusal;
use drover_conf::{ConfWarning, Config};
use drover_proto::{
    ConfigEntry, ConfigFilesResponse, ConfigResponse, JobState, ReconfigureResponse,
};

use crate::cluster::Cluster;
use crate::ctld::Ctld;

/// The configuration as re-read by the runtime (`runtime/config_files.rs`).
pub struct Reloaded {
    pub cfg: Config,
    pub warnings: Vec<ConfWarning>,
    /// What configless hosts are served from now on (None: not enabled).
    pub served: Option<Arc<ConfigFilesResponse>>,
}

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
        loaded: Result<Reloaded, Refusal>,
    ) -> Result<ReconfigureResponse, Refusal> {
        let Reloaded {
            cfg,
            warnings,
            served,
        } = loaded?;
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
                n.power = old.power;
                n.power_since = old.power_since;
                n.power_down_asap = old.power_down_asap;
                n.learned_addr = old.learned_addr.clone();
                n.agent_start_time = old.agent_start_time;
                n.boot_time = old.boot_time;
                n.os = old.os.clone();
                n.version = old.version.clone();
            }
        }
        for (id, j) in &self.jobs {
            if matches!(
                j.state(),
                JobState::Running
                    | JobState::Completing
                    | JobState::Suspended
                    | JobState::Configuring
            ) {
                cluster.allocate(*id, &crate::suspend::held_allocs(j.rt()), j.rt().share);
            }
        }
        let mut cfg = cfg;
        let mut notes = restart_needed(&self.cfg, &cfg, self.acct.is_some());
        keep_restart_only(&self.cfg, &mut cfg, self.acct.is_some());
        let start_acct = self.acct.is_none() && crate::acct::enabled(&cfg);
        if let Some(a) = &mut self.acct {
            a.enforce = crate::acct::enforce::Enforce::parse(&cfg.accounting_storage_enforce);
        }
        self.cluster = cluster;
        // Node and partition indexes may have moved.
        self.sched.runs.clear();
        self.cfg = Arc::new(cfg);
        // What a job shows may follow the configuration: restd's cache of
        // written jobs starts again.
        self.incarnation = crate::ctld::new_incarnation();
        // Partitions as slurm.conf says (Slurm's default ReconfigFlags).
        if !self.part_edits.is_empty() {
            self.part_edits.clear();
            self.log_part_edits();
        }
        // Node indices may have changed; resolved requests stay as they were
        // resolved (new defaults apply to new submissions and updates).
        self.refresh_requests();
        self.served_files = served;
        self.effects.push(crate::effect::Effect::ForgetAgents);
        self.sched_needed = true;
        if start_acct {
            // Accounting switched on: from now on, and every job known.
            self.effects.push(crate::effect::Effect::StartAccounting);
            notes.push(format!(
                "accounting starts now (droverdbd at {})",
                self.cfg.dbd_addr()
            ));
        }
        tracing::info!("reconfigured from {}", self.config_path.display());
        for n in &notes {
            tracing::warn!("reconfigure: {n}");
        }
        self.reconfigure_agents();
        Ok(ReconfigureResponse {
            warnings: warnings
                .iter()
                .map(|w| w.to_string())
                .chain(notes)
                .collect(),
        })
    }
}

/// The changes `scontrol reconfigure` cannot apply while the controller
/// runs (its listeners, its state and key files, its accounting link), one
/// line each naming the key, as Slurm documents them.
pub fn restart_needed(old: &Config, new: &Config, accounting_on: bool) -> Vec<String> {
    let hosts = |c: &Config| {
        c.slurmctld_host
            .iter()
            .map(|h| format!("{}({})", h.name, h.address()))
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut keys: Vec<(&str, String, String)> = vec![
        ("SlurmctldHost", hosts(old), hosts(new)),
        (
            "SlurmctldPort",
            old.slurmctld_port.to_string(),
            new.slurmctld_port.to_string(),
        ),
        (
            "StateSaveLocation",
            old.state_save_location.clone(),
            new.state_save_location.clone(),
        ),
        (
            "AuthKeyFile",
            old.auth_key_file.clone(),
            new.auth_key_file.clone(),
        ),
        ("AuthInfo", old.auth_socket(), new.auth_socket()),
        ("AuthType", old.auth_type.clone(), new.auth_type.clone()),
        (
            "ClusterName",
            old.cluster_name.clone(),
            new.cluster_name.clone(),
        ),
        ("SlurmUser", old.slurm_user.clone(), new.slurm_user.clone()),
    ];
    if accounting_on {
        keys.push((
            "AccountingStorageType",
            old.accounting_storage_type.clone(),
            new.accounting_storage_type.clone(),
        ));
        keys.push(("AccountingStorageHost", old.dbd_addr(), new.dbd_addr()));
    }
    keys.into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(k, a, b)| {
            format!("{k} changed ({a} -> {b}): it takes effect when droverctld restarts")
        })
        .collect()
}

/// Until the restart, the running controller goes on with the old values
/// of the keys [`restart_needed`] names (what `scontrol show config` shows).
pub fn keep_restart_only(old: &Config, new: &mut Config, accounting_on: bool) {
    new.slurmctld_host = old.slurmctld_host.clone();
    new.slurmctld_port = old.slurmctld_port;
    new.slurmctld_port_count = old.slurmctld_port_count;
    new.state_save_location = old.state_save_location.clone();
    new.auth_key_file = old.auth_key_file.clone();
    new.auth_info = old.auth_info.clone();
    new.auth_type = old.auth_type.clone();
    new.cluster_name = old.cluster_name.clone();
    new.slurm_user = old.slurm_user.clone();
    if accounting_on {
        new.accounting_storage_type = old.accounting_storage_type.clone();
        new.accounting_storage_host = old.accounting_storage_host.clone();
        new.accounting_storage_port = old.accounting_storage_port;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(extra: &str) -> Config {
        let text = format!(
            "ClusterName=c\nSlurmctldHost=h\nStateSaveLocation=/s\n{extra}\n\
             NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n"
        );
        drover_conf::slurmconf::parse_str(&text, "t.conf", &mut |_: &str| Err("none".to_string()))
            .unwrap()
            .0
    }

    #[test]
    fn restart_only_keys_are_named_and_kept() {
        let old = conf("");
        let mut new = conf("StateSaveLocation=/t\nSlurmctldPort=7000\nKillWait=9");
        let notes = restart_needed(&old, &new, false);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with("SlurmctldPort changed (6817 -> 7000)"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("StateSaveLocation changed (/s -> /t)"),
            "{notes:?}"
        );
        keep_restart_only(&old, &mut new, false);
        assert_eq!(new.state_save_location, "/s");
        assert_eq!(new.slurmctld_port, 6817);
        assert_eq!(new.kill_wait, 9, "live keys change");
        assert!(restart_needed(&old, &conf(""), false).is_empty());
    }

    #[test]
    fn accounting_link_changes_need_a_restart_only_once_it_runs() {
        let off = conf("");
        let on = conf("AccountingStorageType=accounting_storage/slurmdbd");
        assert!(restart_needed(&off, &on, false).is_empty());
        let notes = restart_needed(&on, &off, true);
        assert!(
            notes[0].starts_with("AccountingStorageType changed"),
            "{notes:?}"
        );
    }
}
