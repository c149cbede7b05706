//! Unit tests of the slurm.conf parser: general keys, includes, errors
//! (nodes and partitions: slurmconf_entity_tests.rs).

use super::*;

const EXAMPLE: &str = "\
ClusterName=lab
SlurmctldHost=localhost
GresTypes=gpu
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
NodeName=lab-cpu-[01-02] CPUs=16 RealMemory=64000
NodeName=lab-gpu-01 RealMemory=122880 Sockets=2 CoresPerSocket=12 ThreadsPerCore=2 Feature=rtx4080 Gres=gpu:rtx4080:4
PartitionName=ml-cpu Nodes=lab-cpu-[01,02] Default=YES MaxTime=5-00:00:00 DefaultTime=04:00:00 State=UP
PartitionName=ml-gpu Nodes=lab-gpu-01 MaxTime=5-00:00:00 DefaultTime=04:00:00 State=UP AllowGroups=ml-users
";

fn no_inc(p: &str) -> Result<(String, String), String> {
    Err(format!("no include {p}"))
}

fn parse(text: &str) -> (Config, Vec<ConfWarning>) {
    parse_str(text, "test.conf", &mut no_inc).unwrap_or_else(|e| panic!("{e}"))
}

fn parse_err(text: &str) -> ConfError {
    match parse_str(text, "test.conf", &mut no_inc) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// Error at `line` naming `key`, and the Display has the documented shape.
fn assert_err(text: &str, line: usize, key: &str) -> ConfError {
    let e = parse_err(text);
    assert_eq!((e.line, e.key.as_str()), (line, key), "{text}\n=> {e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("test.conf:{line}: {key}: ")),
        "{shown}"
    );
    e
}

const HOST: &str = "SlurmctldHost=ctl\n";

/// Node, partition, nodeset and frontend lines.
#[path = "slurmconf_entity_tests.rs"]
mod entities;

#[test]
fn example_config() {
    let (c, w) = parse(EXAMPLE);
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.cluster_name, "lab");
    assert_eq!(
        c.slurmctld_host,
        vec![CtldHost {
            name: "localhost".into(),
            addr: None
        }]
    );
    assert_eq!(c.gres_types, vec!["gpu"]);
    assert_eq!(c.scheduler_type, "sched/backfill");
    assert_eq!(c.select_type, "select/cons_tres");
    assert_eq!(c.select_type_parameters, vec!["CR_CPU_Memory"]);

    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["lab-cpu-01", "lab-cpu-02", "lab-gpu-01"]);
    let cpu = c.node("lab-cpu-02").unwrap();
    assert_eq!(cpu.cpus, 16);
    assert_eq!(
        (cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core),
        (16, 1, 1)
    );
    assert_eq!(cpu.real_memory, 64000);
    assert_eq!(cpu.state, "UNKNOWN");
    assert_eq!(cpu.node_addr, "lab-cpu-02");
    assert_eq!(cpu.node_hostname, "lab-cpu-02");
    let gpu = c.node("lab-gpu-01").unwrap();
    assert_eq!(gpu.cpus, 48);
    assert_eq!(
        (gpu.sockets, gpu.cores_per_socket, gpu.threads_per_core),
        (2, 12, 2)
    );
    assert_eq!(gpu.real_memory, 122880);
    assert_eq!(gpu.features, vec!["rtx4080"]);
    assert_eq!(gpu.active_features, vec!["rtx4080"]);
    assert_eq!(
        gpu.gres,
        vec![GresSpec {
            name: "gpu".into(),
            r#type: Some("rtx4080".into()),
            count: 4
        }]
    );

    assert_eq!(c.partitions.len(), 2);
    let cpu_p = c.partition("ml-cpu").unwrap();
    assert_eq!(cpu_p.nodes, vec!["lab-cpu-01", "lab-cpu-02"]);
    assert!(cpu_p.default);
    assert_eq!(cpu_p.max_time_min, Some(5 * 24 * 60));
    assert_eq!(cpu_p.default_time_min, Some(240));
    assert_eq!(cpu_p.state, "UP");
    assert_eq!(cpu_p.allow_groups, None);
    let gpu_p = c.partition("ml-gpu").unwrap();
    assert_eq!(gpu_p.nodes, vec!["lab-gpu-01"]);
    assert!(!gpu_p.default);
    assert_eq!(gpu_p.allow_groups, Some(vec!["ml-users".to_string()]));
    assert_eq!(
        c.default_partition().map(|p| p.name.as_str()),
        Some("ml-cpu")
    );
    assert!(c.partition("nope").is_none());
    assert!(c.node("nope").is_none());
    assert_eq!(c.partition_nodes("ml-gpu").len(), 1);

    assert_eq!(c.get("clustername"), Some("lab"));
    assert_eq!(
        c.raw.first(),
        Some(&("ClusterName".to_string(), "lab".to_string()))
    );
    assert_eq!(c.raw.len(), 6);
}

