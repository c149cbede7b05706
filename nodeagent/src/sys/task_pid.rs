//! `SLURM_TASK_PID` of a task or batch script: its own pid, known only in
//! the child. The environment gets a slot of [`SLOT`]'s width, and the
//! child writes its pid into it before exec (slurmstepd sets it in
//! `exec_task` the same way), without allocating, then execs with that
//! environment ([`Envp::install`] after a fork, [`Envp::exec`] also in a
//! child sharing the parent's memory).

use std::ffi::c_char;

pub const KEY: &str = "SLURM_TASK_PID";
/// Room for any pid (a `u32` has at most 10 digits).
pub const SLOT: &str = "0000000000";

/// Put the slot in `env` in place of any `SLURM_TASK_PID` it has.
pub fn reserve(env: &mut Vec<(String, String)>) {
    env.retain(|(k, _)| k != KEY);
    env.push((KEY.to_string(), SLOT.to_string()));
}

extern "C" {
    /// The process environment: what exec passes when std's `Command` was
    /// given no environment of its own.
    static mut environ: *mut *mut c_char;
}

/// A task's whole environment, made before the fork and installed in the
/// child by [`Envp::install`] (std's `Command` would set its own only
/// after `pre_exec`, too late to write the pid into it).
pub struct Envp {
    /// `KEY=value` strings (from `CString::into_raw`), then a null.
    ptrs: Vec<*mut c_char>,
}

// SAFETY: the strings are owned by the value and only written to in a
// child before exec (a forked copy, or a `spawn_shared` child while the
// parent waits), never by two threads at once.
unsafe impl Send for Envp {}
// SAFETY: as above: no method reads or writes through `&self` in the parent.
unsafe impl Sync for Envp {}

impl Envp {
    /// From `env` (entries with a NUL byte cannot be passed and are left out).
    pub fn new(env: &[(String, String)]) -> Envp {
        let mut ptrs: Vec<*mut c_char> = env
            .iter()
            .filter_map(|(k, v)| std::ffi::CString::new(format!("{k}={v}")).ok())
            .map(std::ffi::CString::into_raw)
            .collect();
        ptrs.push(std::ptr::null_mut());
        Envp { ptrs }
    }

    /// In the forked child: write its pid into the slot and make this the
    /// environment exec passes. Async-signal-safe: no allocation, no lock.
    pub fn install(&self) {
        let envp = self.ptrs.as_ptr().cast_mut();
        // SAFETY: after fork the child is single-threaded and owns a copy of
        // the strings; `envp` is null-terminated and lives until exec.
        unsafe {
            fill(envp, libc::getpid() as u32);
            *std::ptr::addr_of_mut!(environ) = envp;
        }
    }

    /// In a child started by [`spawn_shared`](super::spawn_shared) (or
    /// forked): write its pid into the slot and exec `path` with `argv` and
    /// this environment. Returns only on failure, with the errno.
    /// Async-signal-safe; unlike [`Envp::install`] it leaves `environ`
    /// alone (shared with the parent after spawn_shared).
    pub fn exec(&self, path: &std::ffi::CStr, argv: &super::CStrArray) -> i32 {
        let envp = self.ptrs.as_ptr().cast_mut();
        // SAFETY: `envp` is null-terminated and owned by `self`, which
        // outlives the call (the parent does not read it meanwhile); `path`
        // is NUL-terminated and `argv` NULL-terminated, kept alive by it.
        unsafe {
            fill(envp, libc::getpid() as u32);
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.cast());
        }
        super::errno()
    }
}

impl Drop for Envp {
    fn drop(&mut self) {
        for p in self.ptrs.drain(..).filter(|p| !p.is_null()) {
            // SAFETY: each came from CString::into_raw in `new`.
            drop(unsafe { std::ffi::CString::from_raw(p) });
        }
    }
}

/// Write `pid` into the `SLURM_TASK_PID=` entry of `envp` when its value
/// is [`SLOT`] wide.
///
/// # Safety
/// `envp` is null or a null-terminated array of NUL-terminated, writable
/// strings.
// SAFETY: an unsafe fn: its callers uphold the contract above.
pub unsafe fn fill(envp: *mut *mut c_char, pid: u32) {
    if envp.is_null() {
        return;
    }
    let key = KEY.as_bytes();
    let mut p = envp;
    // SAFETY: the caller's promise; every read stops at the first byte that
    // differs, so at a string's NUL at the latest.
    unsafe {
        while !(*p).is_null() {
            let s = (*p).cast::<u8>();
            let named = (0..key.len()).all(|i| *s.add(i) == key[i]) && *s.add(key.len()) == b'=';
            if named {
                let v = s.add(key.len() + 1);
                if !(0..SLOT.len()).all(|i| *v.add(i) == SLOT.as_bytes()[i]) {
                    return;
                }
                let mut digits = [0u8; 10];
                let mut n = pid;
                let mut len = 0;
                loop {
                    digits[len] = b'0' + (n % 10) as u8;
                    n /= 10;
                    len += 1;
                    if n == 0 {
                        break;
                    }
                }
                for i in 0..len {
                    *v.add(i) = digits[len - 1 - i];
                }
                *v.add(len) = 0;
                return;
            }
            p = p.add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{CStr, CString};

    fn run(entries: &[&str], pid: u32) -> Vec<String> {
        let owned: Vec<CString> = entries.iter().map(|e| CString::new(*e).unwrap()).collect();
        let mut raw: Vec<*mut c_char> = owned.into_iter().map(CString::into_raw).collect();
        raw.push(std::ptr::null_mut());
        // SAFETY: a null-terminated array of strings made above.
        unsafe { fill(raw.as_mut_ptr(), pid) };
        raw.pop();
        raw.into_iter()
            // SAFETY: each pointer came from CString::into_raw.
            .map(|p| unsafe { CString::from_raw(p) })
            .map(|c| CStr::to_string_lossy(&c).into_owned())
            .collect()
    }

    #[test]
    fn the_slot_gets_the_pid() {
        let mut env = vec![("SLURM_TASK_PID".to_string(), "0".to_string())];
        reserve(&mut env);
        assert_eq!(env, vec![(KEY.to_string(), SLOT.to_string())]);
        let slot = format!("{KEY}={SLOT}");
        assert_eq!(
            run(&["A=1", "SLURM_TASK_PIDX=0000000000", &slot, "B"], 4321),
            vec![
                "A=1",
                "SLURM_TASK_PIDX=0000000000",
                "SLURM_TASK_PID=4321",
                "B"
            ]
        );
        assert_eq!(run(&[&slot], 4_294_967_295)[0], "SLURM_TASK_PID=4294967295");
        assert_eq!(run(&[&slot], 0)[0], "SLURM_TASK_PID=0");
        // Not our slot: left alone.
        assert_eq!(run(&["SLURM_TASK_PID=7"], 99), vec!["SLURM_TASK_PID=7"]);
        assert_eq!(run(&["SLURM"], 99), vec!["SLURM"]);
    }
}
