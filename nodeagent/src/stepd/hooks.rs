//! Prolog, Epilog and TaskProlog, run as Slurm runs them: Prolog and
//! Epilog as root on the node with the job's identity in the environment
//! (`SLURM_JOB_ID`, `SLURM_JOB_USER`, ...); TaskProlog as the user just
//! before the script, its `export`/`unset`/`print` lines applied to the
//! script's environment and output.

use std::ffi::CString;
use std::time::{Duration, Instant};

use drover_proto::LaunchRequest;

use super::sys::{self, cstring, strerror, CStrArray};

/// Node-wide hook settings, written by the agent as `JOBDIR/hooks`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hooks {
    pub prolog: String,
    pub epilog: String,
    pub task_prolog: String,
    /// PrologEpilogTimeout seconds; 0 = wait for ever (Slurm's default).
    pub timeout: u64,
    pub cluster: String,
}

pub const HOOKS_FILE: &str = "hooks";

impl Hooks {
    pub fn is_empty(&self) -> bool {
        self.prolog.is_empty() && self.epilog.is_empty() && self.task_prolog.is_empty()
    }
    pub fn to_text(&self) -> String {
        format!(
            "prolog={}\nepilog={}\ntask_prolog={}\ntimeout={}\ncluster={}\n",
            self.prolog, self.epilog, self.task_prolog, self.timeout, self.cluster
        )
    }
    pub fn parse(text: &str) -> Hooks {
        let mut h = Hooks::default();
        for l in text.lines() {
            let Some((k, v)) = l.split_once('=') else {
                continue;
            };
            match k {
                "prolog" => h.prolog = v.to_string(),
                "epilog" => h.epilog = v.to_string(),
                "task_prolog" => h.task_prolog = v.to_string(),
                "timeout" => h.timeout = v.parse().unwrap_or(0),
                "cluster" => h.cluster = v.to_string(),
                _ => {}
            }
        }
        h
    }
}

/// The environment of Prolog/Epilog (Slurm's `prolog_slurmd` context).
pub fn hook_env(
    req: &LaunchRequest,
    hooks: &Hooks,
    context: &str,
    exit: Option<(i32, i32)>,
) -> Vec<(String, String)> {
    let info = req.info.clone().unwrap_or_default();
    let spec = req.spec.clone().unwrap_or_default();
    let mut env = vec![
        (
            "PATH".to_string(),
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
        ),
        ("SLURM_SCRIPT_CONTEXT".into(), context.to_string()),
        ("SLURM_JOB_ID".into(), req.job_id.to_string()),
        ("SLURM_JOBID".into(), req.job_id.to_string()),
        ("SLURM_JOB_UID".into(), req.uid.to_string()),
        ("SLURM_JOB_GID".into(), req.gid.to_string()),
        ("SLURM_JOB_USER".into(), req.user_name.clone()),
        ("SLURM_JOB_NODELIST".into(), info.nodes.clone()),
        ("SLURM_JOB_PARTITION".into(), info.partition.clone()),
        ("SLURM_JOB_ACCOUNT".into(), info.account.clone()),
        (
            "SLURM_JOB_NAME".into(),
            if spec.name.is_empty() {
                info.name.clone()
            } else {
                spec.name.clone()
            },
        ),
        (
            "SLURM_JOB_WORK_DIR".into(),
            if spec.work_dir.is_empty() {
                info.work_dir.clone()
            } else {
                spec.work_dir.clone()
            },
        ),
        ("SLURMD_NODENAME".into(), req.node.clone()),
        (
            "SLURM_CLUSTER_NAME".into(),
            if hooks.cluster.is_empty() {
                req.cluster_name.clone()
            } else {
                hooks.cluster.clone()
            },
        ),
        ("SLURM_JOB_CONSTRAINTS".into(), spec.constraint.clone()),
        ("SLURM_RESTART_COUNT".into(), info.restart_count.to_string()),
    ];
    if info.array_job_id != 0 {
        env.push(("SLURM_ARRAY_JOB_ID".into(), info.array_job_id.to_string()));
        env.push(("SLURM_ARRAY_TASK_ID".into(), info.array_task_id.to_string()));
    }
    let alloc = crate::allocation::of(req);
    if let Some(a) = crate::allocation::on_node(&alloc, &req.node) {
        let mut gpus: Vec<u32> = a
            .gres
            .iter()
            .filter(|g| g.name == "gpu")
            .flat_map(|g| g.indices.iter().copied())
            .collect();
        gpus.sort_unstable();
        if !gpus.is_empty() {
            let list = gpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",");
            env.push(("SLURM_JOB_GPUS".into(), list.clone()));
            env.push(("CUDA_VISIBLE_DEVICES".into(), list));
        }
    }
    if let Some((code, sig)) = exit {
        // Slurm's wait-status style: exit code in the high byte.
        env.push((
            "SLURM_JOB_EXIT_CODE".into(),
            ((code << 8) | sig).to_string(),
        ));
        env.push(("SLURM_JOB_EXIT_CODE2".into(), format!("{code}:{sig}")));
    }
    env
}

