//! Processes: fork (refused with threads running), exec, wait, sessions
//! and signals, and the quiet spawns of Prolog/Epilog and TaskProlog.

use std::ffi::CString;
use std::os::fd::{AsRawFd, RawFd};

use super::{close, dup2, dup2_raw, errno, open, pipe_raw, strerror};

/// Tests: run `f` in a forked child and return its exit code. `f` runs in
/// the child of a multi-threaded process: it may only make
/// async-signal-safe calls (no allocation, no locks).
#[cfg(test)]
pub(crate) fn fork_and_wait(f: impl FnOnce() -> i32) -> Option<i32> {
    // SAFETY: the child only runs `f` (async-signal-safe by the contract
    // above) and leaves with _exit; the parent reaps it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(f());
        }
        if pid < 0 {
            return None;
        }
        let mut st = 0;
        while libc::waitpid(pid, &mut st, 0) < 0 && errno() == libc::EINTR {}
        libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st))
    }
}

/// `waitpid(pid, flags)`: `Some((pid, status))` for a child that changed
/// state, `None` when WNOHANG found none; the error is the errno.
pub fn waitpid(pid: i32, flags: i32) -> Result<Option<(i32, i32)>, i32> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, flags) };
    match r {
        r if r > 0 => Ok(Some((r, status))),
        0 => Ok(None),
        _ => Err(errno()),
    }
}

/// Detach: fork, the parent leaves at once (exit 0), the child starts a
/// new session with standard input on `null` and output and error on
/// `out`. Only before any thread is started.
pub fn detach_process(null: &impl AsRawFd, out: &impl AsRawFd) -> Result<(), String> {
    if threads() > 1 {
        return Err("cannot detach: threads are already running".into());
    }
    // SAFETY: the process is single-threaded (checked above); the parent
    // leaves with _exit, running nothing of ours.
    unsafe {
        match libc::fork() {
            -1 => return Err(format!("fork: {}", std::io::Error::last_os_error())),
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
    }
    let _ = dup2(null, 0);
    let _ = dup2(out, 1);
    let _ = dup2(out, 2);
    Ok(())
}

/// How many threads this process has (1 when /proc cannot tell).
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count().max(1))
}

/// Start a new session (setsid); harmless when already a group leader.
pub fn setsid() {
    // SAFETY: setsid takes no arguments and touches no memory.
    unsafe {
        libc::setsid();
    }
}

/// Become a child subreaper: orphaned descendants are re-parented here.
pub fn set_child_subreaper() {
    // SAFETY: prctl with integer arguments only sets a process flag.
    unsafe {
        libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Resource usage of the reaped children (getrusage(RUSAGE_CHILDREN)).
pub fn children_rusage() -> libc::rusage {
    // SAFETY: getrusage writes into a zeroed (valid) struct.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    }
}

/// Which side of a [`fork`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    Child,
    Parent(i32),
}

/// fork(2), for a single-threaded process only (the supervisor, the fork
/// server, a daemon before its runtime): refused when other threads run, so
/// that the child may use anything (allocate, lock) until it execs or exits.
pub fn fork() -> std::io::Result<Forked> {
    if threads() > 1 {
        return Err(std::io::Error::other(
            "fork refused: the process has several threads",
        ));
    }
    // SAFETY: the process is single-threaded (checked above), so the child
    // is a full copy in a consistent state.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Leave this process now with `code`, running no destructor and no
/// exit handler (a forked child that did not exec).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe { libc::_exit(code) }
}

/// Standard input on /dev/null (the old descriptor 0 closed with it).
pub fn stdin_to_dev_null() {
    // SAFETY: descriptor calls on fds this process owns; the path is a
    // NUL-terminated literal.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        } else {
            libc::close(0);
        }
    }
}

/// NUL-terminated strings and the NULL-terminated pointer array execve(2)
/// takes, made before a fork so that the child allocates nothing.
pub struct CStrArray {
    strings: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

impl CStrArray {
    pub fn new(strings: Vec<CString>) -> CStrArray {
        let mut ptrs: Vec<*const libc::c_char> = strings.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        CStrArray { strings, ptrs }
    }

    pub fn strings(&self) -> &[CString] {
        &self.strings
    }

