//! The test harness's only `unsafe` code: namespaces, terminals and
//! credential switches done in a child between fork and exec, each block
//! with its `SAFETY:` reason. (Signals, ids, device nodes, cgroups and
//! umasks: `drover_proto::sys`.)

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Have the process `cmd` starts enter a host: the network namespace
/// `netns`, new UTS and mount namespaces with `hostname`, and `src` bound
/// over `dst`.
pub fn enter_host_in_child(
    cmd: &mut Command,
    netns: RawFd,
    hostname: Vec<u8>,
    src: CString,
    dst: CString,
) {
    let slash = CString::new("/").expect("no NUL");
    // SAFETY: only system calls on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let check = |r: libc::c_int| {
                if r == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            check(libc::setns(netns, libc::CLONE_NEWNET))?;
            check(libc::unshare(libc::CLONE_NEWUTS | libc::CLONE_NEWNS))?;
            check(libc::sethostname(hostname.as_ptr().cast(), hostname.len()))?;
            check(libc::mount(
                std::ptr::null(),
                slash.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ))?;
            check(libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND,
                std::ptr::null(),
            ))
        });
    }
}

/// Move the calling thread (only) into the network namespace `fd`.
pub fn setns_net(fd: &impl AsRawFd) -> std::io::Result<()> {
    // SAFETY: setns on a namespace fd the caller holds; it changes the
    // calling thread's network namespace only.
    if unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Have the process `cmd` starts become `uid` (gid `uid`, no supplementary
/// group) as the last step before exec, after any other pre-exec hook.
pub fn become_in_child(cmd: &mut Command, uid: u32) {
    // SAFETY: only async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(uid) != 0
                || libc::setuid(uid) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Have the process `cmd` starts lead a new session whose controlling
/// terminal is its standard input.
pub fn controlling_tty_in_child(cmd: &mut Command) {
    // SAFETY: setsid and the TIOCSCTTY ioctl are async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY, 0);
            Ok(())
        });
    }
}

/// A new pseudo-terminal: (master, slave).
pub fn openpty() -> std::io::Result<(File, File)> {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors into valid pointers; the
    // other arguments may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned here only.
    Ok(unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) })
}

/// The effective user id of this process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Send `sig` to `pid` (negative: a process group).
pub fn kill(pid: i32, sig: i32) -> std::io::Result<()> {
    // SAFETY: kill takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Clock ticks per second, at least 1.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

/// Make a character device node at `path` (mode 0666) for `major:minor`.
pub use drover_proto::sys::mknod_char;

/// Have the process `cmd` starts set its umask to `mask` before it execs.
pub fn umask_in_child(cmd: &mut Command, mask: u32) {
    // SAFETY: umask(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask as libc::mode_t);
            Ok(())
        });
    }
}