/// Run a Prolog/Epilog program as root with stdin/stdout/stderr on
/// /dev/null; `Ok(())` on exit 0, else why not.
pub fn run_root(program: &str, env: &[(String, String)], timeout: u64) -> Result<(), String> {
    let prog = cstring(program)?;
    let envc: Vec<CString> = env
        .iter()
        .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
        .collect();
    let pid = sys::spawn_quiet(&prog, &CStrArray::new(envc))
        .map_err(|e| format!("fork: {}", strerror(e)))?;
    let status = wait_with_timeout(pid, timeout);
    match status {
        None => Err(format!("{program} timed out after {timeout}s")),
        Some(st) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0 => Ok(()),
        Some(st) if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 127 => {
            Err(format!("{program} could not be run (exit code 127)"))
        }
        Some(st) if libc::WIFEXITED(st) => Err(format!(
            "{program} exited with exit code {}",
            libc::WEXITSTATUS(st)
        )),
        Some(st) => Err(format!(
            "{program} was killed by signal {}",
            libc::WTERMSIG(st)
        )),
    }
}

/// Wait for `pid`; on timeout kill its process group and return None.
fn wait_with_timeout(pid: i32, timeout: u64) -> Option<i32> {
    let deadline = (timeout > 0).then(|| Instant::now() + Duration::from_secs(timeout));
    let mut delay = Duration::from_millis(1);
    loop {
        let flags = if deadline.is_some() { libc::WNOHANG } else { 0 };
        match sys::waitpid(pid, flags) {
            Ok(Some((r, st))) if r == pid => return Some(st),
            Err(e) if e != libc::EINTR => return Some(0),
            _ => {}
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                // The hook's own process group, then reap it.
                let _ = drover_proto::sys::kill(-pid, libc::SIGKILL);
                let _ = sys::waitpid(pid, 0);
                return None;
            }
            std::thread::sleep(delay);
            delay = (delay * 2).min(Duration::from_millis(50));
        }
    }
}

/// What TaskProlog's standard output asks for (pure parser).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TaskPrologOutput {
    pub export: Vec<(String, String)>,
    pub unset: Vec<String>,
    pub print: Vec<String>,
}

pub fn parse_task_prolog(out: &str) -> TaskPrologOutput {
    let mut o = TaskPrologOutput::default();
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("export ") {
            if let Some((k, v)) = rest.trim_start().split_once('=') {
                if !k.is_empty() && !k.contains(char::is_whitespace) {
                    o.export.push((k.to_string(), v.to_string()));
                }
            }
        } else if let Some(rest) = line.strip_prefix("unset ") {
            let k = rest.trim();
            if !k.is_empty() {
                o.unset.push(k.to_string());
            }
        } else if let Some(rest) = line.strip_prefix("print ") {
            o.print.push(rest.to_string());
        }
    }
    o
}

/// Run TaskProlog in the script's child (already the user, environment
/// built): returns its standard output (at most 64 KiB).
pub fn run_task_prolog(program: &CString, envp: &CStrArray) -> Result<String, String> {
    let (pid, rd) = sys::spawn_stdout_to_pipe(program, envp)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match sys::read_once(rd, &mut buf) {
            Err(libc::EINTR) => continue,
            Err(_) | Ok(0) => break,
            Ok(n) => n,
        };
        if out.len() < 64 * 1024 {
            out.extend_from_slice(&buf[..n]);
        }
    }
    sys::close(rd);
    let st = loop {
        match sys::waitpid(pid, 0) {
            Err(libc::EINTR) => continue,
            Ok(Some((_, st))) => break st,
            _ => break 0,
        }
    };
    if libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 127 {
        return Err(format!(
            "TaskProlog {} could not be run",
            program.to_string_lossy()
        ));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_prolog_lines() {
        let o = parse_task_prolog(
            "export A=1\nexport B=x=y\nunset HOME\nprint hello world\ngarbage\nexport bad key=1\n",
        );
        assert_eq!(
            o.export,
            vec![("A".into(), "1".into()), ("B".into(), "x=y".into())]
        );
        assert_eq!(o.unset, vec!["HOME".to_string()]);
        assert_eq!(o.print, vec!["hello world".to_string()]);
    }

    #[test]
    fn hooks_file_round_trip() {
        let h = Hooks {
            prolog: "/etc/drover/prolog".into(),
            epilog: String::new(),
            task_prolog: "/x".into(),
            timeout: 30,
            cluster: "c".into(),
        };
        assert_eq!(Hooks::parse(&h.to_text()), h);
        assert!(Hooks::default().is_empty());
    }

    #[test]
    fn root_hooks_report_failures() {
        let env = vec![("X".to_string(), "1".to_string())];
        assert!(run_root("/bin/true", &env, 0).is_ok());
        let e = run_root("/bin/false", &env, 0).unwrap_err();
        assert!(e.contains("exit code 1"), "{e}");
        let e = run_root("/nonexistent/prolog", &env, 0).unwrap_err();
        assert!(e.contains("could not be run"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("slow");
        std::fs::write(&p, "#!/bin/sh\nsleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = run_root(p.to_str().unwrap(), &env, 1).unwrap_err();
        assert!(e.contains("timed out"), "{e}");
    }
}
