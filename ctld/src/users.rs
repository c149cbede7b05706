//! User and group lookups through the C library (NSS), so LDAP/sssd work.

use std::ffi::{CStr, CString};

fn buf_len() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX) };
    if n > 0 {
        (n as usize).max(4096)
    } else {
        16384
    }
}

/// Name of a uid; the number as text if unknown.
pub fn user_name(uid: u32) -> String {
    let mut buf = vec![0u8; buf_len()];
    // SAFETY: zeroed passwd is a valid out-parameter; buf outlives the call.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::passwd = std::ptr::null_mut();
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut res) };
    if rc == 0 && !res.is_null() && !pw.pw_name.is_null() {
        // SAFETY: pw_name points into buf, NUL-terminated by getpwuid_r.
        unsafe { CStr::from_ptr(pw.pw_name) }
            .to_string_lossy()
            .into_owned()
    } else {
        uid.to_string()
    }
}

/// uid of a user name (or a number given as text).
pub fn user_uid(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let c = CString::new(name).ok()?;
    let mut buf = vec![0u8; buf_len()];
    // SAFETY: as above.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::passwd = std::ptr::null_mut();
    let rc = unsafe {
        libc::getpwnam_r(
            c.as_ptr(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut res,
        )
    };
    (rc == 0 && !res.is_null()).then_some(pw.pw_uid)
}

/// Name of a gid; the number as text if unknown.
pub fn group_name(gid: u32) -> String {
    let mut buf = vec![0u8; buf_len()];
    // SAFETY: zeroed group is a valid out-parameter; buf outlives the call.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::group = std::ptr::null_mut();
    let rc =
        unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr().cast(), buf.len(), &mut res) };
    if rc == 0 && !res.is_null() && !gr.gr_name.is_null() {
        // SAFETY: gr_name points into buf.
        unsafe { CStr::from_ptr(gr.gr_name) }
            .to_string_lossy()
            .into_owned()
    } else {
        gid.to_string()
    }
}

/// gid of a group name (or a number given as text).
pub fn group_gid(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    let c = CString::new(name).ok()?;
    let mut buf = vec![0u8; buf_len()];
    // SAFETY: as above.
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut res: *mut libc::group = std::ptr::null_mut();
    let rc = unsafe {
        libc::getgrnam_r(
            c.as_ptr(),
            &mut gr,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut res,
        )
    };
    (rc == 0 && !res.is_null()).then_some(gr.gr_gid)
}

/// Cache of uid -> name, since every job record and squeue line needs it.
#[derive(Default)]
pub struct NameCache {
    users: std::collections::HashMap<u32, std::sync::Arc<str>>,
    groups: std::collections::HashMap<u32, std::sync::Arc<str>>,
}

impl NameCache {
    pub fn user(&mut self, uid: u32) -> std::sync::Arc<str> {
        self.users
            .entry(uid)
            .or_insert_with(|| user_name(uid).into())
            .clone()
    }
    pub fn group(&mut self, gid: u32) -> std::sync::Arc<str> {
        self.groups
            .entry(gid)
            .or_insert_with(|| group_name(gid).into())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_resolves() {
        assert_eq!(user_name(0), "root");
        assert_eq!(user_uid("root"), Some(0));
        assert_eq!(user_uid("1234"), Some(1234));
        assert_eq!(group_gid("root"), Some(0));
        assert_eq!(user_uid("no-such-user-xyz"), None);
        assert_eq!(user_name(4_000_000_000), "4000000000");
    }
}
