//! Prolog, Epilog and TaskProlog, run as Slurm runs them: Prolog and
//! Epilog as root on the node with the job's identity in the environment
//! (`SLURM_JOB_ID`, `SLURM_JOB_USER`, ...); TaskProlog as the user just
//! before the script, its `export`/`unset`/`print` lines applied to the
//! script's environment and output.

use std::ffi::CString;
use std::time::{Duration, Instant};

use drover_proto::LaunchRequest;

use super::sys::{cstring, errno, strerror};

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
    let argv = [prog.as_ptr(), std::ptr::null()];
    let envc: Vec<CString> = env
        .iter()
        .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
        .collect();
    let mut envp: Vec<*const libc::c_char> = envc.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());
    // SAFETY: the supervisor is single-threaded; the child only execs.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", strerror(errno())));
    }
    if pid == 0 {
        // SAFETY: plain syscalls in the child, then exec or _exit.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            for sig in 1..32 {
                if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                    libc::signal(sig, libc::SIG_DFL);
                }
            }
            libc::setpgid(0, 0);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null >= 0 {
                libc::dup2(null, 0);
                libc::dup2(null, 1);
                libc::dup2(null, 2);
            }
            libc::chdir(c"/".as_ptr());
            libc::execve(prog.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
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
        let mut st = 0;
        let flags = if deadline.is_some() { libc::WNOHANG } else { 0 };
        // SAFETY: st is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut st, flags) };
        if r == pid {
            return Some(st);
        }
        if r < 0 && errno() != libc::EINTR {
            return Some(0);
        }
        if let Some(d) = deadline {
            if Instant::now() >= d {
                // SAFETY: signalling the hook's own process group, then reaping it.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut st, 0);
                }
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
///
/// # Safety
/// Call only in a single-threaded process (the forked script child).
pub unsafe fn run_task_prolog(
    program: &CString,
    envp: &[*const libc::c_char],
) -> Result<String, String> {
    let mut fds = [0; 2];
    if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        return Err(format!("pipe: {}", strerror(errno())));
    }
    let pid = libc::fork();
    if pid < 0 {
        return Err(format!("fork: {}", strerror(errno())));
    }
    if pid == 0 {
        libc::dup2(fds[1], 1);
        let argv = [program.as_ptr(), std::ptr::null()];
        libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
        libc::_exit(127);
    }
    libc::close(fds[1]);
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len());
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        if out.len() < 64 * 1024 {
            out.extend_from_slice(&buf[..n as usize]);
        }
    }
    libc::close(fds[0]);
    let mut st = 0;
    while libc::waitpid(pid, &mut st, 0) < 0 && errno() == libc::EINTR {}
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
