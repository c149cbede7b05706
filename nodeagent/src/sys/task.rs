//! What a step's task does between fork and exec (in the agent, a
//! multi-threaded process: only async-signal-safe calls on memory prepared
//! before the fork), and the pseudo-terminal of `srun --pty`.

use std::ffi::CString;
use std::fs::File;
use std::os::fd::FromRawFd;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use super::{errno, write_fd};

/// A task's binding, applied between fork and exec.
#[derive(Default)]
pub struct TaskBind {
    pub cpus: Option<libc::cpu_set_t>,
    /// Written to the task's stderr first (verbose lines, Slurm's errors):
    /// the part before the pid, the part after it (pid omitted when empty).
    pub before_pid: Vec<u8>,
    pub after_pid: Vec<u8>,
    pub after_pid_failed: Vec<u8>,
}

/// The kernel's CPU set for `ids` (wrapping on hosts with fewer CPUs than
/// the node is configured with, as the cpuset does).
pub fn cpu_set(ids: &[u32], host_cpus: u32) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in ids {
        let c = (c % host_cpus.max(1)) as usize;
        if c < libc::CPU_SETSIZE as usize {
            // SAFETY: c is below CPU_SETSIZE, inside the set.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    set
}

/// A task's working directory and the lines to print when it cannot be
/// entered, made before the fork (the child only calls chdir and write).
#[derive(Clone)]
pub struct ChdirPlan {
    pub dir: CString,
    pub tmp: CString,
    /// (errno, line) for the usual reasons, then a line for any other.
    pub lines: Arc<Vec<(i32, String)>>,
    pub other: Arc<String>,
}

impl ChdirPlan {
    /// In the child: enter the directory, else say so on stderr and go to /tmp.
    pub fn enter(&self) {
        if let Err(e) = self.try_enter() {
            write_fd(2, self.line(e).as_bytes());
        }
    }

    /// In the child: enter the directory, else go to /tmp and return why
    /// the directory could not be entered (the errno).
    pub fn try_enter(&self) -> Result<(), i32> {
        if super::chdir(&self.dir).is_ok() {
            return Ok(());
        }
        let e = errno();
        let _ = super::chdir(&self.tmp);
        Err(e)
    }

    /// The line that says the directory could not be entered for `errno`.
    pub fn line(&self, errno: i32) -> &str {
        self.lines
            .iter()
            .find(|(n, _)| *n == errno)
            .map_or(self.other.as_str(), |(_, l)| l.as_str())
    }
}

/// Everything a task's child does before exec, prepared before the fork.
pub struct TaskStart {
    /// The terminal on standard input becomes the controlling one.
    pub ctty: bool,
    /// Join files (`tasks` on v1, `cgroup.procs` on v2) to write the task
    /// into.
    pub join: Vec<CString>,
    pub bind: TaskBind,
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    pub chdir: ChdirPlan,
    /// The errno that says the switch to the user left a way back to root.
    pub privileges_left: i32,
    /// The task's whole environment, its pid written in first
    /// (`SLURM_TASK_PID`).
    pub envp: super::task_pid::Envp,
}

/// Decimal digits of `n` without allocating (itoa formats into a buffer
/// on the stack).
fn write_pid(fd: i32, n: i32) {
    write_fd(fd, itoa::Buffer::new().format(n).as_bytes());
}

/// Have `cmd`'s child do `t` between fork and exec: a new session (and the
/// terminal as its controlling one), the task's cgroups, its CPU binding
/// and the lines about it, the job's user (see [`super::creds`]) and its
/// directory.
pub fn set_task_start(cmd: &mut tokio::process::Command, t: TaskStart) {
    // SAFETY: the closure only makes async-signal-safe system calls on
    // memory prepared before the fork (`t`, moved in) and allocates
    // nothing: write_fd, itoa on the stack, become_user (see creds).
    unsafe {
        cmd.pre_exec(move || {
            t.envp.install();
            libc::setsid();
            if t.ctty {
                // The terminal becomes the session's controlling tty.
                libc::ioctl(0, libc::TIOCSCTTY, 0);
            }
            for f in &t.join {
                if let Ok(fd) = super::open(f, libc::O_WRONLY | libc::O_CLOEXEC, 0) {
                    let _ = super::write_once(fd, b"0");
                    super::close(fd);
                }
            }
            let failed = t.bind.cpus.as_ref().is_some_and(|set| {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0
            });
            write_fd(2, &t.bind.before_pid);
            if !t.bind.after_pid.is_empty() {
                write_pid(2, libc::getpid());
                write_fd(
                    2,
                    if failed {
                        &t.bind.after_pid_failed
                    } else {
                        &t.bind.after_pid
                    },
                );
            }
            if libc::getuid() == 0 {
                // Only an errno crosses back to the parent: a switch that
                // left privileges behind says so with its own.
                super::creds::become_user(t.uid, t.gid, &t.groups).map_err(|e| {
                    std::io::Error::from_raw_os_error(match e.errno {
                        0 => t.privileges_left,
                        n => n,
                    })
                })?;
            }
            t.chdir.enter();
            Ok(())
        });
    }
}

/// A new pseudo-terminal: (master, slave), the slave owned by the user.
pub fn open_pty(uid: u32, gid: u32) -> std::io::Result<(File, File)> {
    let err = std::io::Error::last_os_error;
    // SAFETY: plain libc calls on descriptors this function owns (each
    // wrapped in a File as soon as it exists); the name buffer is
    // NUL-terminated by ptsname_r on success.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if m < 0 {
            return Err(err());
        }
        let master = File::from_raw_fd(m);
        if libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(err());
        }
        let mut name = [0 as libc::c_char; 128];
        if libc::ptsname_r(m, name.as_mut_ptr(), name.len()) != 0 {
            return Err(err());
        }
        let s = libc::open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        if s < 0 {
            return Err(err());
        }
        let slave = File::from_raw_fd(s);
        let _ = std::os::unix::fs::fchown(&slave, Some(uid), Some(gid));
        let _ = slave.set_permissions(std::fs::Permissions::from_mode(0o620));
        Ok((master, slave))
    }
}