    /// The NULL-terminated pointer array, valid while `self` lives.
    pub(super) fn as_ptr(&self) -> *const *const libc::c_char {
        self.ptrs.as_ptr()
    }
}

/// execve(2): returns only on failure, with the errno.
pub fn execve(path: &std::ffi::CStr, argv: &CStrArray, envp: &CStrArray) -> i32 {
    // SAFETY: path is NUL-terminated; both arrays are NULL-terminated and
    // point into CStrings that `argv` and `envp` keep alive.
    unsafe {
        libc::execve(path.as_ptr(), argv.ptrs.as_ptr(), envp.ptrs.as_ptr());
    }
    errno()
}

/// setpgid(2) (0, 0: lead a new group).
pub fn setpgid(pid: i32, pgid: i32) {
    // SAFETY: integer arguments only.
    unsafe {
        libc::setpgid(pid, pgid);
    }
}

/// Before exec: no signal blocked, and signals 1 to `below - 1` (but
/// SIGKILL and SIGSTOP) at their default action. Async-signal-safe.
pub fn reset_signals(below: i32) {
    // SAFETY: sigset_t is plain data the libc calls initialise; signal
    // takes integers.
    unsafe {
        // Handlers first: a signal let through before would run the
        // parent's handler (on the parent's memory, after spawn_shared).
        for sig in 1..below {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// The stack of a [`spawn_shared`] child (its lowest page the guard; a
/// multiple of any page size).
const SHARED_CHILD_STACK: usize = 256 * 1024;

/// Start a child that shares this process's memory until it execs
/// (clone(2) with `CLONE_VM | CLONE_VFORK`, as posix_spawn does): the
/// kernel copies no page table, the child takes no copy-on-write fault and
/// has no copy of the memory to tear down at exec, and this process takes
/// none afterwards either. The caller is suspended until the child has
/// exec'd or exited; what the child wrote to memory is then seen here.
///
/// `child` runs on a stack of its own, with every signal at its default
/// action (signals 1 to 64) and none blocked. It may only make system
/// calls on memory prepared before (no allocation, no lock, no
/// thread-local state) and then exec; when it returns, the child exits
/// 127. Returns the child's pid. Refused when other threads run (the
/// libc's set*id calls would act on them too).
pub fn spawn_shared(child: &mut dyn FnMut()) -> std::io::Result<i32> {
    if threads() > 1 {
        return Err(std::io::Error::other(
            "spawn refused: the process has several threads",
        ));
    }
    // SAFETY: sysconf takes an integer and reads a constant.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    // The stack: an anonymous private mapping owned by this function,
    // unmapped below once the child no longer runs on it (CLONE_VFORK:
    // clone returns after the child's exec or exit); its lowest page is the
    // guard. `arg` points at a live `&mut dyn FnMut()` for the child's
    // whole life (the caller is suspended meanwhile).
    // SAFETY: as above; the signal masks are plain data.
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            SHARED_CHILD_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        libc::mprotect(base, page, libc::PROT_NONE);
        let top = base.cast::<u8>().add(SHARED_CHILD_STACK).cast();
        // No handler of ours may run in the child: everything blocked
        // until it has put every handler back to the default.
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let mut arg: &mut dyn FnMut() = child;
        let pid = libc::clone(
            run_shared_child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&mut arg as *mut &mut dyn FnMut()).cast(),
        );
        let err = std::io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        libc::munmap(base, SHARED_CHILD_STACK);
        if pid < 0 {
            return Err(err);
        }
        Ok(pid)
    }
}

/// The child side of [`spawn_shared`].
extern "C" fn run_shared_child(arg: *mut libc::c_void) -> libc::c_int {
    reset_signals(65);
    // SAFETY: `arg` is the `&mut dyn FnMut()` spawn_shared passed; the only
    // other user of it, the caller, is suspended until this child execs or
    // exits.
    let child = unsafe { &mut *arg.cast::<&mut dyn FnMut()>() };
    child();
    exit_now(127)
}

/// chdir(2) on a C path; the errno on failure.
pub fn chdir(path: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: path is NUL-terminated for the call's duration.
    if unsafe { libc::chdir(path.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// The child side of a fork for exec: it makes only async-signal-safe
/// calls, so it is sound even in the child of a multi-threaded process.
/// `child` execs; when it returns (the exec failed) the child exits 127.
fn fork_for_exec(child: impl FnOnce()) -> Result<i32, i32> {
    // SAFETY: the child runs `child`, which (for every caller in this
    // module) only makes async-signal-safe calls on memory prepared before
    // the fork, then leaves with _exit.
    match unsafe { libc::fork() } {
        -1 => Err(errno()),
        0 => {
            child();
            exit_now(127)
        }
        pid => Ok(pid),
    }
}

/// Start `prog` (no arguments, environment `envp`) in a process group of
/// its own, with every signal at its default, standard streams on
/// /dev/null and `/` as its directory (Prolog/Epilog). Its pid or the errno
/// of the fork; a program that cannot be run exits 127.
pub fn spawn_quiet(prog: &std::ffi::CStr, envp: &CStrArray) -> Result<i32, i32> {
    let argv = CStrArray::new(vec![prog.to_owned()]);
    fork_for_exec(|| {
        reset_signals(32);
        setpgid(0, 0);
        if let Ok(null) = open(c"/dev/null", libc::O_RDWR, 0) {
            let _ = dup2_raw(null, 0);
            let _ = dup2_raw(null, 1);
            let _ = dup2_raw(null, 2);
        }
        let _ = chdir(c"/");
        execve(prog, &argv, envp);
    })
}

/// Start `prog` (no arguments, environment `envp`) with its standard
/// output on a pipe: its pid and the pipe's read end (close it with
/// [`close`]). A program that cannot be run exits 127.
pub fn spawn_stdout_to_pipe(
    prog: &std::ffi::CStr,
    envp: &CStrArray,
) -> Result<(i32, RawFd), String> {
    let argv = CStrArray::new(vec![prog.to_owned()]);
    let (rd, wr) = pipe_raw().map_err(|e| format!("pipe: {}", strerror(e)))?;
    let pid = fork_for_exec(|| {
        let _ = dup2_raw(wr, 1);
        execve(prog, &argv, envp);
    });
    close(wr);
    match pid {
        Ok(pid) => Ok((pid, rd)),
        Err(e) => {
            close(rd);
            Err(format!("fork: {}", strerror(e)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit code of a reaped child, or `fail`.
    fn exit_code(pid: i32, fail: i32) -> i32 {
        match waitpid(pid, 0) {
            Ok(Some((_, st))) if libc::WIFEXITED(st) => libc::WEXITSTATUS(st),
            _ => fail,
        }
    }

    #[test]
    fn a_shared_child_runs_on_the_callers_memory_then_execs() {
        // spawn_shared wants a single-threaded caller: a forked child of
        // the test. (Its thread count is read from /proc, which allocates:
        // glibc's fork leaves malloc usable in the child.)
        let argv = CStrArray::new(vec![c"/bin/sh".into(), c"-c".into(), c"exit 5".into()]);
        let envp = CStrArray::new(Vec::new());
        let code = fork_and_wait(|| {
            // SAFETY: sigset_t is plain data the libc calls initialise.
            let blocked = |sig: i32| unsafe {
                let mut cur: libc::sigset_t = std::mem::zeroed();
                libc::sigprocmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
                libc::sigismember(&cur, sig) == 1
            };
            // SAFETY: as above; SIGUSR1 blocked here, in the caller.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGUSR1);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            }
            // What the child writes, the caller reads; a child that
            // returns exits 127; it starts with nothing blocked.
            let (mut seen, mut child_blocked) = (0, true);
            let Ok(pid) = spawn_shared(&mut || {
                seen = 7;
                child_blocked = blocked(libc::SIGUSR1) || blocked(libc::SIGTERM);
            }) else {
                return 1;
            };
            if seen != 7 || child_blocked {
                return 2;
            }
            if exit_code(pid, -1) != 127 {
                return 3;
            }
            // The caller's own mask is back.
            if !blocked(libc::SIGUSR1) || blocked(libc::SIGTERM) {
                return 4;
            }
            // An exec'd child: the caller resumes once it has exec'd.
            let mut failed = 0;
            let Ok(pid) = spawn_shared(&mut || failed = execve(c"/bin/sh", &argv, &envp)) else {
                return 5;
            };
            if failed != 0 || exit_code(pid, -1) != 5 {
                return 6;
            }
            0
        });
        assert_eq!(code, Some(0));
        // With the test harness's threads running it is refused.
        assert!(threads() > 1);
        assert!(spawn_shared(&mut || {}).is_err());
    }
}
