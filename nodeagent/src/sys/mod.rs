//! The agent's and the supervisor's only `unsafe` code: safe wrappers over
//! system calls (no tokio, no threads), each block with its `SAFETY:` reason.
//! [`creds`] switches processes and threads to a job's user, [`task`]
//! prepares a step task's start; `fd` (descriptors, sockets, poll) and
//! `process` (fork, exec, wait) are re-exported here.

use std::ffi::CString;

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `strerror` text without Rust's " (os error N)" suffix.
pub fn strerror(e: i32) -> String {
    let s = std::io::Error::from_raw_os_error(e).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

pub fn last_error() -> String {
    strerror(errno())
}

pub fn now_secs() -> i64 {
    drover_proto::auth::now_secs()
}

pub fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"))
}

/// A user's home directory and login shell from the password database.
pub fn user_home_shell(uid: u32) -> (Option<String>, Option<String>) {
    match drover_proto::sysdb::passwd_by_uid(uid) {
        Some(p) => (Some(p.dir), Some(p.shell)),
        None => (None, None),
    }
}

/// Set the process name shown by `ps -o comm` / `top` (at most 15 bytes).
pub fn set_process_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

pub mod creds;
pub mod dirfd;
mod fd;
mod process;
pub mod task;
pub mod task_pid;

pub use fd::*;
pub use process::*;

/// (sysname, release) from uname(2).
pub fn uname() -> Option<(String, String)> {
    // SAFETY: uname fills a zeroed struct with NUL-terminated strings,
    // read while the struct lives.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return None;
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        Some((s(&u.sysname), s(&u.release)))
    }
}

/// The `bpf(2)` system call on an attribute block.
///
/// Every address the caller wrote into `attr` must point at a buffer that
/// stays alive, with the length written next to it, for the duration of
/// the call (the kernel reads and writes them).
pub(crate) fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> std::io::Result<i32> {
    // SAFETY: attr is a valid, initialised buffer of the size passed; the
    // addresses inside it are live buffers (this function's contract, kept
    // by its one caller, cgroup::bpf).
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr() as *mut libc::c_void,
            attr.len() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}
