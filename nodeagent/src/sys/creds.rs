//! Switching a process (or one thread) to a job's user.
//!
//! [`become_user`] is what a job's processes go through between fork and
//! exec, as slurmstepd's `_become_user` does: supplementary groups set to
//! exactly the user's list, then the gid and the uid with `setres*` (real,
//! effective and saved alike), and no capability left: permitted and
//! effective go with the uid change, ambient and inheritable are cleared
//! explicitly, and `PR_SET_KEEPCAPS` is off so nothing survives the switch.
//! The bounding set stays as it is, and `no_new_privs` is not set: Slurm
//! sets neither, and either would break set-user-ID programs (`ping`,
//! `sudo`, `newgrp`) run inside jobs. After the switch [`verify_dropped`]
//! checks that root cannot be regained; a launch fails if it can.
//!
//! Everything here is async-signal-safe and allocates nothing, so it may
//! run in the child of a multi-threaded process.

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAP_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// A failed step of the switch and its errno (0 when the step did not fail
/// but found something left over).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchError {
    pub step: &'static str,
    pub errno: i32,
}

impl SwitchError {
    fn last(step: &'static str) -> SwitchError {
        SwitchError {
            step,
            errno: std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        }
    }

    fn left(step: &'static str) -> SwitchError {
        SwitchError { step, errno: 0 }
    }

    /// The line a failed launch reports (allocates: call it where that is
    /// allowed, e.g. in the parent).
    pub fn message(&self, uid: u32) -> String {
        if self.errno == 0 {
            format!("cannot drop privileges to uid {uid}: {}", self.step)
        } else {
            let e = std::io::Error::from_raw_os_error(self.errno).to_string();
            let e = e.split(" (os error").next().unwrap_or(&e).to_string();
            format!("cannot drop privileges to uid {uid}: {}: {e}", self.step)
        }
    }
}

fn check(r: libc::c_int, step: &'static str) -> Result<(), SwitchError> {
    if r == 0 {
        Ok(())
    } else {
        Err(SwitchError::last(step))
    }
}

fn capget() -> Result<[CapData; 2], SwitchError> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two CapData records (version 3) into `data`;
    // both structs have the kernel's layout (repr(C), u32 fields).
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    if r == 0 {
        Ok(data)
    } else {
        Err(SwitchError::last("capget"))
    }
}

fn capset_empty() -> Result<(), SwitchError> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads two CapData records (version 3) from `data`.
    let r = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(SwitchError::last("capset"))
    }
}

/// Become `uid`/`gid` with exactly `groups` as supplementary groups, for
/// good (see the module's text). Only for a process that will exec or exit:
/// there is no way back. With `uid` 0 only the groups and gid change.
pub fn become_user(uid: u32, gid: u32, groups: &[u32]) -> Result<(), SwitchError> {
    // SAFETY: prctl with integer arguments only changes this process's
    // flags; setgroups reads `groups.len()` ids from a live slice; the
    // setres* calls take integers.
    unsafe {
        // Nothing carried over the uid change; no ambient capability.
        const Z: libc::c_ulong = 0;
        check(
            libc::prctl(libc::PR_SET_KEEPCAPS, Z, Z, Z, Z),
            "prctl(PR_SET_KEEPCAPS)",
        )?;
        let r = libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            Z,
            Z,
            Z,
        );
        // EINVAL: a kernel without ambient capabilities (before 4.3).
        if r != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(SwitchError::last("prctl(PR_CAP_AMBIENT_CLEAR_ALL)"));
        }
        check(libc::setgroups(groups.len(), groups.as_ptr()), "setgroups")?;
        check(libc::setresgid(gid, gid, gid), "setresgid")?;
        check(libc::setresuid(uid, uid, uid), "setresuid")?;
    }
    if uid == 0 {
        return Ok(());
    }
    // The uid change emptied the permitted and effective sets; the
    // inheritable set survives it: empty it too.
    capset_empty()?;
    verify_dropped(uid, gid)
}

