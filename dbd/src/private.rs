//! `PrivateData` for what the accounting daemon answers to users who are
//! not operators: `users` (only their own user record and associations),
//! `accounts` (no account definitions: Drover has no coordinators) and
//! `usage` (sreport: only their own usage rows). `jobs` is applied to sacct
//! in the job query. Pure.

use drover_conf::private::Private;
use drover_proto::acct::{AssocSet, UsageResponse};

/// Remove from `set` what `user` may not see.
pub fn filter_assocs(p: Private, user: &str, set: &mut AssocSet) {
    if p.users {
        set.users.retain(|u| u.name == user);
        set.assocs.retain(|a| a.user.is_empty() || a.user == user);
    }
    if p.accounts {
        set.accounts.clear();
    }
}

/// Remove from a usage answer the rows of other users.
pub fn filter_usage(p: Private, user: &str, usage: &mut UsageResponse) {
    if p.usage {
        usage.rows.retain(|r| r.user == user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::{Account, Assoc, UsageRow, User};

    fn set() -> AssocSet {
        let assoc = |a: &str, u: &str| Assoc {
            account: a.into(),
            user: u.into(),
            ..Default::default()
        };
        AssocSet {
            users: vec![
                User {
                    name: "alice".into(),
                    ..Default::default()
                },
                User {
                    name: "bob".into(),
                    ..Default::default()
                },
            ],
            assocs: vec![
                assoc("phys", ""),
                assoc("phys", "alice"),
                assoc("phys", "bob"),
            ],
            accounts: vec![Account {
                name: "phys".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn users_and_accounts_hidden_as_configured() {
        let mut s = set();
        filter_assocs(Private::default(), "bob", &mut s);
        assert_eq!(s, set());
        let p = Private {
            users: true,
            ..Private::default()
        };
        filter_assocs(p, "bob", &mut s);
        assert_eq!(s.users.len(), 1);
        assert_eq!(s.users[0].name, "bob");
        let users: Vec<&str> = s.assocs.iter().map(|a| a.user.as_str()).collect();
        assert_eq!(users, vec!["", "bob"]);
        assert_eq!(s.accounts.len(), 1);
        let p = Private {
            accounts: true,
            ..Private::default()
        };
        filter_assocs(p, "bob", &mut s);
        assert!(s.accounts.is_empty());
    }

    #[test]
    fn usage_rows_of_others_hidden() {
        let row = |u: &str| UsageRow {
            user: u.into(),
            ..Default::default()
        };
        let mut r = UsageResponse {
            rows: vec![row("alice"), row("bob"), row("")],
            ..Default::default()
        };
        filter_usage(Private::default(), "bob", &mut r);
        assert_eq!(r.rows.len(), 3);
        let p = Private {
            usage: true,
            ..Private::default()
        };
        filter_usage(p, "bob", &mut r);
        assert_eq!(r.rows, vec![row("bob")]);
    }
}
