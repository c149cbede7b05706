//! General (non-entity) keys of slurm.conf: the key tables and how each
//! value is checked and stored in [`Config`].

use crate::error::{ConfError, ConfWarning};
use crate::lexer::Pair;
use crate::partitions;
use crate::slurmconf::{Config, CtldHost, MAX_ARRAY_SIZE_LIMIT};
use crate::units;
use crate::values::{self, canonical, err, warn, UnknownKeys};

/// General keys with a typed field.
pub(crate) const TYPED_KEYS: &[&str] = &[
    "ClusterName",
    "SlurmctldHost",
    "ControlMachine",
    "ControlAddr",
    "BackupController",
    "BackupAddr",
    "SlurmctldPort",
    "SlurmdPort",
    "SlurmUser",
    "SlurmdUser",
    "StateSaveLocation",
    "SlurmdSpoolDir",
    "AuthType",
    "AuthInfo",
    "AuthKeyFile",
    "TLSType",
    "TLSParameters",
    "FirstJobId",
    "MaxJobId",
    "MaxJobCount",
    "MaxArraySize",
    "MinJobAge",
    "SlurmdTimeout",
    "SlurmctldTimeout",
    "KillWait",
    "OverTimeLimit",
    "InactiveLimit",
    "MessageTimeout",
    "BatchStartTimeout",
    "UnkillableStepTimeout",
    "ReturnToService",
    "SchedulerType",
    "SchedulerParameters",
    "SelectType",
    "SelectTypeParameters",
    "PriorityType",
    "PriorityWeightAge",
    "PriorityWeightAssoc",
    "PriorityWeightFairshare",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightQOS",
    "PriorityWeightTRES",
    "PriorityMaxAge",
    "PriorityDecayHalfLife",
    "PriorityCalcPeriod",
    "PriorityFavorSmall",
    "PriorityFlags",
    "PriorityUsageResetPeriod",
    "PreemptType",
    "PreemptMode",
    "DefMemPerCPU",
    "DefMemPerNode",
    "MaxMemPerCPU",
    "MaxMemPerNode",
    "GresTypes",
    "ProctrackType",
    "TaskPlugin",
    "JobAcctGatherType",
    "JobAcctGatherFrequency",
    "Prolog",
    "Epilog",
    "TaskProlog",
    "TaskEpilog",
    "PrologFlags",
    "AccountingStorageType",
    "AccountingStorageHost",
    "AccountingStoragePort",
    "AccountingStorageUser",
    "AccountingStoragePass",
    "AccountingStorageLoc",
    "AccountingStorageEnforce",
    "AccountingStorageTRES",
    "JobCompType",
    "PrivateData",
    "SlurmctldLogFile",
    "SlurmdLogFile",
    "SlurmctldDebug",
    "SlurmdDebug",
    "MpiDefault",
    "TmpFS",
    "EnforcePartLimits",
    "KillOnBadExit",
    "PropagateResourceLimits",
    "SwitchType",
    "MailProg",
    "HealthCheckProgram",
    "HealthCheckInterval",
    "TreeWidth",
    "MaxTasksPerNode",
    "MaxStepCount",
    "JobRequeue",
];

