//! User and group lookups through the C library (NSS), so LDAP/sssd work.

use drover_proto::sysdb;

/// Name of a uid; the number as text if unknown.
pub fn user_name(uid: u32) -> String {
    sysdb::user_name_or_number(uid)
}

/// uid of a user name (or a number given as text).
pub fn user_uid(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    sysdb::passwd_by_name(name).map(|p| p.uid)
}

/// Name of a gid; the number as text if unknown.
pub fn group_name(gid: u32) -> String {
    sysdb::group_name_or_number(gid)
}

/// gid of a group name (or a number given as text).
pub fn group_gid(name: &str) -> Option<u32> {
    if let Ok(n) = name.parse() {
        return Some(n);
    }
    sysdb::group_gid(name)
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
    /// Name a uid and the gid of the same number without asking the
    /// system (the simulator's users, who exist only in a trace).
    pub fn set_user(&mut self, uid: u32, name: &str) {
        self.users.insert(uid, name.into());
        self.groups.insert(uid, name.into());
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
