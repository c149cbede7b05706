//! A job's final status: the `JOBDIR/status` file (key=value lines, written
//! atomically by the supervisor) and the `done ...` line the supervisor
//! sends to `wait` clients. Shared by the supervisor and the agent.

use std::path::Path;

/// File names inside a job directory.
pub const LAUNCH_FILE: &str = "launch.pb";
pub const SCRIPT_FILE: &str = "script";
pub const STATUS_FILE: &str = "status";
pub const LOG_FILE: &str = "stepd.log";

/// How a job ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobStatus {
    /// Exit status of the script (0-255); 0 when killed by a signal.
    pub exit_code: i32,
    /// Signal that killed the script; 0 = none.
    pub signal: i32,
    /// Terminated because its time limit passed.
    pub timeout: bool,
    /// The script never started; `failure` says why.
    pub launch_failed: bool,
    pub failure: String,
    pub cpu_time_usec: u64,
    pub max_rss_kb: u64,
    /// Unix seconds.
    pub end_time: i64,
    /// The kernel's OOM killer killed a process of the job (cgroup counter).
    pub oom: bool,
    /// The Prolog failed: the script never ran.
    pub prolog_failed: bool,
    /// The Epilog failed after the job.
    pub epilog_failed: bool,
    /// The node could not set the job up (`failure` says why): the node is
    /// at fault, not the job, and is drained with that reason.
    pub node_failed: bool,
}

fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect()
}

fn flag(b: bool) -> u8 {
    u8::from(b)
}

impl JobStatus {
    /// A status for a launch that failed before the script ran.
    pub fn launch_failure(reason: &str, end_time: i64) -> JobStatus {
        JobStatus {
            exit_code: 1,
            launch_failed: true,
            failure: one_line(reason),
            end_time,
            ..Default::default()
        }
    }

    /// `key=value` lines, as stored in `JOBDIR/status`.
    pub fn to_text(&self) -> String {
        format!(
            "exit_code={}\nsignal={}\ntimeout={}\nlaunch_failed={}\ncpu_time_usec={}\nmax_rss_kb={}\nend_time={}\noom={}\nprolog_failed={}\nepilog_failed={}\nnode_failed={}\nfailure={}\n",
            self.exit_code,
            self.signal,
            flag(self.timeout),
            flag(self.launch_failed),
            self.cpu_time_usec,
            self.max_rss_kb,
            self.end_time,
            flag(self.oom),
            flag(self.prolog_failed),
            flag(self.epilog_failed),
            flag(self.node_failed),
            one_line(&self.failure)
        )
    }

    /// Parse the status file; unknown keys are ignored, a malformed number is an error.
    pub fn parse(text: &str) -> Result<JobStatus, String> {
        let mut st = JobStatus::default();
        let mut seen_exit = false;
        for line in text.lines() {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let bad = |_| format!("bad value for {k}: {v:?}");
            match k {
                "exit_code" => {
                    st.exit_code = v.trim().parse().map_err(bad)?;
                    seen_exit = true;
                }
                "signal" => st.signal = v.trim().parse().map_err(bad)?,
                "timeout" => st.timeout = v.trim() == "1",
                "launch_failed" => st.launch_failed = v.trim() == "1",
                "cpu_time_usec" => st.cpu_time_usec = v.trim().parse().map_err(bad)?,
                "max_rss_kb" => st.max_rss_kb = v.trim().parse().map_err(bad)?,
                "end_time" => st.end_time = v.trim().parse().map_err(bad)?,
                "oom" => st.oom = v.trim() == "1",
                "prolog_failed" => st.prolog_failed = v.trim() == "1",
                "epilog_failed" => st.epilog_failed = v.trim() == "1",
                "node_failed" => st.node_failed = v.trim() == "1",
                "failure" => st.failure = v.to_string(),
                _ => {}
            }
        }
        if !seen_exit {
            return Err("no exit_code".into());
        }
        Ok(st)
    }

    /// Bits of the FLAGS field of the `done` line.
    fn flags(&self) -> u32 {
        u32::from(self.oom)
            | u32::from(self.prolog_failed) << 1
            | u32::from(self.epilog_failed) << 2
            | u32::from(self.node_failed) << 3
    }

    /// The reply to `wait`: `done EXIT SIGNAL TIMEOUT CPU_USEC MAXRSS_KB
    /// END_TIME LAUNCH_FAILED FLAGS [FAILURE...]` (FLAGS: 1 oom, 2 prolog
    /// failed, 4 epilog failed, 8 the node failed).
    pub fn done_line(&self) -> String {
        let mut s = format!(
            "done {} {} {} {} {} {} {} {}",
            self.exit_code,
            self.signal,
            flag(self.timeout),
            self.cpu_time_usec,
            self.max_rss_kb,
            self.end_time,
            flag(self.launch_failed),
            self.flags()
        );
        if !self.failure.is_empty() {
            s.push(' ');
            s.push_str(&one_line(&self.failure));
        }
        s.push('\n');
        s
    }

