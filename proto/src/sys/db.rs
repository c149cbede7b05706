//! User and group lookups through the C library (NSS: files, LDAP, sssd),
//! one copy for every daemon and command. Buffers grow on `ERANGE`, so huge
//! group entries resolve too. A statically linked process (the `drover`
//! command) takes the route [`super::nss`] gives it: the C library where it
//! loads no module, else the file and `getent`.

use super::nss::{self, Db, Route};
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

/// Call a `get*_r`-style function with `buf` (made `start_len()` long when
/// empty, doubled on `ERANGE` up to 16 MiB); `Some` when it found an
/// entry, whose strings point into `buf`.
fn with_buf<T: Default>(
    buf: &mut Vec<libc::c_char>,
    call: impl Fn(&mut T, &mut [libc::c_char], &mut *mut T) -> libc::c_int,
) -> Option<T> {
    if buf.is_empty() {
        buf.resize(start_len(), 0);
    }
    loop {
        let mut out = T::default();
        let mut res: *mut T = std::ptr::null_mut();
        let rc = call(&mut out, buf, &mut res);
        if rc == libc::ERANGE && buf.len() < (16 << 20) {
            let len = buf.len() * 2;
            buf.resize(len, 0);
            continue;
        }
        return (rc == 0 && !res.is_null()).then_some(out);
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
    passwd_routed(
        &uid.to_string(),
        |p| p.uid == uid,
        || libc_passwd_by_uid(uid),
    )
}

/// The user with this name.
pub fn passwd_by_name(name: &str) -> Option<Passwd> {
    passwd_routed(name, |p| p.name == name, || libc_passwd_by_name(name))
}

/// The name of the group with this gid.
pub fn group_name(gid: u32) -> Option<String> {
    group_routed(
        &gid.to_string(),
        |g| g.gr_gid == gid,
        || libc_group_name(gid),
    )
    .map(|(name, _)| name)
    .filter(|n| !n.is_empty())
}

/// The gid of the group with this name.
pub fn group_gid(name: &str) -> Option<u32> {
    group_routed(name, |g| text(g.gr_name) == name, || libc_group_gid(name)).map(|(_, gid)| gid)
}

fn passwd_routed(
    key: &str,
    wanted: impl Fn(&Passwd) -> bool,
    libc: impl FnOnce() -> Option<Passwd>,
) -> Option<Passwd> {
    let from_getent = || Stream::of(nss::getent("passwd", key)).and_then(|s| s.passwd(&wanted));
    match nss::route(Db::Passwd) {
        Route::Libc => libc(),
        Route::FilesThenGetent => Stream::open(c"/etc/passwd")
            .and_then(|s| s.passwd(&wanted))
            .or_else(from_getent),
        Route::Getent => from_getent(),
    }
}

/// (name, gid) of the group `wanted` accepts.
fn group_routed(
    key: &str,
    wanted: impl Fn(&libc::group) -> bool,
    libc: impl FnOnce() -> Option<(String, u32)>,
) -> Option<(String, u32)> {
    let from_getent = || Stream::of(nss::getent("group", key)).and_then(|s| s.group(&wanted));
    match nss::route(Db::Group) {
        Route::Libc => libc(),
        Route::FilesThenGetent => Stream::open(c"/etc/group")
            .and_then(|s| s.group(&wanted))
            .or_else(from_getent),
        Route::Getent => from_getent(),
    }
}

/// The supplementary groups the group database gives `name` when the C
/// library may not be asked (`getent initgroups`: every source's).
pub(super) fn initgroups_via_getent(name: &str) -> Vec<u32> {
    let out = nss::getent("initgroups", name);
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .skip(1)
        .filter_map(|g| g.parse().ok())
        .collect()
}

/// A C stream of passwd- or group-format lines, read by the C library's
/// own parsers (`fgetpwent_r`, `fgetgrent_r`: no name service involved).
struct Stream {
    file: *mut libc::FILE,
    /// What an in-memory stream reads (kept alive while it is open).
    _bytes: Vec<u8>,
}

impl Stream {
    fn open(path: &CStr) -> Option<Stream> {
        // SAFETY: a NUL-terminated path and mode.
        let file = unsafe { libc::fopen(path.as_ptr(), c"re".as_ptr()) };
        (!file.is_null()).then(|| Stream {
            file,
            _bytes: Vec::new(),
        })
    }

    fn of(mut bytes: Vec<u8>) -> Option<Stream> {
        if bytes.is_empty() {
            return None;
        }
        // SAFETY: the buffer lives in the Stream, which closes the FILE
        // before dropping it; a Vec's heap buffer does not move.
        let file = unsafe { libc::fmemopen(bytes.as_mut_ptr().cast(), bytes.len(), c"r".as_ptr()) };
        // (A closure: a Stream made for a null FILE would close it.)
        (!file.is_null()).then(|| Stream {
            file,
            _bytes: bytes,
        })
    }

    /// The first entry `wanted` accepts.
    fn passwd(&self, wanted: &dyn Fn(&Passwd) -> bool) -> Option<Passwd> {
        self.find(
            |file, pw: &mut Pw, buf, res| {
                // SAFETY: an open stream and valid out-parameters; on
                // ERANGE the reader goes back to the line's start.
                unsafe {
                    libc::fgetpwent_r(
                        file,
                        &mut pw.0,
                        buf.as_mut_ptr(),
                        buf.len(),
                        (res as *mut *mut Pw).cast(),
                    )
                }
            },
            |pw| Some(passwd_of(pw)).filter(|p| wanted(p)),
        )
    }

    /// (name, gid) of the first entry `wanted` accepts.
    fn group(&self, wanted: &dyn Fn(&libc::group) -> bool) -> Option<(String, u32)> {
        self.find(
            |file, gr: &mut Gr, buf, res| {
                // SAFETY: as above.
                unsafe {
                    libc::fgetgrent_r(
                        file,
                        &mut gr.0,
                        buf.as_mut_ptr(),
                        buf.len(),
                        (res as *mut *mut Gr).cast(),
                    )
                }
            },
            |gr| wanted(&gr.0).then(|| (text(gr.0.gr_name), gr.0.gr_gid)),
        )
    }

    /// Read entries with `read` (one buffer for the scan) until `keep`
    /// makes something of one (while its strings are still valid).
    fn find<E: Default, R>(
        &self,
        read: impl Fn(*mut libc::FILE, &mut E, &mut [libc::c_char], &mut *mut E) -> libc::c_int,
        keep: impl Fn(&E) -> Option<R>,
    ) -> Option<R> {
        let mut buf = Vec::new();
        loop {
            let entry = with_buf(&mut buf, |e, b, res| read(self.file, e, b, res))?;
            if let Some(r) = keep(&entry) {
                return Some(r);
            }
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is open and closed once, here.
        unsafe { libc::fclose(self.file) };
    }
}

fn libc_passwd_by_uid(uid: u32) -> Option<Passwd> {
    let mut buf = Vec::new();
    let pw = with_buf(&mut buf, |pw: &mut Pw, buf, res| {
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

fn libc_passwd_by_name(name: &str) -> Option<Passwd> {
    let c = CString::new(name).ok()?;
    let mut buf = Vec::new();
    let pw = with_buf(&mut buf, |pw: &mut Pw, buf, res| {
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

fn libc_group_name(gid: u32) -> Option<(String, u32)> {
    let mut buf = Vec::new();
    let gr = with_buf(&mut buf, |gr: &mut Gr, buf, res| {
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
    Some((text(gr.0.gr_name), gid))
}

fn libc_group_gid(name: &str) -> Option<(String, u32)> {
    let c = CString::new(name).ok()?;
    let mut buf = Vec::new();
    let gr = with_buf(&mut buf, |gr: &mut Gr, buf, res| {
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
    Some((name.to_string(), gr.0.gr_gid))
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

    #[test]
    fn streams_read_passwd_and_group_lines() {
        let lines = b"a:x:5:6:A:/home/a:/bin/sh\nbob:x:1001:100:Bob:/home/bob:/bin/bash\n".to_vec();
        let s = Stream::of(lines).expect("stream");
        let bob = s.passwd(&|p| p.uid == 1001).expect("bob");
        assert_eq!((bob.name.as_str(), bob.gid), ("bob", 100));
        assert_eq!(bob.dir, "/home/bob");
        assert!(Stream::of(b"a:x:5:6::/:/bin/sh\n".to_vec())
            .and_then(|s| s.passwd(&|p| p.name == "b"))
            .is_none());
        // A member list longer than the first buffer still reads.
        let members: Vec<String> = (0..4000).map(|i| format!("user{i}")).collect();
        let big = format!("small:x:7:\nbig:x:8:{}\n", members.join(","));
        let s = Stream::of(big.into_bytes()).expect("stream");
        assert_eq!(s.group(&|g| g.gr_gid == 8), Some(("big".to_string(), 8)));
        assert!(Stream::of(Vec::new()).is_none());
        let etc = Stream::open(c"/etc/group").expect("/etc/group");
        assert_eq!(
            etc.group(&|g| g.gr_gid == 0).map(|g| g.0).as_deref(),
            Some("root")
        );
        for g in initgroups_via_getent("root") {
            assert!(group_name(g).is_some(), "group {g}");
        }
        assert!(initgroups_via_getent("no-such-user-xyz").is_empty());
    }
}