/// Slurm keys that are accepted and kept in `raw` only (no warning).
pub(crate) const RAW_ONLY_KEYS: &[&str] = &[
    "AccountingStorageBackupHost",
    "AccountingStorageExternalHost",
    "AccountingStorageParameters",
    "AccountingStoreFlags",
    "AcctGatherEnergyType",
    "AcctGatherFilesystemType",
    "AcctGatherInterconnectType",
    "AcctGatherNodeFreq",
    "AcctGatherProfileType",
    "AllowSpecResourcesUsage",
    "AuthAltParameters",
    "AuthAltTypes",
    "BurstBufferType",
    "CliFilterPlugins",
    "CommunicationParameters",
    "CompleteWait",
    "CpuFreqDef",
    "CpuFreqGovernors",
    "CredType",
    "DebugFlags",
    "DefCpuPerGPU",
    "DefMemPerGPU",
    "DependencyParameters",
    "DisableRootJobs",
    "EioTimeout",
    "EpilogMsgTime",
    "EpilogSlurmctld",
    "FairShareDampeningFactor",
    "FederationParameters",
    "GetEnvTimeout",
    "GpuFreqDef",
    "GroupUpdateForce",
    "GroupUpdateTime",
    "HashPlugin",
    "HealthCheckNodeState",
    "InteractiveStepOptions",
    "JobAcctGatherParams",
    "JobCompHost",
    "JobCompLoc",
    "JobCompParams",
    "JobCompPass",
    "JobCompPort",
    "JobCompUser",
    "JobContainerType",
    "JobFileAppend",
    "JobSubmitPlugins",
    "KeepAliveTime",
    "LaunchParameters",
    "LaunchType",
    "Licenses",
    "LogTimeFormat",
    "MailDomain",
    "MaxBatchRequeue",
    "MaxDBDMsgs",
    "MaxNodeCount",
    "MCSParameters",
    "MCSPlugin",
    "MpiParams",
    "NodeFeaturesPlugins",
    "PluginDir",
    "PlugStackConfig",
    "PowerParameters",
    "PowerPlugin",
    "PreemptExemptTime",
    "PrEpParameters",
    "PrEpPlugins",
    "PriorityParameters",
    "PrioritySiteFactorParameters",
    "PrioritySiteFactorPlugin",
    "PrologEpilogTimeout",
    "PrologSlurmctld",
    "PrologTimeout",
    "RebootProgram",
    "ReconfigFlags",
    "RequeueExit",
    "RequeueExitHold",
    "ResvEpilog",
    "ResvOverRun",
    "ResvProlog",
    "RoutePlugin",
    "SchedulerTimeSlice",
    "ScronParameters",
    "SlurmctldAddr",
    "SlurmctldParameters",
    "SlurmctldPidFile",
    "SlurmctldPrimaryOffProg",
    "SlurmctldPrimaryOnProg",
    "SlurmctldSyslogDebug",
    "SlurmdParameters",
    "SlurmdPidFile",
    "SlurmdSyslogDebug",
    "SlurmSchedLogFile",
    "SlurmSchedLogLevel",
    "SrunEpilog",
    "SrunPortRange",
    "SrunProlog",
    "SwitchParameters",
    "TaskPluginParam",
    "TCPTimeout",
    "TopologyParam",
    "TopologyPlugin",
    "TrackWCKey",
    "UnkillableStepProgram",
    "UsePAM",
    "VSizeFactor",
    "WaitTime",
    "X11Parameters",
];

const DEBUG_LEVELS: &[&str] = &[
    "quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5",
];

