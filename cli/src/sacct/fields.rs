//! sacct's fields: names, default widths (Slurm's table), and the text of
//! each for a job or step record. Pure (the caller passes `now` and name
//! lookups).

use drover_proto::acct::{JobRecord, StepRecord};
use drover_proto::{JobState, INFINITE};

use crate::timefmt;

/// (canonical name, default width; negative = left-justified).
pub const FIELDS: &[(&str, i32)] = &[
    ("Account", 10),
    ("AdminComment", 15),
    ("AllocCPUS", 10),
    ("AllocNodes", 10),
    ("AllocTRES", 10),
    ("AssocID", 7),
    ("AveCPU", 10),
    ("AveCPUFreq", 10),
    ("AveDiskRead", 14),
    ("AveDiskWrite", 14),
    ("AvePages", 10),
    ("AveRSS", 10),
    ("AveVMSize", 10),
    ("BlockID", 16),
    ("Cluster", 10),
    ("Comment", 14),
    ("Constraints", 19),
    ("ConsumedEnergy", 14),
    ("ConsumedEnergyRaw", 17),
    ("Container", 19),
    ("CPUTime", 10),
    ("CPUTimeRAW", 10),
    ("DBIndex", -21),
    ("DerivedExitCode", 15),
    ("Elapsed", 10),
    ("ElapsedRaw", 10),
    ("Eligible", 19),
    ("End", 19),
    ("ExitCode", 8),
    ("Extra", 14),
    ("FailedNode", 8),
    ("Flags", 19),
    ("GID", 6),
    ("Group", 9),
    ("JobID", -12),
    ("JobIDRaw", -12),
    ("JobName", 10),
    ("Layout", 9),
    ("Licenses", 10),
    ("MaxDiskRead", 12),
    ("MaxDiskReadNode", 15),
    ("MaxDiskReadTask", 15),
    ("MaxDiskWrite", 12),
    ("MaxDiskWriteNode", 16),
    ("MaxDiskWriteTask", 16),
    ("MaxPages", 8),
    ("MaxPagesNode", 12),
    ("MaxPagesTask", 14),
    ("MaxRSS", 10),
    ("MaxRSSNode", 10),
    ("MaxRSSTask", 10),
    ("MaxVMSize", 10),
    ("MaxVMSizeNode", 14),
    ("MaxVMSizeTask", 14),
    ("McsLabel", 12),
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("NCPUS", 10),
    ("NNodes", 8),
    ("NodeList", 15),
    ("NTasks", 8),
    ("Partition", 10),
    ("Planned", 10),
    ("PlannedCPU", 10),
    ("PlannedCPURAW", 13),
    ("Priority", 10),
    ("QOS", 10),
    ("QOSRAW", 6),
    ("QOSREQ", 10),
    ("Reason", 22),
    ("ReqCPUFreq", 10),
    ("ReqCPUFreqGov", 13),
    ("ReqCPUFreqMax", 13),
    ("ReqCPUFreqMin", 13),
    ("ReqCPUS", 8),
    ("ReqMem", 10),
    ("ReqNodes", 8),
    ("ReqTRES", 10),
    ("Reservation", 20),
    ("ReservationId", 8),
    ("Restarts", 8),
    ("Start", 19),
    ("State", 10),
    ("StdErr", 20),
    ("StdIn", 20),
    ("StdOut", 20),
    ("Submit", 19),
    ("SubmitLine", 20),
    ("Suspended", 10),
    ("SystemComment", 15),
    ("SystemCPU", 10),
    ("Timelimit", 10),
    ("TimelimitRaw", 10),
    ("TotalCPU", 10),
    ("TRESUsageInAve", 14),
    ("TRESUsageInMax", 14),
    ("TRESUsageInMaxNode", 18),
    ("TRESUsageInMaxTask", 18),
    ("TRESUsageInMin", 14),
    ("TRESUsageInMinNode", 18),
    ("TRESUsageInMinTask", 18),
    ("TRESUsageInTot", 14),
    ("TRESUsageOutAve", 15),
    ("TRESUsageOutMax", 15),
    ("TRESUsageOutMaxNode", 19),
    ("TRESUsageOutMaxTask", 19),
    ("TRESUsageOutMin", 15),
    ("TRESUsageOutMinNode", 19),
    ("TRESUsageOutMinTask", 19),
    ("TRESUsageOutTot", 15),
    ("UID", 6),
    ("User", 9),
    ("UserCPU", 10),
    ("WCKey", 10),
    ("WCKeyID", 10),
    ("WorkDir", 20),
];

