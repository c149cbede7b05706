//! `PrivateData` (slurm.conf): what a user who is neither an administrator
//! nor an operator may see. The rules are pure; the controller's query paths
//! (`get_jobs`, `wait_job`, nodes, reservations, sprio, sshare) apply them
//! through [`Ctld::private`] and [`Ctld::sees_all`].
//!
//! As in Slurm: `jobs` hides other users' jobs and their steps (squeue,
//! scontrol show job/step, sprio, sbatch --wait), `nodes` refuses node
//! information (sinfo, scontrol show node), `reservations` hides the
//! reservations the user may not use, `usage` hides other users' fair-share
//! rows (sshare). `users` and `accounts` concern the accounting daemon's
//! records (sacctmgr); the controller has nothing more to hide for them.
//! Root, SlurmUser, daemons and users with AdminLevel Operator or
//! Administrator see everything.

use drover_proto::auth::Identity;
use drover_proto::ReservationInfo;

use crate::ctld::Ctld;

pub use drover_conf::private::Private;

/// May a viewer see a job owned by `job_uid`? `privileged` = admin/operator.
pub fn job_visible(p: Private, privileged: bool, viewer_uid: u32, job_uid: u32) -> bool {
    !p.jobs || privileged || viewer_uid == job_uid
}

/// May `user` (with accounts `accounts`) use the reservation, i.e. see it
/// under `PrivateData=reservations`?
pub fn resv_usable(r: &ReservationInfo, user: &str, accounts: &[String]) -> bool {
    r.users.iter().any(|u| u == user) || r.accounts.iter().any(|a| accounts.contains(a))
}

impl Ctld {
    /// The configured `PrivateData`.
    pub fn private(&self) -> Private {
        Private::parse(&self.cfg.private_data)
    }

    /// Root, SlurmUser, a daemon or an accounting Operator/Administrator.
    pub fn sees_all(&mut self, who: &Identity) -> bool {
        self.is_admin(who) || self.is_operator(who)
    }

    /// May `who` see job `id` (a missing job is "visible": the caller
    /// reports it as unknown)?
    pub fn may_see_job(&mut self, who: &Identity, id: u32) -> bool {
        let p = self.private();
        if !p.jobs {
            return true;
        }
        let Some(owner) = self.jobs.get(&id).map(|j| j.rec.uid) else {
            return true;
        };
        let privileged = owner != who.uid && self.sees_all(who);
        job_visible(p, privileged, who.uid, owner)
    }

    /// The accounts `user` has associations under.
    pub fn user_accounts(&self, user: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .assoc
            .assocs
            .iter()
            .filter(|a| a.user == user)
            .map(|a| a.account.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn jobs_hidden_only_when_private_and_not_own() {
        let open = Private::default();
        let closed = Private {
            jobs: true,
            ..Private::default()
        };
        assert!(job_visible(open, false, 1000, 0));
        assert!(!job_visible(closed, false, 1000, 0));
        assert!(job_visible(closed, false, 1000, 1000));
        assert!(job_visible(closed, true, 1000, 0));
    }

    #[test]
    fn reservation_usable_by_user_or_account() {
        let r = ReservationInfo {
            users: words(&["alice"]),
            accounts: words(&["phys"]),
            ..Default::default()
        };
        assert!(resv_usable(&r, "alice", &[]));
        assert!(resv_usable(&r, "bob", &words(&["chem", "phys"])));
        assert!(!resv_usable(&r, "bob", &words(&["chem"])));
    }
}