#[test]
fn defaults() {
    let c = Config::default();
    assert_eq!(c.cluster_name, "cluster");
    assert_eq!(c.slurmctld_port, 6817);
    assert_eq!(c.slurmd_port, 6818);
    assert_eq!(c.slurm_user, "root");
    assert_eq!(c.state_save_location, "/var/spool/drover/ctld");
    assert_eq!(c.slurmd_spool_dir, "/var/spool/drover/d");
    assert_eq!(c.auth_type, "auth/drover");
    assert_eq!(c.auth_socket(), "/run/drover/auth.sock");
    assert_eq!(c.auth_ttl_secs(), 300);
    assert_eq!(c.auth_skew_secs(), 60);
    assert_eq!(c.auth_key_file, "/etc/drover/drover.key");
    assert_eq!(c.first_job_id, 1);
    assert_eq!(c.max_job_id, 0x03ff0000);
    assert_eq!(c.max_job_count, 10000);
    assert_eq!(c.max_array_size, 1001);
    assert_eq!(c.min_job_age, 300);
    assert_eq!(c.slurmd_timeout, 300);
    assert_eq!(c.slurmctld_timeout, 120);
    assert_eq!(c.kill_wait, 30);
    assert_eq!(c.over_time_limit_min, 0);
    assert_eq!(c.message_timeout, 10);
    assert_eq!(c.batch_start_timeout, 10);
    assert_eq!(c.unkillable_step_timeout, 60);
    assert_eq!(c.accounting_storage_type, "accounting_storage/none");
    assert_eq!(c.accounting_storage_port, 6819);
    assert_eq!(c.mpi_default, "none");
    assert_eq!(c.tmp_fs, "/tmp");
    assert_eq!(c.enforce_part_limits, "NO");
    assert_eq!(c.max_tasks_per_node, 512);
    assert_eq!(c.max_step_count, 40000);
    assert_eq!(c.job_requeue, 1);
    assert_eq!(c.control_host(), "localhost");
    assert_eq!(c.control_addr(), "localhost");
    assert!(c.default_partition().is_none());
}

#[test]
fn empty_config_warns_about_missing_controller() {
    let (c, w) = parse("# nothing\n\n");
    assert_eq!(c.nodes.len(), 0);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].key, "SlurmctldHost");
    assert_eq!(w[0].line, 0);
}

#[test]
fn keys_are_case_insensitive() {
    let (c, w) = parse("slurmctldhost=c\nCLUSTERNAME=x\nslurmdport=7000\nnodename=n1 cpus=2\npartitionname=p nodes=n1 default=yes");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.cluster_name, "x");
    assert_eq!(c.slurmd_port, 7000);
    assert_eq!(c.node("n1").unwrap().cpus, 2);
    assert!(c.partition("p").unwrap().default);
    assert_eq!(c.get("SlurmdPort"), Some("7000"));
    assert_eq!(c.raw[2].0, "SlurmdPort");
}