/// After [`become_user`]: every uid and gid is the user's, no capability is
/// left in any set but the bounding one, and root cannot be had back.
pub fn verify_dropped(uid: u32, gid: u32) -> Result<(), SwitchError> {
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: getresuid/getresgid write three ids into live locals.
    unsafe {
        check(libc::getresuid(&mut r, &mut e, &mut s), "getresuid")?;
    }
    if (r, e, s) != (uid, uid, uid) {
        return Err(SwitchError::left("a user id other than the job's is left"));
    }
    // SAFETY: as above.
    unsafe {
        check(libc::getresgid(&mut r, &mut e, &mut s), "getresgid")?;
    }
    if (r, e, s) != (gid, gid, gid) {
        return Err(SwitchError::left("a group id other than the job's is left"));
    }
    let caps = capget()?;
    if caps
        .iter()
        .any(|c| c.effective != 0 || c.permitted != 0 || c.inheritable != 0)
    {
        return Err(SwitchError::left("capabilities are left"));
    }
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only reads a flag.
        let set = unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
                cap as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        };
        if set == 1 {
            return Err(SwitchError::left("an ambient capability is left"));
        }
    }
    // SAFETY: setuid/setgid take integers; they must fail here.
    let (su, sg) = unsafe { (libc::setuid(0), if gid != 0 { libc::setgid(0) } else { -1 }) };
    if su == 0 {
        return Err(SwitchError::left(
            "root could be regained (setuid(0) succeeded)",
        ));
    }
    if sg == 0 {
        return Err(SwitchError::left(
            "group root could be regained (setgid(0) succeeded)",
        ));
    }
    Ok(())
}

/// Switch the calling thread (only) to `uid`/`gid`/`groups`: groups and
/// gid first, while still allowed, then the effective uid (the real and
/// saved ids stay, but the thread never switches back: it ends). Raw
/// system calls, which change this thread only, unlike glibc's wrappers
/// that switch every thread.
pub fn switch_this_thread(uid: u32, gid: u32, groups: &[u32]) -> std::io::Result<()> {
    const KEEP: libc::c_long = -1;
    let check = |r: libc::c_long| {
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: raw credential system calls on this thread, with a valid
    // pointer and length for the group list.
    unsafe {
        check(libc::syscall(
            libc::SYS_setgroups,
            groups.len() as libc::c_long,
            groups.as_ptr(),
        ))?;
        check(libc::syscall(
            libc::SYS_setresgid,
            KEEP,
            libc::c_long::from(gid),
            KEEP,
        ))?;
        check(libc::syscall(
            libc::SYS_setresuid,
            KEEP,
            libc::c_long::from(uid),
            KEEP,
        ))?;
    }
    Ok(())
}

/// The supplementary groups a job of `uid` runs with, as `initgroups`
/// gives them: the groups the group database lists the user in, primary
/// `gid` included. A uid this node's password database does not know
/// keeps the groups its credential carried (the submitting process's),
/// with `gid` added when missing.
pub fn job_groups(uid: u32, gid: u32, carried: &[u32]) -> Vec<u32> {
    job_groups_of(
        drover_proto::sysdb::passwd_by_uid(uid).as_ref(),
        gid,
        carried,
    )
}

/// [`job_groups`] for a user already looked up (`None`: unknown uid).
pub fn job_groups_of(
    pw: Option<&drover_proto::sysdb::Passwd>,
    gid: u32,
    carried: &[u32],
) -> Vec<u32> {
    match pw {
        Some(pw) => drover_proto::sys::grouplist(&pw.name, gid),
        None => {
            let mut g = vec![gid];
            g.extend(carried.iter().copied().filter(|&x| x != gid));
            g
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_well() {
        let e = SwitchError {
            step: "setresuid",
            errno: libc::EPERM,
        };
        assert_eq!(
            e.message(1000),
            "cannot drop privileges to uid 1000: setresuid: Operation not permitted"
        );
        assert_eq!(
            SwitchError::left("root could be regained (setuid(0) succeeded)").message(7),
            "cannot drop privileges to uid 7: root could be regained (setuid(0) succeeded)"
        );
    }

    #[test]
    fn groups_come_from_the_group_database() {
        assert_eq!(job_groups(0, 0, &[5, 6]).first(), Some(&0));
        // An unknown uid keeps what its credential carried.
        assert_eq!(job_groups(4_000_000_001, 77, &[5, 77]), vec![77, 5]);
    }

    /// In a forked child (the only safe place): the switch leaves nothing
    /// behind, and the check agrees.
    #[test]
    fn a_switched_child_cannot_get_root_back() {
        if !drover_proto::sys::is_root() {
            return; // nothing to drop
        }
        let status = super::super::fork_and_wait(|| match become_user(65534, 65534, &[65534]) {
            Ok(()) => 0,
            Err(_) => 1,
        });
        assert_eq!(status, Some(0));
    }

    /// A switch of the effective uid only (root kept as real and saved
    /// uid, as a thread-only switch does) is caught: root could come back.
    #[test]
    fn a_half_switch_is_refused() {
        if !drover_proto::sys::is_root() {
            return;
        }
        let status = super::super::fork_and_wait(|| {
            if switch_this_thread(65534, 65534, &[65534]).is_err() {
                return 2;
            }
            match verify_dropped(65534, 65534) {
                Err(e) if e.step == "a user id other than the job's is left" => 1,
                Err(_) => 3,
                Ok(()) => 0,
            }
        });
        assert_eq!(status, Some(1));
    }
}
