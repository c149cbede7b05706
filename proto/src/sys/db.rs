//! User and group lookups through the C library (NSS: files, LDAP, sssd),
//! one copy for every daemon and command. Buffers grow on `ERANGE`, so huge
//! group entries resolve too.

use std::ffi::{CStr, CString};

/// What the password database says about a user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passwd {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub dir: String,
    pub shell: String,
}

fn start_len() -> usize {
    super::passwd_buf_hint().map_or(16384, |n| n.clamp(4096, 1 << 20))
}

/// Call a `get*_r` function with a buffer that doubles on `ERANGE` (up to
/// 16 MiB); `Some` when it found an entry.
fn with_buf<T: Default>(
    call: impl Fn(&mut T, &mut [libc::c_char], &mut *mut T) -> libc::c_int,
) -> Option<(T, Vec<libc::c_char>)> {
    let mut len = start_len();
    loop {
        let mut buf = vec![0 as libc::c_char; len];
        let mut out = T::default();
        let mut res: *mut T = std::ptr::null_mut();
        let rc = call(&mut out, &mut buf, &mut res);
        if rc == libc::ERANGE && len < (16 << 20) {
            len *= 2;
            continue;
        }
        return (rc == 0 && !res.is_null()).then_some((out, buf));
    }
}

/// A C string of the entry (inside the buffer the call filled).
fn text(p: *const libc::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the get*_r call filled NUL-terminated strings inside the
    // buffer, which the caller keeps alive while this runs.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[repr(transparent)]
struct Pw(libc::passwd);

impl Default for Pw {
    fn default() -> Self {
        // SAFETY: an all-zero passwd is a valid out-parameter.
        Pw(unsafe { std::mem::zeroed() })
    }
}

#[repr(transparent)]
struct Gr(libc::group);

impl Default for Gr {
    fn default() -> Self {
        // SAFETY: an all-zero group is a valid out-parameter.
        Gr(unsafe { std::mem::zeroed() })
    }
}

fn passwd_of(pw: &Pw) -> Passwd {
    Passwd {
        name: text(pw.0.pw_name),
        uid: pw.0.pw_uid,
        gid: pw.0.pw_gid,
        dir: text(pw.0.pw_dir),
        shell: text(pw.0.pw_shell),
    }
}

/// The user with this uid.
pub fn passwd_by_uid(uid: u32) -> Option<Passwd> {
    let (pw, _buf) = with_buf(|pw: &mut Pw, buf, res| {
        // SAFETY: valid out-parameters; buf outlives the use of pw's strings.
        unsafe {
            libc::getpwuid_r(
                uid,
                &mut pw.0,
                buf.as_mut_ptr(),
                buf.len(),
                (res as *mut *mut Pw).cast(),
            )
        }
    })?;
    Some(passwd_of(&pw))
}

/// The user with this name.
pub fn passwd_by_name(name: &str) -> Option<Passwd> {
    let c = CString::new(name).ok()?;
    let (pw, _buf) = with_buf(|pw: &mut Pw, buf, res| {
        // SAFETY: as above.
        unsafe {
            libc::getpwnam_r(
                c.as_ptr(),
                &mut pw.0,
                buf.as_mut_ptr(),
                buf.len(),
                (res as *mut *mut Pw).cast(),
            )
        }
    })?;
    Some(passwd_of(&pw))
}

/// The name of the group with this gid.
pub fn group_name(gid: u32) -> Option<String> {
    let (gr, _buf) = with_buf(|gr: &mut Gr, buf, res| {
        // SAFETY: as above.
        unsafe {
            libc::getgrgid_r(
                gid,
                &mut gr.0,
                buf.as_mut_ptr(),
                buf.len(),
                (res as *mut *mut Gr).cast(),
            )
        }
    })?;
    Some(text(gr.0.gr_name)).filter(|n| !n.is_empty())
}

/// The gid of the group with this name.
pub fn group_gid(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let (gr, _buf) = with_buf(|gr: &mut Gr, buf, res| {
        // SAFETY: as above.
        unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut gr.0,
                buf.as_mut_ptr(),
                buf.len(),
                (res as *mut *mut Gr).cast(),
            )
        }
    })?;
    Some(gr.0.gr_gid)
}

/// Name of a uid; the number as text if unknown (as Slurm prints it).
pub fn user_name_or_number(uid: u32) -> String {
    passwd_by_uid(uid).map_or_else(|| uid.to_string(), |p| p.name)
}

/// Name of a gid; the number as text if unknown.
pub fn group_name_or_number(gid: u32) -> String {
    group_name(gid).unwrap_or_else(|| gid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_resolves_both_ways() {
        let r = passwd_by_uid(0).expect("root");
        assert_eq!(r.name, "root");
        assert_eq!(r.uid, 0);
        assert!(!r.dir.is_empty());
        assert_eq!(passwd_by_name("root").map(|p| p.uid), Some(0));
        assert_eq!(group_gid("root"), Some(0));
        assert_eq!(group_name(0).as_deref(), Some("root"));
        assert_eq!(passwd_by_name("no-such-user-xyz"), None);
        assert_eq!(passwd_by_name("bad\0name"), None);
        assert_eq!(user_name_or_number(4_000_000_000), "4000000000");
        assert_eq!(group_name_or_number(4_000_000_000), "4000000000");
    }
}