#[test]
fn comments_quotes_and_continuation() {
    let (c, w) = parse(
        "SlurmctldHost=ctl # the controller\n\
         NodeName=n[1-2] \\\n   CPUs=8 \\\n   RealMemory=4G # big\n\
         DownNodes=n2 Reason=\"disk # 3 broken\" State=DRAIN\n",
    );
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.control_host(), "ctl");
    let n2 = c.node("n2").unwrap();
    assert_eq!((n2.cpus, n2.real_memory), (8, 4096));
    assert_eq!(n2.state, "DRAIN");
    assert_eq!(n2.reason.as_deref(), Some("disk # 3 broken"));
    assert_eq!(c.node("n1").unwrap().state, "UNKNOWN");
}

#[test]
fn several_pairs_per_line_and_spaces_around_equals() {
    let (c, _) = parse("ClusterName = big  SlurmctldHost=h1(10.0.0.1) SlurmctldHost=h2\n");
    assert_eq!(c.cluster_name, "big");
    assert_eq!(c.slurmctld_host.len(), 2);
    assert_eq!(c.slurmctld_host[0].addr.as_deref(), Some("10.0.0.1"));
    assert_eq!(c.control_addr(), "10.0.0.1");
    assert_eq!(c.slurmctld_host[1].name, "h2");
}

#[test]
fn legacy_control_machine() {
    let (c, w) = parse("ControlMachine=old ControlAddr=1.2.3.4 BackupController=bk\n");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.control_host(), "old");
    assert_eq!(c.control_addr(), "1.2.3.4");
    assert_eq!(c.slurmctld_host[1].name, "bk");
    let (c, w) = parse("SlurmctldHost=new\nControlMachine=old\n");
    assert_eq!(c.control_host(), "new");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].key, "ControlMachine");
}