pub const DEFAULT_FORMAT: &str = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode";
pub const BRIEF_FORMAT: &str = "JobID,State,ExitCode";
pub const LONG_FORMAT: &str = "JobID,JobIDRaw,JobName,Partition,MaxVMSize,MaxVMSizeNode,\
MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,\
AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,AllocCPUS,Elapsed,State,ExitCode,AveCPUFreq,\
ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ReqMem,ConsumedEnergy,MaxDiskRead,MaxDiskReadNode,\
MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,MaxDiskWriteTask,AveDiskWrite,ReqTRES,\
AllocTRES,TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMaxTask,TRESUsageInMin,\
TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,TRESUsageOutMax,TRESUsageOutAve,\
TRESUsageOutTot";

/// The daemon's job columns a field needs (beyond the key, array ids and
/// state, which always come).
pub fn columns(name: &str) -> &'static [&'static str] {
    match name {
        "Account" => &["account"],
        "AllocCPUS" | "NCPUS" | "ReqCPUS" => &["ncpus", "start_time"],
        "AllocNodes" | "NNodes" | "ReqNodes" => &["nnodes", "start_time"],
        "AllocTRES" => &["alloc_tres"],
        "Comment" => &["job_comment"],
        "SystemComment" => &["system_comment"],
        "Constraints" => &["constraints"],
        "CPUTime" | "CPUTimeRAW" => &["ncpus", "start_time", "end_time"],
        "DerivedExitCode" => &["derived_exit_code"],
        "Elapsed" | "ElapsedRaw" => &["start_time", "end_time"],
        "Eligible" => &["eligible_time"],
        "End" => &["end_time"],
        "Start" => &["start_time"],
        "ExitCode" => &["exit_code", "exit_signal"],
        "GID" | "Group" => &["gid"],
        "JobName" => &["job_name"],
        "NodeList" => &["nodelist"],
        "NTasks" => &["ntasks"],
        "Partition" => &["part"],
        "Planned" | "PlannedCPU" | "PlannedCPURAW" => &["eligible_time", "start_time", "ncpus"],
        "Priority" => &["priority"],
        "QOS" | "QOSREQ" => &["qos"],
        "Reason" => &["reason"],
        "ReqMem" => &["req_tres", "req_mem_mb"],
        "ReqTRES" => &["req_tres"],
        "Restarts" => &["restart_count"],
        "State" => &["cancelled", "cancelled_by"],
        "Timelimit" | "TimelimitRaw" => &["time_limit"],
        "TotalCPU" | "UserCPU" => &["cpu_time_usec"],
        "UID" => &["uid"],
        "User" => &["user_name"],
        "WCKey" => &["wckey"],
        "WorkDir" => &["work_dir"],
        "MaxRSS" | "AveRSS" => &["max_rss_kb"],
        _ => &[],
    }
}

/// A field as asked for: index into [`FIELDS`] and its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    pub field: usize,
    /// Negative = left-justified.
    pub width: i32,
}

impl Col {
    pub fn name(&self) -> &'static str {
        FIELDS[self.field].0
    }
}

/// Parse `-o`: `name[%width],...` (any case). Error: the unknown name.
pub fn parse_format(s: &str) -> Result<Vec<Col>, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (
                n,
                Some(w.trim().parse::<i32>().map_err(|_| item.to_string())?),
            ),
            None => (item, None),
        };
        let idx = FIELDS
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| name.trim().to_string())?;
        let def = FIELDS[idx].1;
        let width = match width {
            Some(w) if w != 0 => w.clamp(-65535, 65535),
            _ => def,
        };
        out.push(Col { field: idx, width });
    }
    Ok(out)
}

/// One line of sacct output: a job allocation or one of its steps.
#[derive(Clone, Copy)]
pub enum Row<'a> {
    Job(&'a JobRecord),
    Step(&'a JobRecord, &'a StepRecord),
}

/// What the renderer needs from outside.
pub struct Ctx<'a> {
    pub now: i64,
    pub group: &'a dyn Fn(u32) -> String,
    /// `--noconvert`: sizes in the unit they were recorded in (`2048K`,
    /// `4096M`), not the largest exact one (`2M`, `4G`).
    pub noconvert: bool,
}

pub fn state_name(s: i32) -> &'static str {
    JobState::try_from(s)
        .map(|s| s.long_name())
        .unwrap_or("UNKNOWN")
}

/// `CANCELLED by <uid>` for a cancelled job allocation.
pub fn job_state_text(j: &JobRecord) -> String {
    let st = state_name(j.state);
    if j.state == JobState::Cancelled as i32 && j.cancelled {
        format!("{st} by {}", j.cancelled_by)
    } else {
        st.to_string()
    }
}

