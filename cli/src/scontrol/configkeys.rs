//! Every key Slurm's `scontrol show config` lists (slurm 23.11,
//! `slurm_ctl_conf_2_key_pairs`), with the value Drover runs with when the
//! controller does not report the key itself (the key is unset and Drover
//! behaves as Slurm's default, or works one fixed way). Pure.

use drover_proto::ConfigEntry;

/// (key, value) for keys the controller may leave out.
pub const DEFAULTS: &[(&str, &str)] = &[
    ("AccountingStorageBackupHost", "(null)"),
    ("AccountingStorageEnforce", "none"),
    ("AccountingStorageHost", "localhost"),
    ("AccountingStorageExternalHost", "(null)"),
    ("AccountingStorageParameters", "(null)"),
    ("AccountingStoragePort", "0"),
    (
        "AccountingStorageTRES",
        "cpu,mem,energy,node,billing,fs/disk,vmem,pages",
    ),
    ("AccountingStorageUser", "root"),
    ("AccountingStoreFlags", "(null)"),
    ("AcctGatherEnergyType", "(null)"),
    ("AcctGatherFilesystemType", "(null)"),
    ("AcctGatherInterconnectType", "(null)"),
    ("AcctGatherNodeFreq", "0 sec"),
    ("AcctGatherProfileType", "(null)"),
    ("AllowSpecResourcesUsage", "No"),
    ("AuthAltTypes", "(null)"),
    ("AuthAltParameters", "(null)"),
    ("BatchStartTimeout", "10 sec"),
    ("BcastExclude", "/lib,/usr/lib,/lib64,/usr/lib64"),
    ("BcastParameters", "(null)"),
    ("BurstBufferType", "(null)"),
    ("CliFilterPlugins", "(null)"),
    ("CommunicationParameters", "(null)"),
    ("CompleteWait", "0 sec"),
    ("CoreSpecPlugin", "(null)"),
    ("CpuFreqDef", "Unknown"),
    ("CpuFreqGovernors", "OnDemand,Performance,UserSpace"),
    // Launch credentials are signed with the cluster key (HMAC).
    ("CredType", "cred/drover"),
    ("DebugFlags", "(null)"),
    ("DependencyParameters", "(null)"),
    ("DisableRootJobs", "No"),
    ("EioTimeout", "60"),
    ("EpilogMsgTime", "2000 usec"),
    ("EpilogSlurmctld", "(null)"),
    ("ExtSensorsType", "(null)"),
    ("ExtSensorsFreq", "0 sec"),
    ("FairShareDampeningFactor", "1"),
    ("FederationParameters", "(null)"),
    ("GetEnvTimeout", "2 sec"),
    ("GpuFreqDef", "(null)"),
    ("GroupUpdateForce", "1"),
    ("GroupUpdateTime", "600 sec"),
    ("HealthCheckInterval", "0 sec"),
    ("HealthCheckNodeState", "ANY"),
    ("HealthCheckProgram", "(null)"),
    ("InactiveLimit", "0 sec"),
    (
        "InteractiveStepOptions",
        "--interactive --preserve-env --pty $SHELL",
    ),
    ("JobAcctGatherFrequency", "30"),
    // Usage is read from the job's cgroup.
    ("JobAcctGatherType", "jobacct_gather/cgroup"),
    ("JobAcctGatherParams", "(null)"),
    ("JobCompHost", "localhost"),
    ("JobCompLoc", "(null)"),
    ("JobCompParams", "(null)"),
    ("JobCompPort", "0"),
    ("JobCompType", "(null)"),
    ("JobCompUser", "root"),
    ("JobContainerType", "(null)"),
    ("JobDefaults", "(null)"),
    ("JobFileAppend", "0"),
    // Only --requeue jobs are requeued unless JobRequeue=1 is set.
    ("JobRequeue", "0"),
    ("JobSubmitPlugins", "(null)"),
    ("KillOnBadExit", "0"),
    ("LaunchParameters", "(null)"),
    ("Licenses", "(null)"),
    ("LogTimeFormat", "iso8601_ms"),
    ("MailDomain", "(null)"),
    ("MailProg", "/bin/mail"),
    ("MaxBatchRequeue", "5"),
    ("MaxDBDMsgs", "20024"),
    ("MaxMemPerCPU", "UNLIMITED"),
    ("MaxNodeCount", "0"),
    ("MaxStepCount", "40000"),
    ("MaxTasksPerNode", "512"),
    ("MCSPlugin", "(null)"),
    ("MCSParameters", "(null)"),
    ("MessageTimeout", "10 sec"),
    ("MpiDefault", "none"),
    ("MpiParams", "(null)"),
    ("NodeFeaturesPlugins", "(null)"),
    ("PluginDir", "(null)"),
    ("PlugStackConfig", "(null)"),
    ("PowerParameters", "(null)"),
    ("PowerPlugin", "(null)"),
    ("PreemptMode", "OFF"),
    ("PreemptParameters", "(null)"),
    ("PreemptType", "preempt/none"),
    ("PreemptExemptTime", "00:00:00"),
    ("PrEpParameters", "(null)"),
    ("PrEpPlugins", "prep/script"),
    ("PriorityParameters", "(null)"),
    ("PrioritySiteFactorParameters", "(null)"),
    ("PrioritySiteFactorPlugin", "(null)"),
    ("PrivateData", "none"),
    // Jobs' processes are tracked in their cgroup.
    ("ProctrackType", "proctrack/cgroup"),
    ("PrologEpilogTimeout", "65534"),
    ("PrologSlurmctld", "(null)"),
    ("PrologFlags", "(null)"),
    ("PropagatePrioProcess", "0"),
    ("PropagateResourceLimits", "ALL"),
    ("PropagateResourceLimitsExcept", "(null)"),
    ("RebootProgram", "(null)"),
    ("ReconfigFlags", "(null)"),
    ("RequeueExit", "(null)"),
    ("RequeueExitHold", "(null)"),
    ("ResumeFailProgram", "(null)"),
    ("ResumeProgram", "(null)"),
    ("ResumeRate", "300 nodes/min"),
    ("ResumeTimeout", "60 sec"),
    ("ResvEpilog", "(null)"),
    ("ResvOverRun", "0 min"),
    ("ResvProlog", "(null)"),
    ("SchedulerParameters", "(null)"),
    ("SchedulerTimeSlice", "30 sec"),
    ("ScronParameters", "(null)"),
    ("SlurmctldAddr", "(null)"),
    ("SlurmctldDebug", "info"),
    ("SlurmctldLogFile", "(null)"),
    ("SlurmctldSyslogDebug", "(null)"),
    ("SlurmctldPrimaryOffProg", "(null)"),
    ("SlurmctldPrimaryOnProg", "(null)"),
    ("SlurmctldTimeout", "120 sec"),
    ("SlurmctldParameters", "(null)"),
    ("SlurmdDebug", "info"),
    ("SlurmdLogFile", "(null)"),
    ("SlurmdParameters", "(null)"),
    ("SlurmdPidFile", "/var/run/slurmd.pid"),
    ("SlurmdSyslogDebug", "(null)"),
    ("SlurmdUser", "root(0)"),
    ("SlurmSchedLogFile", "(null)"),
    ("SlurmSchedLogLevel", "0"),
    ("SlurmctldPidFile", "/var/run/slurmctld.pid"),
    ("SrunEpilog", "(null)"),
    ("SrunPortRange", "0-0"),
    ("SrunProlog", "(null)"),
    ("SuspendExcNodes", "(null)"),
    ("SuspendExcParts", "(null)"),
    ("SuspendExcStates", "(null)"),
    ("SuspendProgram", "(null)"),
    ("SuspendRate", "60 nodes/min"),
    ("SuspendTime", "INFINITE"),
    ("SuspendTimeout", "30 sec"),
    ("SwitchParameters", "(null)"),
    ("SwitchType", "(null)"),
    ("TaskEpilog", "(null)"),
    // CPU binding (--cpu-bind) and cgroup limits.
    ("TaskPlugin", "task/affinity,task/cgroup"),
    ("TaskPluginParam", "(null type)"),
    ("TCPTimeout", "2 sec"),
    ("TopologyParam", "(null)"),
    ("TopologyPlugin", "topology/default"),
    ("TrackWCKey", "No"),
    ("TreeWidth", "16"),
    ("UsePam", "No"),
    ("UnkillableStepProgram", "(null)"),
    ("UnkillableStepTimeout", "60 sec"),
    ("VSizeFactor", "0 percent"),
    ("WaitTime", "0 sec"),
    ("X11Parameters", "(null)"),
];

/// The controller's entries plus every Slurm key it left out (with
/// [`DEFAULTS`]), sorted as the controller sorts (by lower-case key).
pub fn complete(entries: &[ConfigEntry]) -> Vec<ConfigEntry> {
    let mut out = entries.to_vec();
    for (k, v) in DEFAULTS {
        if !out.iter().any(|e| e.key.eq_ignore_ascii_case(k)) {
            out.push(ConfigEntry {
                key: k.to_string(),
                value: v.to_string(),
            });
        }
    }
    out.sort_by_key(|e| e.key.to_ascii_lowercase());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_values_win_and_every_key_is_there() {
        let given = vec![ConfigEntry {
            key: "PrologFlags".into(),
            value: "Alloc,Contain".into(),
        }];
        let all = complete(&given);
        let get = |k: &str| all.iter().find(|e| e.key == k).map(|e| e.value.as_str());
        assert_eq!(get("PrologFlags"), Some("Alloc,Contain"));
        assert_eq!(get("ProctrackType"), Some("proctrack/cgroup"));
        assert_eq!(all.iter().filter(|e| e.key == "PrologFlags").count(), 1);
        assert_eq!(all.len(), DEFAULTS.len());
    }
}