#[test]
fn typed_general_keys() {
    let (c, w) = parse(
        "SlurmctldHost=c\n\
         SlurmctldPort=6817-6818 SlurmdPort=6820 SlurmUser=slurm SlurmdUser=root\n\
         StateSaveLocation=/s SlurmdSpoolDir=/d AuthType=auth/munge AuthKeyFile=/k\n\
         AuthInfo=socket=/run/x.sock,ttl=60,skew=5\n\
         FirstJobId=100 MaxJobId=5000 MaxJobCount=20 MaxArraySize=11 MinJobAge=5\n\
         SlurmdTimeout=1 SlurmctldTimeout=2 KillWait=3 OverTimeLimit=UNLIMITED InactiveLimit=4\n\
         MessageTimeout=5 BatchStartTimeout=6 UnkillableStepTimeout=7 ReturnToService=2\n\
         SchedulerParameters=bf_interval=30,defer,bf_window=1440\n\
         PriorityType=priority/multifactor PriorityWeightAge=1000 PriorityMaxAge=7-0\n\
         PriorityDecayHalfLife=14-0 PriorityFavorSmall=YES PriorityFlags=SMALL_RELATIVE_TO_TIME\n\
         PriorityWeightTRES=CPU=1000,Mem=2000\n\
         PreemptType=preempt/qos PreemptMode=suspend,gang\n\
         DefMemPerCPU=2G MaxMemPerNode=UNLIMITED\n\
         ProctrackType=proctrack/linuxproc TaskPlugin=task/affinity,task/cgroup\n\
         JobAcctGatherType=jobacct_gather/linux JobAcctGatherFrequency=task=15\n\
         Prolog=/p Epilog=/e TaskProlog=/tp TaskEpilog=/te PrologFlags=Alloc,Contain\n\
         AccountingStorageType=accounting_storage/slurmdbd AccountingStorageHost=db\n\
         AccountingStoragePort=7031 AccountingStorageUser=u AccountingStoragePass=/pw\n\
         AccountingStorageLoc=/loc AccountingStorageEnforce=associations,limits\n\
         AccountingStorageTRES=gres/gpu JobCompType=jobcomp/filetxt PrivateData=jobs,usage\n\
         SlurmctldLogFile=/l1 SlurmdLogFile=/l2 SlurmctldDebug=DEBUG2 SlurmdDebug=3\n\
         MpiDefault=pmix TmpFS=/scratch EnforcePartLimits=all KillOnBadExit=1\n\
         PropagateResourceLimits=NONE SwitchType=switch/none MailProg=/usr/bin/mail\n\
         HealthCheckProgram=/hc HealthCheckInterval=600 TreeWidth=50 MaxTasksPerNode=128\n\
         MaxStepCount=100 JobRequeue=0\n",
    );
    assert!(w.is_empty(), "{w:?}");
    assert_eq!((c.slurmctld_port, c.slurmctld_port_count), (6817, 2));
    assert_eq!(c.slurmd_port, 6820);
    assert_eq!(c.slurm_user, "slurm");
    assert_eq!(c.state_save_location, "/s");
    assert_eq!(c.slurmd_spool_dir, "/d");
    assert_eq!(c.auth_type, "auth/munge");
    assert_eq!(c.auth_key_file, "/k");
    assert_eq!(c.auth_socket(), "/run/x.sock");
    assert_eq!(c.auth_ttl_secs(), 60);
    assert_eq!(c.auth_skew_secs(), 5);
    assert_eq!(
        (
            c.first_job_id,
            c.max_job_id,
            c.max_job_count,
            c.max_array_size
        ),
        (100, 5000, 20, 11)
    );
    assert_eq!(c.min_job_age, 5);
    assert_eq!(
        (c.slurmd_timeout, c.slurmctld_timeout, c.kill_wait),
        (1, 2, 3)
    );
    assert_eq!(c.over_time_limit_min, u32::MAX);
    assert_eq!(c.inactive_limit, 4);
    assert_eq!(
        (
            c.message_timeout,
            c.batch_start_timeout,
            c.unkillable_step_timeout
        ),
        (5, 6, 7)
    );
    assert_eq!(c.return_to_service, 2);
    assert_eq!(
        c.scheduler_parameters,
        vec![
            ("bf_interval".to_string(), Some("30".to_string())),
            ("defer".to_string(), None),
            ("bf_window".to_string(), Some("1440".to_string())),
        ]
    );
    assert_eq!(c.scheduler_param("DEFER"), Some(None));
    assert_eq!(c.scheduler_param("bf_window"), Some(Some("1440")));
    assert_eq!(c.scheduler_param("x"), None);
    assert_eq!(c.priority_type, "priority/multifactor");
    assert_eq!(c.priority_param("priorityweightage"), Some("1000"));
    assert_eq!(c.priority_param("PriorityMaxAge"), Some("7-0"));
    assert_eq!(
        c.priority_param("PriorityWeightTRES"),
        Some("CPU=1000,Mem=2000")
    );
    assert_eq!(c.priority_params.len(), 6);
    assert_eq!(c.preempt_type, "preempt/qos");
    assert_eq!(c.preempt_mode, "SUSPEND,GANG");
    assert_eq!(c.def_mem_per_cpu, Some(2048));
    assert_eq!(c.max_mem_per_node, None);
    assert_eq!(c.proctrack_type, "proctrack/linuxproc");
    assert_eq!(c.task_plugin, vec!["task/affinity", "task/cgroup"]);
    assert_eq!(c.job_acct_gather_type, "jobacct_gather/linux");
    assert_eq!(c.job_acct_gather_frequency, "task=15");
    assert_eq!(c.prolog.as_deref(), Some("/p"));
    assert_eq!(c.epilog.as_deref(), Some("/e"));
    assert_eq!(c.task_prolog.as_deref(), Some("/tp"));
    assert_eq!(c.task_epilog.as_deref(), Some("/te"));
    assert_eq!(c.prolog_flags, vec!["Alloc", "Contain"]);
    assert_eq!(c.accounting_storage_type, "accounting_storage/slurmdbd");
    assert_eq!(c.accounting_storage_host.as_deref(), Some("db"));
    assert_eq!(c.accounting_storage_port, 7031);
    assert_eq!(c.accounting_storage_user.as_deref(), Some("u"));
    assert_eq!(c.accounting_storage_pass.as_deref(), Some("/pw"));
    assert_eq!(c.accounting_storage_loc.as_deref(), Some("/loc"));
    assert_eq!(c.accounting_storage_enforce, vec!["associations", "limits"]);
    assert_eq!(c.accounting_storage_tres, vec!["gres/gpu"]);
    assert_eq!(c.job_comp_type, "jobcomp/filetxt");
    assert_eq!(c.private_data, vec!["jobs", "usage"]);
    assert_eq!(c.slurmctld_log_file.as_deref(), Some("/l1"));
    assert_eq!(c.slurmd_log_file.as_deref(), Some("/l2"));
    assert_eq!(c.slurmctld_debug, "debug2");
    assert_eq!(c.slurmd_debug, "3");
    assert_eq!(c.mpi_default, "pmix");
    assert_eq!(c.tmp_fs, "/scratch");
    assert_eq!(c.enforce_part_limits, "ALL");
    assert_eq!(c.kill_on_bad_exit, 1);
    assert_eq!(c.propagate_resource_limits, "NONE");
    assert_eq!(c.switch_type, "switch/none");
    assert_eq!(c.mail_prog, "/usr/bin/mail");
    assert_eq!(c.health_check_program.as_deref(), Some("/hc"));
    assert_eq!(c.health_check_interval, 600);
    assert_eq!(c.tree_width, 50);
    assert_eq!(c.max_tasks_per_node, 128);
    assert_eq!(c.max_step_count, 100);
    assert_eq!(c.job_requeue, 0);
}

