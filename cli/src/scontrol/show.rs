//! `scontrol show ...` renderers: Slurm's Key=Value records with three-space
//! continuation indents (or one line each with `-o`). Pure.

use drover_proto::text::printable;
use drover_proto::{ConfigEntry, JobInfo, JobState, NodeInfo, PartitionInfo, INFINITE};

use crate::jobids;
use crate::nodestate::NodeState;
use crate::squeue::format::{self as jf, push_num_unit, Row};
use crate::timefmt::{make_time_str, mins2time_str, secs2time_str};

#[derive(Debug, Clone, Copy, Default)]
pub struct ShowOpts {
    pub one_liner: bool,
    pub details: bool,
    pub now: i64,
}

/// `scontrol show step`: one running step of job `j`.
pub fn step(j: &JobInfo, s: &drover_proto::StepInfo, o: &ShowOpts) -> String {
    let mut r = Record::new();
    let nnodes = drover_conf::hostlist::expand(&s.nodelist).map_or(0, |v| v.len());
    r.line(format!(
        "StepId={}.{} UserId={} StartTime={} TimeLimit=UNLIMITED",
        j.job_id,
        s.step_id,
        j.user_id,
        make_time_str(s.start_time)
    ));
    r.line(format!(
        "State={} Partition={} NodeList={}",
        JobState::try_from(s.state)
            .unwrap_or(JobState::Running)
            .long_name(),
        or_null(&j.partition),
        or_null(&s.nodelist)
    ));
    r.line(format!(
        "Nodes={nnodes} CPUs={} Tasks={} Name={} Network=(null)",
        s.ncpus,
        s.ntasks,
        printable(&s.name)
    ));
    r.line(format!(
        "TRES=cpu={},mem={},node={nnodes}",
        s.ncpus,
        mem(s.mem_mb)
    ));
    r.finish(o)
}

/// Collects the lines of one record.
struct Record {
    lines: Vec<String>,
}

impl Record {
    fn new() -> Record {
        Record { lines: Vec::new() }
    }

    fn line(&mut self, s: String) {
        self.lines.push(s);
    }

    fn finish(self, o: &ShowOpts) -> String {
        let sep = if o.one_liner { " " } else { "\n   " };
        let mut s = self.lines.join(sep);
        s.push_str(if o.one_liner { "\n" } else { "\n\n" });
        s
    }
}

fn or_null(s: &str) -> &str {
    if s.is_empty() {
        "(null)"
    } else {
        s
    }
}

fn mem(mb: u64) -> String {
    let mut s = String::new();
    push_num_unit(&mut s, mb, 2);
    s
}

fn gres_text(g: &drover_proto::GresAlloc) -> String {
    let mut s = g.name.clone();
    if !g.r#type.is_empty() {
        s.push(':');
        s.push_str(&g.r#type);
    }
    if !g.indices.is_empty() {
        s.push_str(&format!("(IDX:{})", jobids::compress_indices(&g.indices)));
    } else if g.count > 0 {
        s.push_str(&format!("(CNT:{})", g.count));
    }
    s
}

