//! User and group names from the system databases (getpwnam_r & co).

use drover_proto::sysdb;

/// uid of a user name; numeric text is accepted as a uid.
pub fn uid_of(name: &str) -> Option<u32> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
        return name.parse().ok();
    }
    sysdb::passwd_by_name(name).map(|p| p.uid)
}

/// User name and primary gid of a uid.
pub fn user_of(uid: u32) -> Option<(String, u32)> {
    sysdb::passwd_by_uid(uid).map(|p| (p.name, p.gid))
}

/// Name of a uid, or the number as text.
pub fn user_name(uid: u32) -> String {
    sysdb::user_name_or_number(uid)
}

/// Name of a gid, or the number as text.
pub fn group_name(gid: u32) -> String {
    sysdb::group_name_or_number(gid)
}

pub fn euid() -> u32 {
    drover_proto::sys::geteuid()
}

pub fn uid() -> u32 {
    drover_proto::sys::getuid()
}

pub fn is_tty(fd: i32) -> bool {
    drover_proto::sys::isatty(fd)
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