#[test]
fn cluster_name_is_lowercased_with_warning() {
    let (c, w) = parse("SlurmctldHost=c\nClusterName=Lab");
    assert_eq!(c.cluster_name, "lab");
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].key, "ClusterName");
}

#[test]
fn def_mem_per_cpu_and_node_are_exclusive() {
    let (c, w) = parse("SlurmctldHost=c\nDefMemPerCPU=1000\nDefMemPerNode=8G\n");
    assert_eq!(c.def_mem_per_cpu, None);
    assert_eq!(c.def_mem_per_node, Some(8192));
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].line, w[0].key.as_str()), (3, "DefMemPerNode"));
    let (c, w) = parse("SlurmctldHost=c\nMaxMemPerNode=8G\nMaxMemPerCPU=100\n");
    assert_eq!((c.max_mem_per_cpu, c.max_mem_per_node), (Some(100), None));
    assert_eq!(w.len(), 1);
    // repeating the same key is not a conflict
    let (_, w) = parse("SlurmctldHost=c\nDefMemPerCPU=1\nDefMemPerCPU=2\n");
    assert!(w.is_empty());
}

#[test]
fn unknown_keys_warn_once_per_key() {
    let (c, w) = parse(
        "SlurmctldHost=c\nFooBar=1\nfoobar=2\nOther=x\nNodeName=n1 Colour=red\nNodeName=n2 colour=blue\n\
         PartitionName=p Nodes=n1 Wibble=1\nWaitTime=5\n",
    );
    let keys: Vec<(&str, usize)> = w.iter().map(|w| (w.key.as_str(), w.line)).collect();
    assert_eq!(
        keys,
        [("FooBar", 2), ("Other", 4), ("Colour", 5), ("Wibble", 7)]
    );
    assert!(w[2].message.contains("NodeName"), "{}", w[2]);
    // unknown keys are still visible in raw; recognised raw-only keys don't warn
    assert_eq!(c.get("foobar"), Some("2"));
    assert_eq!(c.get("WaitTime"), Some("5"));
    assert_eq!(c.raw.iter().filter(|(k, _)| k == "WaitTime").count(), 1);
}