/// Parser state for general keys that need more than one assignment.
#[derive(Default)]
pub(crate) struct General {
    control_machine: Option<Pair>,
    control_addr: Option<String>,
    backup_controller: Option<String>,
    backup_addr: Option<String>,
    last_def_mem: Option<&'static str>,
    last_max_mem: Option<&'static str>,
    /// Power keys naming nodes or partitions, checked once those are known.
    pub(crate) power_refs: Vec<(&'static str, Pair)>,
}

fn parse_ctld_host(v: &str) -> Result<CtldHost, String> {
    let t = v.trim();
    let (name, addr) = match t.split_once('(') {
        None => (t, None),
        Some((n, rest)) => {
            let a = rest
                .strip_suffix(')')
                .ok_or_else(|| format!("invalid host '{t}' (expected host or host(addr))"))?;
            if a.trim().is_empty() {
                return Err(format!("empty address in '{t}'"));
            }
            (n, Some(a.trim().to_string()))
        }
    };
    let name = name.trim();
    if name.is_empty() || name.contains(['(', ')', ',']) {
        return Err(format!("invalid host '{t}'"));
    }
    Ok(CtldHost {
        name: name.to_string(),
        addr,
    })
}

/// `a=1,b,c=x` -> [(a, Some(1)), (b, None), (c, Some(x))].
pub(crate) fn parse_kv_list(v: &str) -> Vec<(String, Option<String>)> {
    values::parse_list(v)
        .into_iter()
        .map(|item| match item.split_once('=') {
            Some((k, val)) => (k.trim().to_string(), Some(val.trim().to_string())),
            None => (item, None),
        })
        .collect()
}

pub(crate) fn apply_general(
    cfg: &mut Config,
    g: &mut General,
    p: &Pair,
    unknown: &mut UnknownKeys,
    warnings: &mut Vec<ConfWarning>,
) -> Result<(), ConfError> {
    if let Some(key) = canonical(crate::power::KEYS, &p.key) {
        cfg.raw.push((key.to_string(), p.value.clone()));
        crate::power::apply(&mut cfg.power, key, p)?;
        if matches!(key, "SuspendExcNodes" | "SuspendExcParts") {
            g.power_refs.retain(|(k, _)| *k != key);
            g.power_refs.push((key, p.clone()));
        }
        return Ok(());
    }
    let Some(key) = canonical(TYPED_KEYS, &p.key) else {
        match canonical(RAW_ONLY_KEYS, &p.key) {
            Some(k) => cfg.raw.push((k.to_string(), p.value.clone())),
            None => {
                unknown.note("", p, warnings);
                cfg.raw.push((p.key.clone(), p.value.clone()));
            }
        }
        return Ok(());
    };
    cfg.raw.push((key.to_string(), p.value.clone()));
    let v = p.value.trim();
    let e = |m: String| err(p, key, m);
    let u16v = || values::parse_u16(v).map_err(e);
    let u32v = || values::parse_u32(v).map_err(e);
    let u64v = || values::parse_u64(v).map_err(e);
    let memv = || values::parse_mem_limit(v).map_err(e);
    let nonempty = || {
        if v.is_empty() {
            Err(e("empty value".to_string()))
        } else {
            Ok(v.to_string())
        }
    };
    let mut exclusive = |last: &mut Option<&'static str>, other: &'static str| {
        if *last == Some(other) {
            warnings.push(warn(
                p,
                key,
                format!("{key} and {other} are mutually exclusive; using {key}"),
            ));
        }
        *last = Some(key);
    };
    match key {
        "ClusterName" => {
            let name = nonempty()?;
            let lower = name.to_ascii_lowercase();
            if lower != name {
                warnings.push(warn(p, key, format!("converted to lower case: '{lower}'")));
            }
            cfg.cluster_name = lower;
        }
        "SlurmctldHost" => cfg.slurmctld_host.push(parse_ctld_host(v).map_err(e)?),
        "ControlMachine" => {
            nonempty()?;
            g.control_machine = Some(p.clone());
        }
        "ControlAddr" => g.control_addr = values::opt_string(v),
        "BackupController" => g.backup_controller = values::opt_string(v),
        "BackupAddr" => g.backup_addr = values::opt_string(v),
        "SlurmctldPort" => {
            let (first, last) = v.split_once('-').unwrap_or((v, v));
            let first = values::parse_u16(first).map_err(e)?;
            let last = values::parse_u16(last).map_err(e)?;
            if last < first {
                return Err(e(format!("invalid port range '{v}'")));
            }
            cfg.slurmctld_port = first;
            cfg.slurmctld_port_count = last - first + 1;
        }
        "SlurmdPort" => cfg.slurmd_port = u16v()?,
        "SlurmUser" => cfg.slurm_user = nonempty()?,
        "SlurmdUser" => cfg.slurmd_user = nonempty()?,
        "StateSaveLocation" => cfg.state_save_location = nonempty()?,
        "SlurmdSpoolDir" => cfg.slurmd_spool_dir = nonempty()?,
        "AuthType" => cfg.auth_type = nonempty()?,
        "AuthInfo" => {
            cfg.auth_info = parse_kv_list(v)
                .into_iter()
                .map(|(k, val)| (k, val.unwrap_or_default()))
                .collect();
            for (k, val) in &cfg.auth_info {
                for key in ["ttl", "skew"] {
                    if k.eq_ignore_ascii_case(key) {
                        values::parse_u64(val).map_err(|m| e(format!("{key}: {m}")))?;
                    }
                }
            }
        }
        "AuthKeyFile" => cfg.auth_key_file = nonempty()?,
        "TLSType" => cfg.tls.mode = crate::tls::parse_type(v).map_err(e)?,
        "TLSParameters" => crate::tls::parse_parameters(v, &mut cfg.tls).map_err(e)?,
        "FirstJobId" => cfg.first_job_id = u32v()?,
        "MaxJobId" => cfg.max_job_id = u32v()?,
        "MaxJobCount" => cfg.max_job_count = u32v()?,
        "MaxArraySize" => {
            let n = u32v()?;
            if n > MAX_ARRAY_SIZE_LIMIT {
                return Err(e(format!(
                    "MaxArraySize value ({n}) is greater than {MAX_ARRAY_SIZE_LIMIT}"
                )));
            }
            cfg.max_array_size = n;
        }
        "MinJobAge" => cfg.min_job_age = u64v()?,
        "SlurmdTimeout" => cfg.slurmd_timeout = u64v()?,
        "SlurmctldTimeout" => cfg.slurmctld_timeout = u64v()?,
        "KillWait" => cfg.kill_wait = u64v()?,
        "OverTimeLimit" => {
            cfg.over_time_limit_min = values::parse_u32_or_unlimited(v)
                .map_err(e)?
                .unwrap_or(u32::MAX)
        }
        "InactiveLimit" => cfg.inactive_limit = u64v()?,
        "MessageTimeout" => cfg.message_timeout = u64v()?,
        "BatchStartTimeout" => cfg.batch_start_timeout = u64v()?,
        "UnkillableStepTimeout" => cfg.unkillable_step_timeout = u64v()?,
        "ReturnToService" => {
            let n = u32v()?;
            if n > 2 {
                return Err(e(format!("invalid value '{v}' (0, 1 or 2)")));
            }
            cfg.return_to_service = n;
        }
        "SchedulerType" => cfg.scheduler_type = nonempty()?,
        "SchedulerParameters" => {
            let l = parse_kv_list(v);
            crate::sched::SchedParams::from_list(&l).map_err(e)?;
            cfg.scheduler_parameters = l;
        }
        "SelectType" => cfg.select_type = nonempty()?,
        "SelectTypeParameters" => cfg.select_type_parameters = values::parse_list(v),
        "PriorityType" => cfg.priority_type = nonempty()?,
        "PriorityWeightAge"
        | "PriorityWeightAssoc"
        | "PriorityWeightFairshare"
        | "PriorityWeightJobSize"
        | "PriorityWeightPartition"
        | "PriorityWeightQOS" => {
            u32v()?;
            set_priority(cfg, key, v);
        }
        "PriorityMaxAge" | "PriorityDecayHalfLife" | "PriorityCalcPeriod" => {
            units::parse_duration(v).map_err(e)?;
            set_priority(cfg, key, v);
        }
        "PriorityFavorSmall" => {
            values::parse_bool(v).map_err(e)?;
            set_priority(cfg, key, v);
        }
        "PriorityWeightTRES" | "PriorityFlags" | "PriorityUsageResetPeriod" => {
            set_priority(cfg, key, v)
        }
        "PreemptType" => cfg.preempt_type = nonempty()?,
        "PreemptMode" => cfg.preempt_mode = partitions::parse_preempt_mode(v).map_err(e)?,
        "DefMemPerCPU" => {
            let m = memv()?;
            exclusive(&mut g.last_def_mem, "DefMemPerNode");
            cfg.def_mem_per_cpu = m;
            cfg.def_mem_per_node = None;
        }
        "DefMemPerNode" => {
            let m = memv()?;
            exclusive(&mut g.last_def_mem, "DefMemPerCPU");
            cfg.def_mem_per_node = m;
            cfg.def_mem_per_cpu = None;
        }
        "MaxMemPerCPU" => {
            let m = memv()?;
            exclusive(&mut g.last_max_mem, "MaxMemPerNode");
            cfg.max_mem_per_cpu = m;
            cfg.max_mem_per_node = None;
        }
        "MaxMemPerNode" => {
            let m = memv()?;
            exclusive(&mut g.last_max_mem, "MaxMemPerCPU");
            cfg.max_mem_per_node = m;
            cfg.max_mem_per_cpu = None;
        }
        "GresTypes" => cfg.gres_types = values::parse_list(v),
        "ProctrackType" => cfg.proctrack_type = nonempty()?,
        "TaskPlugin" => cfg.task_plugin = values::parse_list(v),
        "JobAcctGatherType" => cfg.job_acct_gather_type = nonempty()?,
        "JobAcctGatherFrequency" => cfg.job_acct_gather_frequency = nonempty()?,
        "Prolog" => cfg.prolog = values::opt_string(v),
        "Epilog" => cfg.epilog = values::opt_string(v),
        "TaskProlog" => cfg.task_prolog = values::opt_string(v),
        "TaskEpilog" => cfg.task_epilog = values::opt_string(v),
        "PrologFlags" => cfg.prolog_flags = values::parse_list(v),
        "AccountingStorageType" => cfg.accounting_storage_type = nonempty()?,
        "AccountingStorageHost" => cfg.accounting_storage_host = values::opt_string(v),
        "AccountingStoragePort" => cfg.accounting_storage_port = u16v()?,
        "AccountingStorageUser" => cfg.accounting_storage_user = values::opt_string(v),
        "AccountingStoragePass" => cfg.accounting_storage_pass = values::opt_string(v),
        "AccountingStorageLoc" => cfg.accounting_storage_loc = values::opt_string(v),
        "AccountingStorageEnforce" => cfg.accounting_storage_enforce = values::parse_list(v),
        "AccountingStorageTRES" => cfg.accounting_storage_tres = values::parse_list(v),
        "JobCompType" => cfg.job_comp_type = nonempty()?,
        "PrivateData" => {
            cfg.private_data = crate::private::check(&values::parse_list(v)).map_err(e)?
        }
        "SlurmctldLogFile" => cfg.slurmctld_log_file = values::opt_string(v),
        "SlurmdLogFile" => cfg.slurmd_log_file = values::opt_string(v),
        "SlurmctldDebug" | "SlurmdDebug" => {
            let lower = v.to_ascii_lowercase();
            let ok = DEBUG_LEVELS.contains(&lower.as_str())
                || (lower.len() == 1 && lower.bytes().all(|b| b.is_ascii_digit()));
            if !ok {
                return Err(e(format!("invalid debug level '{v}'")));
            }
            if key == "SlurmctldDebug" {
                cfg.slurmctld_debug = lower;
            } else {
                cfg.slurmd_debug = lower;
            }
        }
        "MpiDefault" => cfg.mpi_default = nonempty()?,
        "TmpFS" => cfg.tmp_fs = nonempty()?,
        "EnforcePartLimits" => {
            let up = v.to_ascii_uppercase();
            if !["ALL", "ANY", "NO", "YES"].contains(&up.as_str()) {
                return Err(e(format!("invalid value '{v}' (ALL, ANY, NO or YES)")));
            }
            cfg.enforce_part_limits = up;
        }
        "KillOnBadExit" => cfg.kill_on_bad_exit = u32v()?,
        "PropagateResourceLimits" => cfg.propagate_resource_limits = nonempty()?,
        "SwitchType" => cfg.switch_type = nonempty()?,
        "MailProg" => cfg.mail_prog = nonempty()?,
        "HealthCheckProgram" => cfg.health_check_program = values::opt_string(v),
        "HealthCheckInterval" => cfg.health_check_interval = u64v()?,
        "TreeWidth" => {
            let n = u32v()?;
            if n == 0 {
                return Err(e("must be at least 1".to_string()));
            }
            cfg.tree_width = n;
        }
        "MaxTasksPerNode" => cfg.max_tasks_per_node = u32v()?,
        "MaxStepCount" => cfg.max_step_count = u32v()?,
        "JobRequeue" => cfg.job_requeue = u32v()?,
        _ => {}
    }
    Ok(())
}

fn set_priority(cfg: &mut Config, key: &str, v: &str) {
    cfg.priority_params.retain(|(k, _)| k != key);
    cfg.priority_params.push((key.to_string(), v.to_string()));
}

pub(crate) fn finish_general(
    cfg: &mut Config,
    g: General,
    file: &str,
    warnings: &mut Vec<ConfWarning>,
) {
    if let Some(cm) = g.control_machine {
        if cfg.slurmctld_host.is_empty() {
            cfg.slurmctld_host.push(CtldHost {
                name: cm.value.trim().to_string(),
                addr: g.control_addr,
            });
            if let Some(b) = g.backup_controller {
                cfg.slurmctld_host.push(CtldHost {
                    name: b,
                    addr: g.backup_addr,
                });
            }
        } else {
            warnings.push(warn(
                &cm,
                "ControlMachine",
                "ignored because SlurmctldHost is set",
            ));
        }
    }
    if cfg.slurmctld_host.is_empty() {
        warnings.push(ConfWarning::new(
            file,
            0,
            "SlurmctldHost",
            "not set; using localhost",
        ));
    }
}