    /// Parse a `done ...` line (with or without the trailing newline).
    pub fn parse_done_line(line: &str) -> Option<JobStatus> {
        let line = line.trim_end_matches(['\n', '\r']);
        let rest = line.strip_prefix("done ")?;
        let mut parts = rest.splitn(9, ' ');
        let mut next = || parts.next();
        let exit_code = next()?.parse().ok()?;
        let signal = next()?.parse().ok()?;
        let timeout = next()? == "1";
        let cpu_time_usec = next()?.parse().ok()?;
        let max_rss_kb = next()?.parse().ok()?;
        let end_time = next()?.parse().ok()?;
        let launch_failed = next()? == "1";
        let flags: u32 = next()?.parse().ok()?;
        let failure = next().unwrap_or("").to_string();
        Some(JobStatus {
            exit_code,
            signal,
            timeout,
            launch_failed,
            failure,
            cpu_time_usec,
            max_rss_kb,
            end_time,
            oom: flags & 1 != 0,
            prolog_failed: flags & 2 != 0,
            epilog_failed: flags & 4 != 0,
            node_failed: flags & 8 != 0,
        })
    }

    /// Write `JOBDIR/status` atomically: temporary file, then rename.
    ///
    /// Not fsynced: the agent reads it after a crash of its own or of the
    /// supervisor, both of which leave the page cache. A crash of the
    /// machine leaves at most a status written a few seconds before it,
    /// for a job whose end the controller already has on disk or reports
    /// as a node failure either way; a record it tore reads as unreadable
    /// and is reported as the supervisor's failure
    /// (`supervisors::status_after_supervisor_gone`). (About 0.1 ms and
    /// one disk flush off every job's end.)
    pub fn write_atomic(&self, jobdir: &Path) -> std::io::Result<()> {
        let tmp = jobdir.join("status.tmp");
        // A recycled directory's is written over (`private::rewrite`).
        drover_proto::private::rewrite(&tmp, self.to_text().as_bytes())?;
        std::fs::rename(&tmp, jobdir.join(STATUS_FILE))
    }

    /// Read `JOBDIR/status`; Ok(None) when there is none.
    pub fn read(jobdir: &Path) -> Result<Option<JobStatus>, String> {
        match std::fs::read_to_string(jobdir.join(STATUS_FILE)) {
            Ok(text) => JobStatus::parse(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> JobStatus {
        JobStatus {
            exit_code: 3,
            signal: 0,
            timeout: true,
            launch_failed: false,
            failure: String::new(),
            cpu_time_usec: 12345,
            max_rss_kb: 2048,
            end_time: 1_700_000_000,
            oom: true,
            prolog_failed: false,
            epilog_failed: true,
            node_failed: true,
        }
    }

    #[test]
    fn text_round_trip() {
        let s = sample();
        assert_eq!(JobStatus::parse(&s.to_text()).unwrap(), s);
        let f = JobStatus::launch_failure("chdir(/nope): No such file or directory\nx", 5);
        let back = JobStatus::parse(&f.to_text()).unwrap();
        assert_eq!(back.failure, "chdir(/nope): No such file or directory x");
        assert!(back.launch_failed);
        assert_eq!(back.exit_code, 1);
        assert!(JobStatus::parse("").is_err());
        assert!(JobStatus::parse("exit_code=x").is_err());
        assert!(JobStatus::parse("exit_code=0\nfoo=bar\nnoequals").is_ok());
    }

    #[test]
    fn done_line_round_trip() {
        let s = sample();
        assert_eq!(s.done_line(), "done 3 0 1 12345 2048 1700000000 0 13\n");
        assert_eq!(JobStatus::parse_done_line(&s.done_line()).unwrap(), s);
        let f = JobStatus::launch_failure("Could not open stdout file /x y: Permission denied", 9);
        assert_eq!(JobStatus::parse_done_line(&f.done_line()).unwrap(), f);
        assert!(JobStatus::parse_done_line("done 1 2").is_none());
        assert!(JobStatus::parse_done_line("started 5").is_none());
        assert!(JobStatus::parse_done_line("").is_none());
    }

    #[test]
    fn atomic_write_and_read() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(JobStatus::read(d.path()).unwrap(), None);
        sample().write_atomic(d.path()).unwrap();
        assert_eq!(JobStatus::read(d.path()).unwrap(), Some(sample()));
        assert!(!d.path().join("status.tmp").exists());
        // A recycled directory's longer old status is written over.
        let long = JobStatus::launch_failure(&"x".repeat(4000), 1);
        std::fs::write(d.path().join("status.tmp"), long.to_text()).unwrap();
        sample().write_atomic(d.path()).unwrap();
        assert_eq!(JobStatus::read(d.path()).unwrap(), Some(sample()));
    }
}