/// `12`, `12_3`, `12_[4-9]`, `12_[4-9%2]`.
pub fn job_id_text(j: &JobRecord) -> String {
    if j.array_job_id == 0 {
        j.job_id.to_string()
    } else if !j.array_pending.is_empty() {
        if j.array_max_running > 0 {
            format!(
                "{}_[{}%{}]",
                j.array_job_id, j.array_pending, j.array_max_running
            )
        } else {
            format!("{}_[{}]", j.array_job_id, j.array_pending)
        }
    } else {
        format!("{}_{}", j.array_job_id, j.array_task_id)
    }
}

pub fn step_suffix(id: i32) -> String {
    match id {
        -5 => "batch".into(),
        -4 => "extern".into(),
        -6 => "interactive".into(),
        n => n.to_string(),
    }
}

/// Slurm's `_elapsed_time`: `D-HH:MM:SS`, `HH:MM:SS`, `MM:SS.mmm`, `00:MM:SS`.
pub fn cpu_time_text(usec: u64) -> String {
    let secs = usec / 1_000_000;
    let ms = (usec % 1_000_000) / 1000;
    let (d, h, m, s) = (
        secs / 86400,
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else if ms > 0 {
        format!("{m:02}:{s:02}.{ms:03}")
    } else {
        format!("00:{m:02}:{s:02}")
    }
}

/// A size in KiB the way sacct prints it: exact units only (`2048K` ->
/// `2M`, `1500K` stays).
pub fn kb_text(kb: u64) -> String {
    let units = ['K', 'M', 'G', 'T', 'P'];
    let mut v = kb;
    let mut i = 0;
    while v > 0 && v.is_multiple_of(1024) && i + 1 < units.len() {
        v /= 1024;
        i += 1;
    }
    if v == 0 {
        "0".into()
    } else {
        format!("{v}{}", units[i])
    }
}

/// The `mem=` of a TRES text (`8G`), for ReqMem.
fn tres_mem(t: &str) -> Option<&str> {
    t.split(',').find_map(|p| p.strip_prefix("mem="))
}

fn date(t: i64) -> String {
    timefmt::make_time_str(t)
}

fn elapsed_secs(start: i64, end: i64, now: i64) -> i64 {
    if start == 0 {
        0
    } else if end == 0 {
        (now - start).max(0)
    } else {
        (end - start).max(0)
    }
}

fn gpu_usage(util: u32, mem_mb: u64) -> String {
    if util == 0 && mem_mb == 0 {
        String::new()
    } else {
        format!("gres/gpumem={mem_mb}M,gres/gpuutil={util}")
    }
}

/// The text of field `name` for `row`. Numbers are returned as text too.
pub fn value(name: &str, row: Row<'_>, ctx: &Ctx<'_>) -> String {
    let j = match row {
        Row::Job(j) | Row::Step(j, _) => j,
    };
    let step = match row {
        Row::Step(_, s) => Some(s),
        Row::Job(_) => None,
    };
    let (start, end) = match step {
        Some(s) => (s.start_time, s.end_time),
        None => (j.start_time, j.end_time),
    };
    let elapsed = elapsed_secs(start, end, ctx.now);
    let ncpus = step.map(|s| s.ncpus).unwrap_or(j.ncpus);
    let ncpus = if step.is_none() && j.start_time == 0 {
        0
    } else {
        ncpus
    };
    match name {
        "Account" => j.account.clone(),
        "AllocCPUS" | "NCPUS" => ncpus.to_string(),
        "AllocNodes" => {
            if j.start_time == 0 {
                "0".into()
            } else {
                step.map(|s| s.nnodes).unwrap_or(j.nnodes).to_string()
            }
        }
        "AllocTRES" => step
            .map(|s| s.alloc_tres.clone())
            .unwrap_or_else(|| j.alloc_tres.clone()),
        "AssocID" => "0".into(),
        "AveCPU" | "MinCPU" => step
            .map(|s| cpu_time_text(s.cpu_time_usec / u64::from(s.ntasks.max(1))))
            .unwrap_or_default(),
        "AveRSS" | "MaxRSS" => step
            .map(|s| {
                if ctx.noconvert && s.max_rss_kb > 0 {
                    format!("{}K", s.max_rss_kb)
                } else {
                    kb_text(s.max_rss_kb)
                }
            })
            .unwrap_or_default(),
        "MaxRSSNode" | "MinCPUNode" => step.map(|s| s.nodelist.clone()).unwrap_or_default(),
        "MaxRSSTask" | "MinCPUTask" => step.map(|_| "0".to_string()).unwrap_or_default(),
        "AveVMSize" | "MaxVMSize" | "AvePages" | "MaxPages" | "AveDiskRead" | "AveDiskWrite"
        | "MaxDiskRead" | "MaxDiskWrite" => step.map(|_| "0".to_string()).unwrap_or_default(),
        "Cluster" => j.cluster.clone(),
        "Comment" => {
            if step.is_none() {
                j.comment.clone()
            } else {
                String::new()
            }
        }
        "SystemComment" => {
            if step.is_none() {
                j.system_comment.clone()
            } else {
                String::new()
            }
        }
        "Constraints" => j.constraints.clone(),
        "ConsumedEnergy" | "ConsumedEnergyRaw" => "0".into(),
        "CPUTime" => timefmt::secs2time_str(elapsed * i64::from(ncpus)),
        "CPUTimeRAW" => (elapsed * i64::from(ncpus)).to_string(),
        "DerivedExitCode" => {
            if step.is_none() {
                format!("{}:0", j.derived_exit_code)
            } else {
                String::new()
            }
        }
        "Elapsed" => timefmt::secs2time_str(elapsed),
        "ElapsedRaw" => elapsed.to_string(),
        "Eligible" => {
            if step.is_some() {
                date(start)
            } else {
                date(j.eligible_time.max(j.submit_time))
            }
        }
        "End" => date(end),
        "ExitCode" => {
            let (c, s) = match step {
                Some(s) => (s.exit_code, s.exit_signal),
                None => (j.exit_code, j.exit_signal),
            };
            format!("{c}:{s}")
        }
        "Flags" => {
            if step.is_none() {
                "SchedMain".into()
            } else {
                String::new()
            }
        }
        "GID" => j.gid.to_string(),
        "Group" => (ctx.group)(j.gid),
        "JobID" => match step {
            Some(s) => format!("{}.{}", job_id_text(j), step_suffix(s.step_id)),
            None => job_id_text(j),
        },
        "JobIDRaw" => match step {
            Some(s) => format!("{}.{}", j.job_id, step_suffix(s.step_id)),
            None => j.job_id.to_string(),
        },
        "JobName" => step
            .map(|s| s.name.clone())
            .unwrap_or_else(|| j.name.clone()),
        "Layout" => step.map(|_| "Unknown".to_string()).unwrap_or_default(),
        "NNodes" => step.map(|s| s.nnodes).unwrap_or(j.nnodes).to_string(),
        "NodeList" => {
            let n = step.map(|s| s.nodelist.as_str()).unwrap_or(&j.nodelist);
            if n.is_empty() {
                "None assigned".into()
            } else {
                n.to_string()
            }
        }
        "NTasks" => step.map(|s| s.ntasks.to_string()).unwrap_or_default(),
        "Partition" => {
            if step.is_none() {
                j.partition.clone()
            } else {
                String::new()
            }
        }
        "Planned" | "PlannedCPU" | "PlannedCPURAW" => {
            if step.is_some() {
                return String::new();
            }
            let eligible = j.eligible_time.max(j.submit_time);
            let until = if j.start_time > 0 {
                j.start_time
            } else {
                ctx.now
            };
            let wait = (until - eligible).max(0);
            match name {
                "Planned" => timefmt::secs2time_str(wait),
                "PlannedCPU" => timefmt::secs2time_str(wait * i64::from(j.ncpus)),
                _ => (wait * i64::from(j.ncpus)).to_string(),
            }
        }
        "Priority" => {
            if step.is_none() {
                j.priority.to_string()
            } else {
                String::new()
            }
        }
        "QOS" | "QOSREQ" => {
            if step.is_none() {
                j.qos.clone()
            } else {
                String::new()
            }
        }
        "QOSRAW" => "1".into(),
        "Reason" => {
            if step.is_none() {
                j.reason.clone()
            } else {
                String::new()
            }
        }
        "ReqCPUS" => step.map(|s| s.ncpus).unwrap_or(j.ncpus).to_string(),
        "ReqMem" => {
            if step.is_some() {
                String::new()
            } else if ctx.noconvert && j.req_mem_mb > 0 {
                format!("{}M", j.req_mem_mb)
            } else {
                tres_mem(&j.req_tres)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{}M", j.req_mem_mb))
            }
        }
        "ReqNodes" => j.nnodes.to_string(),
        "ReqTRES" => {
            if step.is_none() {
                j.req_tres.clone()
            } else {
                String::new()
            }
        }
        "Restarts" => j.restart_count.to_string(),
        "Start" => date(start),
        "State" => match step {
            Some(s) => state_name(s.state).to_string(),
            None => job_state_text(j),
        },
        "Submit" => date(j.submit_time),
        "Suspended" => "00:00:00".into(),
        "SystemCPU" => cpu_time_text(0),
        "Timelimit" => {
            if step.is_some() {
                String::new()
            } else if j.time_limit == 0 {
                "Partition_Limit".into()
            } else {
                timefmt::mins2time_str(j.time_limit)
            }
        }
        "TimelimitRaw" => {
            if step.is_some() {
                String::new()
            } else if j.time_limit == INFINITE {
                "UNLIMITED".into()
            } else {
                j.time_limit.to_string()
            }
        }
        "TotalCPU" | "UserCPU" => {
            let usec = match step {
                Some(s) => s.cpu_time_usec,
                None => j
                    .steps
                    .iter()
                    .map(|s| s.cpu_time_usec)
                    .sum::<u64>()
                    .max(j.cpu_time_usec),
            };
            cpu_time_text(usec)
        }
        "TRESUsageInMax" | "TRESUsageInAve" | "TRESUsageInTot" => match step {
            Some(s) => {
                let mut t = format!("cpu={}", cpu_time_text(s.cpu_time_usec));
                t.push_str(&format!(",mem={}", kb_text(s.max_rss_kb)));
                let g = gpu_usage(s.gpu_util_pct, s.gpu_mem_max_mb);
                if !g.is_empty() {
                    t.push(',');
                    t.push_str(&g);
                }
                t
            }
            None => String::new(),
        },
        "UID" => j.uid.to_string(),
        "User" => {
            if step.is_none() {
                j.user.clone()
            } else {
                String::new()
            }
        }
        "WCKey" => j.wckey.clone(),
        "WorkDir" => j.work_dir.clone(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_in_any_case() {
        let f = parse_format("jobid,STATE%20,account%-30,nodelist").unwrap();
        let names: Vec<&str> = f.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["JobID", "State", "Account", "NodeList"]);
        assert_eq!(f[0].width, -12);
        assert_eq!(f[1].width, 20);
        assert_eq!(f[2].width, -30);
        assert_eq!(f[3].width, 15);
        assert_eq!(parse_format("JobID,Bogus").unwrap_err(), "Bogus");
        assert!(parse_format(LONG_FORMAT).is_ok());
    }

    #[test]
    fn texts() {
        assert_eq!(cpu_time_text(1_500_000), "00:01.500");
        assert_eq!(cpu_time_text(61_000_000), "00:01:01");
        assert_eq!(cpu_time_text(3_700_000_000), "01:01:40");
        assert_eq!(cpu_time_text(90_000_000_000), "1-01:00:00");
        assert_eq!(kb_text(2048), "2M");
        assert_eq!(kb_text(1500), "1500K");
        assert_eq!(kb_text(0), "0");
        assert_eq!(step_suffix(-5), "batch");
        assert_eq!(step_suffix(3), "3");
    }

    #[test]
    fn states_and_ids() {
        let mut j = JobRecord {
            job_id: 20,
            state: JobState::Cancelled as i32,
            cancelled: true,
            cancelled_by: 1000,
            ..Default::default()
        };
        assert_eq!(job_state_text(&j), "CANCELLED by 1000");
        j.state = JobState::OutOfMemory as i32;
        assert_eq!(job_state_text(&j), "OUT_OF_MEMORY");
        j.state = JobState::Timeout as i32;
        assert_eq!(job_state_text(&j), "TIMEOUT");
        assert_eq!(job_id_text(&j), "20");
        j.array_job_id = 18;
        j.array_task_id = 2;
        assert_eq!(job_id_text(&j), "18_2");
        j.array_pending = "3-5".into();
        j.array_max_running = 2;
        assert_eq!(job_id_text(&j), "18_[3-5%2]");
    }

    #[test]
    fn noconvert_keeps_recorded_units() {
        use drover_proto::acct::StepRecord;
        let j = JobRecord {
            job_id: 4,
            req_mem_mb: 4096,
            req_tres: "cpu=1,mem=4G".into(),
            steps: vec![StepRecord {
                max_rss_kb: 2048,
                ..Default::default()
            }],
            ..Default::default()
        };
        let group = |g: u32| g.to_string();
        let mut ctx = Ctx {
            now: 0,
            group: &group,
            noconvert: false,
        };
        let step = Row::Step(&j, &j.steps[0]);
        assert_eq!(value("MaxRSS", step, &ctx), "2M");
        assert_eq!(value("ReqMem", Row::Job(&j), &ctx), "4G");
        ctx.noconvert = true;
        assert_eq!(value("MaxRSS", step, &ctx), "2048K");
        assert_eq!(value("ReqMem", Row::Job(&j), &ctx), "4096M");
    }
}