/// `JOB_GRES=`: the job's GRES in total (`gpu:2`), from its allocation.
fn job_gres(j: &JobInfo) -> String {
    let mut totals: Vec<(String, u64)> = Vec::new();
    for a in &j.alloc {
        for g in &a.gres {
            let name = if g.r#type.is_empty() {
                g.name.clone()
            } else {
                format!("{}:{}", g.name, g.r#type)
            };
            let n = if g.indices.is_empty() {
                g.count
            } else {
                g.indices.len() as u64
            };
            match totals.iter_mut().find(|(k, _)| *k == name) {
                Some(t) => t.1 += n,
                None => totals.push((name, n)),
            }
        }
    }
    if totals.is_empty() {
        return j.tres_per_node.clone();
    }
    totals
        .iter()
        .map(|(k, n)| format!("{k}:{n}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `-d` per-node lines: nodes with identical CPU ids, memory and GRES share a line.
fn alloc_lines(j: &JobInfo) -> Vec<String> {
    let mut out: Vec<(Vec<String>, String, u64, String)> = Vec::new();
    for a in &j.alloc {
        let cpus = jobids::compress_indices(&a.cpu_ids);
        let gres: Vec<String> = a.gres.iter().map(gres_text).collect();
        let gres = gres.join(",");
        match out.last_mut() {
            Some(last) if last.1 == cpus && last.2 == a.mem_mb && last.3 == gres => {
                last.0.push(a.node.clone())
            }
            _ => out.push((vec![a.node.clone()], cpus, a.mem_mb, gres)),
        }
    }
    out.into_iter()
        .map(|(nodes, cpus, mem, gres)| {
            format!(
                "  Nodes={} CPU_IDs={} Mem={} GRES={}",
                drover_conf::hostlist::compress_in_order(&nodes),
                cpus,
                mem,
                gres
            )
        })
        .collect()
}

/// One job record.
pub fn job(j: &JobInfo, o: &ShowOpts) -> String {
    let row = Row::new(j);
    let state = jf::state_of(&row);
    let mut r = Record::new();
    let mut l1 = format!("JobId={} ", j.job_id);
    if j.array_job_id != 0 {
        if j.is_array_meta {
            l1.push_str(&format!(
                "ArrayJobId={} ArrayTaskId={} ",
                j.array_job_id, j.array_pending
            ));
        } else {
            l1.push_str(&format!(
                "ArrayJobId={} ArrayTaskId={} ",
                j.array_job_id, j.array_task_id
            ));
        }
        if j.array_max_running > 0 {
            l1.push_str(&format!("ArrayTaskThrottle={} ", j.array_max_running));
        }
    }
    l1.push_str(&format!("JobName={}", printable(&j.name)));
    r.line(l1);
    let user = if j.user_name.is_empty() {
        crate::users::user_name(j.user_id)
    } else {
        j.user_name.clone()
    };
    let group = if j.group_name.is_empty() {
        crate::users::group_name(j.group_id)
    } else {
        j.group_name.clone()
    };
    r.line(format!(
        "UserId={user}({}) GroupId={group}({}) MCS_label=N/A",
        j.user_id, j.group_id
    ));
    let mut l3 = format!(
        "Priority={} Nice={} Account={} QOS={}",
        j.priority,
        j.nice,
        or_null(&j.account),
        or_null(&j.qos)
    );
    if !j.wckey.is_empty() {
        l3.push_str(&format!(" WCKey={}", j.wckey));
    }
    r.line(l3);
    let reason: String = jf::reason(j)
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    r.line(format!(
        "JobState={} Reason={} Dependency={}",
        if j.stopped {
            "STOPPED"
        } else if jf::special_exit(j, state) {
            "SPECIAL_EXIT"
        } else {
            state.long_name()
        },
        printable(&reason),
        or_null(&j.dependency)
    ));
    r.line(format!(
        "Requeue={} Restarts={} BatchFlag={} Reboot=0 ExitCode={}:{}",
        u8::from(j.requeue),
        j.restart_count,
        u8::from(j.batch_flag),
        j.exit_code,
        j.exit_signal
    ));
    if o.details {
        r.line(format!("DerivedExitCode={}:0", j.derived_exit_code));
    }
    let run = jf::time_used(j, state, o.now);
    r.line(format!(
        "RunTime={} TimeLimit={} TimeMin={}",
        secs2time_str(run),
        mins2time_str(j.time_limit),
        if j.time_min == 0 {
            "N/A".to_string()
        } else {
            mins2time_str(j.time_min)
        }
    ));
    r.line(format!(
        "SubmitTime={} EligibleTime={}",
        make_time_str(j.submit_time),
        make_time_str(j.eligible_time)
    ));
    r.line(format!(
        "AccrueTime={}",
        make_time_str(if j.hold != 0 || j.eligible_time > o.now {
            0
        } else {
            j.eligible_time
        })
    ));
    let end = if j.time_limit == INFINITE && j.end_time > o.now {
        "Unknown".to_string()
    } else {
        make_time_str(j.end_time)
    };
    r.line(format!(
        "StartTime={} EndTime={end} Deadline=N/A",
        make_time_str(j.start_time)
    ));
    r.line(format!(
        "SuspendTime={} SecsPreSuspend={} LastSchedEval={} Scheduler=Main",
        if j.suspend_time == 0 {
            "None".to_string()
        } else {
            make_time_str(j.suspend_time)
        },
        j.pre_sus_time,
        make_time_str(j.submit_time)
    ));
    r.line(format!(
        "Partition={} AllocNode:Sid={}:0",
        or_null(&j.partition),
        or_null(&j.submit_host)
    ));
    r.line(format!(
        "ReqNodeList={} ExcNodeList={}",
        or_null(&j.req_nodes),
        or_null(&j.exc_nodes)
    ));
    r.line(format!("NodeList={}", or_null(&j.nodes)));
    if !j.batch_host.is_empty() {
        r.line(format!("BatchHost={}", j.batch_host));
    }
    r.line(format!(
        "NumNodes={} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:*:*",
        j.num_nodes.max(1),
        j.num_cpus,
        j.num_tasks.max(1),
        j.cpus_per_task.max(1)
    ));
    let tres = if !j.tres_alloc.is_empty() && state != JobState::Pending {
        &j.tres_alloc
    } else {
        &j.tres_req
    };
    r.line(format!("TRES={}", or_null(tres)));
    r.line(format!(
        "Socks/Node=* NtasksPerN:B:S:C={}:0:*:* CoreSpec=*",
        j.ntasks_per_node
    ));
    if o.details && !j.alloc.is_empty() {
        r.line(format!("JOB_GRES={}", or_null(&job_gres(j))));
        for l in alloc_lines(j) {
            r.line(l);
        }
    }
    r.line(format!(
        "MinCPUsNode={} MinMemory{}={} MinTmpDiskNode=0",
        if j.min_cpus_per_node > 0 {
            j.min_cpus_per_node
        } else {
            j.cpus_per_task.max(1)
        },
        if j.mem_per_cpu { "CPU" } else { "Node" },
        mem(j.min_memory_mb)
    ));
    r.line(format!(
        "Features={} DelayBoot=00:00:00",
        or_null(&j.features)
    ));
    if !j.reservation.is_empty() {
        r.line(format!("Reservation={}", j.reservation));
    }
    r.line(format!(
        "OverSubscribe={} Contiguous=0 Licenses=(null) Network=(null)",
        if j.oversubscribe { "OK" } else { "NO" }
    ));
    r.line(format!("Command={}", printable(or_null(&j.command))));
    r.line(format!("WorkDir={}", printable(&j.work_dir)));
    if !j.system_comment.is_empty() {
        r.line(format!("SystemComment={} ", printable(&j.system_comment)));
    }
    if !j.comment.is_empty() {
        r.line(format!("Comment={} ", printable(&j.comment)));
    }
    if j.batch_flag {
        r.line(format!("StdErr={}", printable(&jf::std_err_path(j))));
        r.line(format!(
            "StdIn={}",
            if j.std_in.is_empty() {
                "/dev/null".into()
            } else {
                printable(&j.std_in)
            }
        ));
        r.line(format!("StdOut={}", printable(&jf::std_out_path(j))));
    }
    if !j.tres_per_node.is_empty() {
        r.line(format!("TresPerNode={}", j.tres_per_node));
    }
    if !j.mail_type.is_empty() && !j.mail_user.is_empty() {
        r.line(format!("MailUser={} MailType={}", j.mail_user, j.mail_type));
    }
    r.finish(o)
}

fn time_or_none(t: i64) -> String {
    if t == 0 {
        "None".to_string()
    } else {
        make_time_str(t)
    }
}

/// One node record.
pub fn node(n: &NodeInfo, o: &ShowOpts) -> String {
    let st = NodeState::of(n);
    let mut r = Record::new();
    r.line(format!(
        "NodeName={} Arch={} CoresPerSocket={} ",
        n.name,
        std::env::consts::ARCH,
        n.cores_per_socket.max(1)
    ));
    r.line(format!(
        "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad={:.2}",
        n.cpus_alloc,
        n.cpus,
        n.cpus,
        f64::from(n.cpu_load) / 100.0
    ));
    let feats = n.features.join(",");
    let active = if n.active_features.is_empty() {
        feats.clone()
    } else {
        n.active_features.join(",")
    };
    r.line(format!("AvailableFeatures={}", or_null(&feats)));
    r.line(format!("ActiveFeatures={}", or_null(&active)));
    r.line(format!("Gres={}", or_null(&n.gres)));
    if o.details {
        r.line(format!("GresUsed={}", or_null(&n.gres_used)));
    }
    r.line(format!(
        "NodeAddr={} NodeHostName={} Version={}",
        if n.node_addr.is_empty() {
            &n.name
        } else {
            &n.node_addr
        },
        if n.node_hostname.is_empty() {
            &n.name
        } else {
            &n.node_hostname
        },
        or_null(&n.version)
    ));
    r.line(format!("OS={} ", or_null(&n.os)));
    r.line(format!(
        "RealMemory={} AllocMem={} FreeMem={} Sockets={} Boards={}",
        n.real_memory,
        n.alloc_memory,
        if n.free_memory == 0 {
            "N/A".to_string()
        } else {
            n.free_memory.to_string()
        },
        n.sockets.max(1),
        n.boards.max(1)
    ));
    r.line(format!(
        "State={} ThreadsPerCore={} TmpDisk={} Weight={} Owner=N/A MCS_label=N/A",
        st.complete(),
        n.threads_per_core.max(1),
        n.tmp_disk,
        n.weight.max(1)
    ));
    r.line(format!("Partitions={} ", n.partitions.join(",")));
    r.line(format!(
        "BootTime={} SlurmdStartTime={}",
        time_or_none(n.boot_time),
        time_or_none(n.slurmd_start_time)
    ));
    r.line(format!(
        "LastBusyTime={} ResumeAfterTime=None",
        make_time_str(n.last_busy)
    ));
    r.line(format!("CfgTRES={}", n.cfg_tres));
    r.line(format!("AllocTRES={}", n.alloc_tres));
    r.line("CurrentWatts=0 AveWatts=0".to_string());
    if !n.reason.is_empty() {
        r.line(format!(
            "Reason={} [{}@{}]",
            printable(&n.reason),
            crate::users::user_name(n.reason_uid),
            make_time_str(n.reason_time)
        ));
    }
    r.finish(o)
}

fn unlimited(n: u32) -> String {
    if n == INFINITE || n == 0 {
        "UNLIMITED".to_string()
    } else {
        n.to_string()
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "YES"
    } else {
        "NO"
    }
}

fn all_or(s: &str) -> &str {
    if s.is_empty() {
        "ALL"
    } else {
        s
    }
}

/// One partition record.
pub fn partition(p: &PartitionInfo, o: &ShowOpts) -> String {
    let mut r = Record::new();
    r.line(format!("PartitionName={}", p.name));
    r.line(format!(
        "AllowGroups={} AllowAccounts={} AllowQos={}",
        all_or(&p.allow_groups),
        all_or(&p.allow_accounts),
        all_or(&p.allow_qos)
    ));
    r.line(format!(
        "AllocNodes=ALL Default={} QoS={}",
        yes_no(p.is_default),
        if p.qos.is_empty() { "N/A" } else { &p.qos }
    ));
    r.line(format!(
        "DefaultTime={} DisableRootJobs=NO ExclusiveUser={} GraceTime={} Hidden={}",
        if p.default_time == 0 {
            "NONE".to_string()
        } else {
            mins2time_str(p.default_time)
        },
        yes_no(p.exclusive_user),
        p.grace_time,
        yes_no(p.hidden)
    ));
    r.line(format!(
        "MaxNodes={} MaxTime={} MinNodes={} LLN=NO MaxCPUsPerNode=UNLIMITED MaxCPUsPerSocket=UNLIMITED",
        unlimited(p.max_nodes),
        mins2time_str(p.max_time),
        p.min_nodes
    ));
    r.line(format!("Nodes={}", or_null(&p.nodes)));
    r.line(format!(
        "PriorityJobFactor={} PriorityTier={} RootOnly={} ReqResv=NO OverSubscribe={}",
        p.priority_job_factor,
        p.priority_tier,
        yes_no(p.root_only),
        if p.over_subscribe.is_empty() {
            "NO"
        } else {
            &p.over_subscribe
        }
    ));
    r.line(format!(
        "OverTimeLimit=NONE PreemptMode={}",
        if p.preempt_mode.is_empty() {
            "OFF"
        } else {
            &p.preempt_mode
        }
    ));
    r.line(format!(
        "State={} TotalCPUs={} TotalNodes={} SelectTypeParameters=NONE",
        p.state.to_ascii_uppercase(),
        p.total_cpus,
        p.total_nodes
    ));
    r.line("JobDefaults=(null)".to_string());
    let def = if p.def_mem_per_cpu > 0 {
        format!("DefMemPerCPU={}", p.def_mem_per_cpu)
    } else if p.def_mem_per_node > 0 {
        format!("DefMemPerNode={}", p.def_mem_per_node)
    } else {
        "DefMemPerNode=UNLIMITED".to_string()
    };
    let max = if p.max_mem_per_cpu > 0 {
        format!("MaxMemPerCPU={}", p.max_mem_per_cpu)
    } else if p.max_mem_per_node > 0 {
        format!("MaxMemPerNode={}", p.max_mem_per_node)
    } else {
        "MaxMemPerNode=UNLIMITED".to_string()
    };
    r.line(format!("{def} {max}"));
    if !p.tres.is_empty() {
        r.line(format!("TRES={}", p.tres));
    }
    r.finish(o)
}

/// `scontrol show config`.
pub fn config(entries: &[ConfigEntry], as_of: i64) -> String {
    let mut s = format!("Configuration data as of {}\n", make_time_str(as_of));
    for e in entries {
        s.push_str(&format!("{:<23} = {}\n", e.key, e.value));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::format::tests::job as mkjob;

    fn opts(one: bool) -> ShowOpts {
        ShowOpts {
            one_liner: one,
            details: false,
            now: 1_700_000_100,
        }
    }

    #[test]
    fn job_record_layout() {
        let mut j = mkjob(5, "test.sh", JobState::Pending);
        j.min_memory_mb = 954;
        j.tres_req = "cpu=1,mem=954M,node=1,billing=1".into();
        j.command = "/home/alice/test.sh".into();
        j.submit_time = 0;
        let s = job(&j, &opts(false));
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "JobId=5 JobName=test.sh");
        assert_eq!(
            lines[1],
            "   UserId=alice(1000) GroupId=alice(1000) MCS_label=N/A"
        );
        assert_eq!(
            lines[2],
            "   Priority=4294901756 Nice=0 Account=(null) QOS=(null)"
        );
        assert_eq!(
            lines[3],
            "   JobState=PENDING Reason=Priority Dependency=(null)"
        );
        assert_eq!(
            lines[4],
            "   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0"
        );
        assert_eq!(
            lines[5],
            "   RunTime=00:00:00 TimeLimit=01:00:00 TimeMin=N/A"
        );
        assert_eq!(lines[6], "   SubmitTime=Unknown EligibleTime=Unknown");
        assert!(s.contains("\n   NodeList=(null)\n"));
        assert!(s.contains("\n   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"));
        assert!(s.contains("\n   TRES=cpu=1,mem=954M,node=1,billing=1\n"));
        assert!(s.contains("\n   MinCPUsNode=1 MinMemoryNode=954M MinTmpDiskNode=0\n"));
        assert!(s.contains("\n   Command=/home/alice/test.sh\n"));
        assert!(s.contains("\n   StdOut=/home/alice/slurm-5.out\n"));
        assert!(s.ends_with("StdOut=/home/alice/slurm-5.out\n\n"));
        let one = job(&j, &opts(true));
        assert_eq!(one.lines().count(), 1);
        assert!(one.starts_with("JobId=5 JobName=test.sh UserId=alice(1000) "));
        assert!(one.ends_with('\n'));
    }

    #[test]
    fn job_fields_parse_back() {
        let mut j = mkjob(9, "n", JobState::Failed);
        j.exit_code = 3;
        j.time_limit = 1440;
        j.min_memory_mb = 4096;
        j.comment = "a comment".into();
        j.array_job_id = 7;
        j.array_task_id = 2;
        j.state_reason = "NonZeroExitCode".into();
        let one = job(&j, &opts(true));
        let field = |k: &str| {
            one.split_whitespace()
                .find_map(|t| t.strip_prefix(&format!("{k}=")).map(str::to_string))
        };
        assert_eq!(field("ExitCode").as_deref(), Some("3:0"));
        assert_eq!(field("TimeLimit").as_deref(), Some("1-00:00:00"));
        assert_eq!(field("MinMemoryNode").as_deref(), Some("4G"));
        assert_eq!(field("JobState").as_deref(), Some("FAILED"));
        assert_eq!(field("ArrayJobId").as_deref(), Some("7"));
        assert_eq!(field("ArrayTaskId").as_deref(), Some("2"));
        assert_eq!(field("Reason").as_deref(), Some("NonZeroExitCode"));
        assert!(one.contains("Comment=a comment "));
    }

    #[test]
    fn details_lines() {
        let mut j = mkjob(3, "g", JobState::Running);
        j.nodes = "n[1-2]".into();
        j.alloc = vec![
            drover_proto::NodeAlloc {
                node: "n1".into(),
                cpus: 4,
                cpu_ids: vec![0, 1, 2, 3],
                mem_mb: 1024,
                gres: vec![drover_proto::GresAlloc {
                    name: "gpu".into(),
                    r#type: String::new(),
                    indices: vec![0, 1],
                    count: 2,
                }],
                tasks: 1,
            },
            drover_proto::NodeAlloc {
                node: "n2".into(),
                cpus: 4,
                cpu_ids: vec![0, 1, 2, 3],
                mem_mb: 1024,
                gres: vec![drover_proto::GresAlloc {
                    name: "gpu".into(),
                    r#type: String::new(),
                    indices: vec![0, 1],
                    count: 2,
                }],
                tasks: 1,
            },
        ];
        let s = job(
            &j,
            &ShowOpts {
                details: true,
                ..opts(false)
            },
        );
        assert!(
            s.contains("\n     Nodes=n[1-2] CPU_IDs=0-3 Mem=1024 GRES=gpu(IDX:0-1)\n"),
            "{s}"
        );
        assert!(s.contains("\n   DerivedExitCode=0:0\n"));
        assert!(s.contains("\n   JOB_GRES=gpu:4\n"), "{s}");
    }

    #[test]
    fn node_partition_config() {
        let n = NodeInfo {
            name: "node1".into(),
            state: "IDLE".into(),
            state_flags: "+DRAIN".into(),
            responding: true,
            cpus: 4,
            real_memory: 4000,
            partitions: vec!["debug".into()],
            reason: "maint".into(),
            ..Default::default()
        };
        let s = node(&n, &opts(false));
        assert!(s.starts_with(&format!(
            "NodeName=node1 Arch={} CoresPerSocket=1 \n   CPUAlloc=0 CPUEfctv=4 CPUTot=4 CPULoad=0.00\n",
            std::env::consts::ARCH
        )));
        assert!(s.contains("\n   State=IDLE+DRAIN ThreadsPerCore=1 "));
        assert!(s.contains("\n   Reason=maint ["));
        let p = PartitionInfo {
            name: "debug".into(),
            is_default: true,
            state: "UP".into(),
            max_time: INFINITE,
            max_nodes: INFINITE,
            nodes: "node[1-2]".into(),
            total_cpus: 8,
            total_nodes: 2,
            ..Default::default()
        };
        let s = partition(&p, &opts(false));
        assert!(s.starts_with("PartitionName=debug\n   AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL\n   AllocNodes=ALL Default=YES QoS=N/A\n"));
        assert!(s.contains("\n   MaxNodes=UNLIMITED MaxTime=UNLIMITED MinNodes=0 "));
        assert!(s.contains("\n   State=UP TotalCPUs=8 TotalNodes=2 SelectTypeParameters=NONE\n"));
        let c = config(
            &[
                ConfigEntry {
                    key: "MinJobAge".into(),
                    value: "300 sec".into(),
                },
                ConfigEntry {
                    key: "MaxArraySize".into(),
                    value: "1001".into(),
                },
            ],
            0,
        );
        assert_eq!(
            c,
            "Configuration data as of Unknown\nMinJobAge               = 300 sec\nMaxArraySize            = 1001\n"
        );
    }
}
