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

/// Whose jobs a caller may see under `PrivateData=jobs`.
#[derive(Debug, Clone, Copy)]
pub struct JobViewer {
    pub uid: u32,
    /// `PrivateData=jobs` and the caller is no admin or operator.
    pub hides_others: bool,
}

impl JobViewer {
    /// May this viewer see a job owned by `job_uid`?
    pub fn sees(&self, job_uid: u32) -> bool {
        !self.hides_others || self.uid == job_uid
    }
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

    /// Who `who` may see the jobs of, decided once per request (the
    /// queries then filter many jobs with [`JobViewer::sees`]).
    pub fn job_viewer(&mut self, who: &Identity) -> JobViewer {
        let hides = self.private().jobs && !self.sees_all(who);
        JobViewer {
            uid: who.uid,
            hides_others: hides,
        }
    }

    /// May `who` see job `id` (a missing job is "visible": the caller
    /// reports it as unknown)?
    pub fn may_see_job(&mut self, who: &Identity, id: u32) -> bool {
        let viewer = self.job_viewer(who);
        self.jobs.get(&id).is_none_or(|j| viewer.sees(j.rec.uid))
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
        // No PrivateData=jobs, or an admin/operator: everything.
        let open = JobViewer {
            uid: 1000,
            hides_others: false,
        };
        let closed = JobViewer {
            uid: 1000,
            hides_others: true,
        };
        assert!(open.sees(0));
        assert!(!closed.sees(0));
        assert!(closed.sees(1000));
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