#[test]
fn raw_keeps_file_order_and_get_returns_last() {
    let (c, _) = parse("SlurmctldHost=c\nKillWait=10\nNodeName=n1\nkillwait=20\n");
    assert_eq!(
        c.raw,
        vec![
            ("SlurmctldHost".to_string(), "c".to_string()),
            ("KillWait".to_string(), "10".to_string()),
            ("KillWait".to_string(), "20".to_string()),
        ]
    );
    assert_eq!(c.get("KILLWAIT"), Some("20"));
    assert_eq!(c.kill_wait, 20);
    assert_eq!(c.get("NodeName"), None);
}

#[test]
fn includes_via_callback() {
    let mut inc = |p: &str| -> Result<(String, String), String> {
        match p {
            "nodes.conf" => Ok((
                "/etc/drover/nodes.conf".to_string(),
                "NodeName=n[1-2] CPUs=4\nInclude parts.conf".to_string(),
            )),
            "parts.conf" => Ok((
                "/etc/drover/parts.conf".to_string(),
                "\nPartitionName=p Nodes=n[1-3]".to_string(),
            )),
            _ => Err("not found".to_string()),
        }
    };
    let e = parse_str(
        "SlurmctldHost=c\ninclude nodes.conf\n",
        "main.conf",
        &mut inc,
    )
    .unwrap_err();
    // the error names the included file and its line
    assert_eq!(
        e.to_string(),
        "/etc/drover/parts.conf:2: Nodes: undefined node 'n3'"
    );
    let e = parse_str("Include missing.conf", "main.conf", &mut inc).unwrap_err();
    assert_eq!(
        e.to_string(),
        "main.conf:1: Include: 'missing.conf': not found"
    );
}

#[test]
fn includes_continue_config() {
    let mut inc = |_: &str| -> Result<(String, String), String> {
        Ok(("inc.conf".to_string(), "NodeName=n1 CPUs=4".to_string()))
    };
    let (c, _) = parse_str(
        "SlurmctldHost=c\nNodeName=DEFAULT RealMemory=10\nInclude x\nPartitionName=p Nodes=n1",
        "main.conf",
        &mut inc,
    )
    .unwrap();
    assert_eq!(c.node("n1").unwrap().real_memory, 10);
    assert_eq!(c.partition("p").unwrap().nodes, vec!["n1"]);
}

#[test]
fn value_errors_name_file_line_and_key() {
    let e = assert_err(&format!("{HOST}\nNodeName=n1 CPUs=abc\n"), 3, "CPUs");
    assert_eq!(e.to_string(), "test.conf:3: CPUs: invalid number 'abc'");
    let cases: &[(&str, usize, &str)] = &[
        ("SlurmctldPort=x", 1, "SlurmctldPort"),
        ("SlurmctldPort=6818-6817", 1, "SlurmctldPort"),
        ("SlurmdPort=70000", 1, "SlurmdPort"),
        ("MaxJobCount=-1", 1, "MaxJobCount"),
        ("MinJobAge=soon", 1, "MinJobAge"),
        ("OverTimeLimit=x", 1, "OverTimeLimit"),
        ("ReturnToService=3", 1, "ReturnToService"),
        ("DefMemPerCPU=lots", 1, "DefMemPerCPU"),
        ("MaxMemPerNode=1X", 1, "MaxMemPerNode"),
        ("PriorityWeightAge=big", 1, "PriorityWeightAge"),
        ("PriorityMaxAge=7-x", 1, "PriorityMaxAge"),
        ("PriorityFavorSmall=perhaps", 1, "PriorityFavorSmall"),
        ("PreemptMode=nice", 1, "PreemptMode"),
        ("SlurmctldDebug=loud", 1, "SlurmctldDebug"),
        ("EnforcePartLimits=some", 1, "EnforcePartLimits"),
        ("TreeWidth=0", 1, "TreeWidth"),
        ("SlurmctldHost=a(b", 1, "SlurmctldHost"),
        ("SlurmctldHost=(b)", 1, "SlurmctldHost"),
        ("SlurmUser=", 1, "SlurmUser"),
        ("AuthInfo=ttl=abc", 1, "AuthInfo"),
        ("AuthInfo=socket=/x,skew=-1", 1, "AuthInfo"),
        ("ClusterName=", 1, "ClusterName"),
        ("ControlMachine=", 1, "ControlMachine"),
        ("AccountingStoragePort=http", 1, "AccountingStoragePort"),
        ("KillOnBadExit=yes", 1, "KillOnBadExit"),
    ];
    for (text, line, key) in cases {
        assert_err(text, *line, key);
    }
}

