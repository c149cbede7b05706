//! User and group names from the system databases (getpwnam_r & co).

use std::ffi::{CStr, CString};

fn buf_len() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX) };
    if n > 0 {
        (n as usize).clamp(1024, 1 << 20)
    } else {
        16384
    }
}

/// uid of a user name; numeric text is accepted as a uid.
pub fn uid_of(name: &str) -> Option<u32> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
        return name.parse().ok();
    }
    let c = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; buf_len()];
    // SAFETY: all pointers are valid for the call; result points into pwd.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(c.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut res);
        if rc != 0 || res.is_null() {
            return None;
        }
        Some(pwd.pw_uid)
    }
}

/// User name and primary gid of a uid.
pub fn user_of(uid: u32) -> Option<(String, u32)> {
    let mut buf = vec![0 as libc::c_char; buf_len()];
    // SAFETY: as above.
    unsafe {
        let mut pwd: libc::passwd = std::mem::zeroed();
        let mut res: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut res);
        if rc != 0 || res.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        let name = CStr::from_ptr(pwd.pw_name).to_string_lossy().into_owned();
        Some((name, pwd.pw_gid))
    }
}

/// Name of a uid, or the number as text.
pub fn user_name(uid: u32) -> String {
    user_of(uid)
        .map(|(n, _)| n)
        .unwrap_or_else(|| uid.to_string())
}

/// Name of a gid, or the number as text.
pub fn group_name(gid: u32) -> String {
    let mut buf = vec![0 as libc::c_char; buf_len()];
    // SAFETY: as above.
    unsafe {
        let mut grp: libc::group = std::mem::zeroed();
        let mut res: *mut libc::group = std::ptr::null_mut();
        let rc = libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut res);
        if rc != 0 || res.is_null() || grp.gr_name.is_null() {
            return gid.to_string();
        }
        CStr::from_ptr(grp.gr_name).to_string_lossy().into_owned()
    }
}

pub fn euid() -> u32 {
    // SAFETY: never fails.
    unsafe { libc::geteuid() }
}

pub fn uid() -> u32 {
    // SAFETY: never fails.
    unsafe { libc::getuid() }
}

pub fn is_tty(fd: i32) -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(fd) == 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(uid_of("0"), Some(0));
        assert_eq!(uid_of("12345"), Some(12345));
        assert_eq!(uid_of("no-such-user-drover-test"), None);
        assert_eq!(uid_of(""), None);
        assert_eq!(uid_of("a\0b"), None);
        let me = uid();
        let name = user_name(me);
        assert!(!name.is_empty());
        if let Some((n, _)) = user_of(me) {
            assert_eq!(uid_of(&n), Some(me));
        }
        assert_eq!(user_name(4_000_000_000), "4000000000");
        assert!(!group_name(0).is_empty());
    }
}