#[test]
fn syntax_errors() {
    let e = parse_err("SlurmctldHost=c\nReason=\"open");
    assert_eq!(e.to_string(), "test.conf:2: Reason: unterminated quote");
    let e = parse_err("SlurmctldHost=c\n\njunk\n");
    assert_eq!((e.line, e.key.as_str()), (3, "junk"));
    let e = parse_str("Include x", "t.conf", &mut no_inc).unwrap_err();
    assert_eq!(e.key, "Include");
}

#[test]
fn down_nodes_default_state() {
    let (c, _) = parse(&format!("{HOST}NodeName=n[1-2] Reason=old\nDownNodes=n2\n"));
    let n2 = c.node("n2").unwrap();
    assert_eq!(n2.state, "DOWN");
    assert_eq!(n2.reason.as_deref(), Some("old"));
}

#[test]
fn private_data_typo_is_an_error_naming_the_line() {
    let e = assert_err("ClusterName=c\nPrivateData=jobs,nodez\n", 2, "PrivateData");
    assert!(e.to_string().contains("invalid value 'nodez'"), "{e}");
    let (c, _) = parse("PrivateData=Jobs,cloud,events,partitions\n");
    assert_eq!(c.private_data.len(), 4);
}

#[test]
fn tls_names_map_addresses_to_host_names_unless_shared() {
    let (c, _) = parse(
        "SlurmctldHost=ctl(10.1.0.1)\n\
         NodeName=a NodeHostname=ha NodeAddr=10.1.0.2 CPUs=1\n\
         NodeName=e[1-2] NodeAddr=127.0.0.1 CPUs=1\n\
         NodeName=plain CPUs=1\n\
         PartitionName=p Nodes=ALL\n",
    );
    assert_eq!(
        c.tls_names(),
        vec![
            ("10.1.0.1".to_string(), "ctl".to_string()),
            ("10.1.0.2".to_string(), "ha".to_string()),
        ]
    );
}

#[test]
fn tls_keys() {
    let (c, _) = parse("TLSType=tls/none\nTLSParameters=ca_cert_file=/ca.pem\n");
    assert_eq!(c.tls.mode, crate::tls::TlsMode::Off);
    assert_eq!(c.tls.ca_cert_file.as_deref(), Some("/ca.pem"));
    assert_err("TLSType=tls/openssl\n", 1, "TLSType");
}

#[test]
fn max_array_size_is_bounded_as_in_slurm() {
    let e = assert_err("ClusterName=c\nMaxArraySize=4000002\n", 2, "MaxArraySize");
    assert!(e.message.contains("greater than 4000001"), "{e}");
    let (c, _) = parse("MaxArraySize=4000001\n");
    assert_eq!(c.max_array_size, 4_000_001);
}

#[test]
fn jwt_key_from_auth_alt_parameters() {
    let (c, _) =
        parse("AuthAltTypes=auth/jwt\nAuthAltParameters=disable_token_creation,jwt_key=/etc/k\n");
    assert_eq!(c.jwt_key_path().as_deref(), Some("/etc/k"));
    let (c, _) = parse("ClusterName=x\n");
    assert_eq!(c.jwt_key_path(), None);
    let (c, _) = parse("AuthAltParameters=jwt_key=\n");
    assert_eq!(c.jwt_key_path(), None);
}
