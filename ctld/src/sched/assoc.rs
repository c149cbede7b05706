//! Associations and QOS as the controller caches them: the contract between
//! accounting (droverdbd, which stores them and tells the controller of
//! changes) and the scheduler (which applies limits, shares and QOS
//! priority). Pure data and lookups, no I/O.
//!
//! Accounting fills an [`AssocSet`] from the database and hands it to the
//! controller whole (`Ctld::assoc`); the scheduler only reads it. Without
//! accounting the set is empty: every user is accepted, every job runs under
//! QOS `normal` with no limits, and fair-share falls back to equal shares.

use std::collections::BTreeMap;

/// Trackable resources with their counts, keyed by Slurm's TRES names:
/// `cpu`, `mem` (MiB), `node`, `billing`, `gres/gpu`, `gres/gpu:a100`.
pub type Tres = BTreeMap<String, u64>;

/// Parse Slurm's TRES list (`cpu=4,mem=10G,gres/gpu=2,node=1`). Memory
/// takes a unit suffix and is kept in MiB; `-1` (Slurm's "clear this
/// limit") removes the key.
pub fn parse_tres(s: &str) -> Result<Tres, String> {
    let mut out = Tres::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("invalid TRES \"{part}\": expected name=count"))?;
        let k = k.trim().to_ascii_lowercase();
        let v = v.trim();
        if k.is_empty() {
            return Err(format!("invalid TRES \"{part}\": empty name"));
        }
        if v == "-1" {
            out.remove(&k);
            continue;
        }
        let n = if k == "mem" {
            drover_conf::units::parse_mem_mb(v)
                .map_err(|e| format!("invalid TRES \"{part}\": {e}"))?
        } else {
            v.parse::<u64>()
                .map_err(|_| format!("invalid TRES \"{part}\": count must be a number"))?
        };
        out.insert(k, n);
    }
    Ok(out)
}

/// Print a TRES map the way Slurm does (`cpu=4,mem=10G,node=1`).
pub fn format_tres(t: &Tres) -> String {
    t.iter()
        .map(|(k, v)| {
            if k == "mem" {
                format!("{k}={}", drover_conf::units::format_mem_mb(*v))
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Limits shared by associations and QOS (Slurm's names; `None` = no limit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// GrpTRES: all running jobs of the association (or QOS) together.
    pub grp_tres: Tres,
    /// GrpJobs: running jobs together.
    pub grp_jobs: Option<u32>,
    /// GrpSubmitJobs: pending + running jobs together.
    pub grp_submit_jobs: Option<u32>,
    /// MaxJobs (assoc) / MaxJobsPerUser (QOS): running jobs per user.
    pub max_jobs: Option<u32>,
    /// MaxSubmitJobs (assoc) / MaxSubmitJobsPerUser (QOS).
    pub max_submit_jobs: Option<u32>,
    /// MaxTRESPerJob.
    pub max_tres_per_job: Tres,
    /// MaxTRESPerUser (QOS only in Slurm; kept for both).
    pub max_tres_per_user: Tres,
    /// MaxWall / MaxWallDurationPerJob, minutes.
    pub max_wall_min: Option<u32>,
}

/// What happens to a job preempted under a QOS or partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreemptMode {
    #[default]
    Off,
    Cancel,
    Requeue,
    Suspend,
}

impl PreemptMode {
    pub fn parse(s: &str) -> Result<PreemptMode, String> {
        // Slurm allows `REQUEUE,GANG` style lists; the first mode counts.
        let first = s.split(',').next().unwrap_or("").trim();
        Ok(match first.to_ascii_uppercase().as_str() {
            "OFF" | "" => PreemptMode::Off,
            "CANCEL" => PreemptMode::Cancel,
            "REQUEUE" => PreemptMode::Requeue,
            "SUSPEND" => PreemptMode::Suspend,
            other => return Err(format!("invalid PreemptMode \"{other}\"")),
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptMode::Off => "OFF",
            PreemptMode::Cancel => "CANCEL",
            PreemptMode::Requeue => "REQUEUE",
            PreemptMode::Suspend => "SUSPEND",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Qos {
    pub id: u32,
    pub name: String,
    pub description: String,
    pub priority: u32,
    /// QOS names this one may preempt.
    pub preempt: Vec<String>,
    pub preempt_mode: PreemptMode,
    /// GraceTime, seconds.
    pub grace_time: u32,
    pub usage_factor: f64,
    pub limits: Limits,
}

impl Qos {
    /// The QOS every cluster has (Slurm creates `normal` at install).
    pub fn normal() -> Qos {
        Qos {
            id: 1,
            name: "normal".into(),
            description: "Normal QOS default".into(),
            priority: 0,
            preempt: Vec::new(),
            preempt_mode: PreemptMode::Off,
            grace_time: 0,
            usage_factor: 1.0,
            limits: Limits::default(),
        }
    }
}

/// One association: (account) or (account, user) or (account, user,
/// partition). Account associations form the tree via `parent`.
#[derive(Debug, Clone, PartialEq)]
pub struct Assoc {
    pub id: u32,
    pub account: String,
    /// Empty for an account's own association.
    pub user: String,
    /// Empty for "any partition".
    pub partition: String,
    /// Parent account ("" for `root`).
    pub parent: String,
    /// Fairshare (shares); Slurm's default is 1.
    pub shares: u32,
    pub limits: Limits,
    /// QOS names usable; empty means inherit from the parent.
    pub qos: Vec<String>,
    pub default_qos: String,
}

impl Assoc {
    /// An association with Slurm's defaults (1 share, no limits, any
    /// partition, QOS inherited).
    pub fn new(account: &str, user: &str, parent: &str) -> Assoc {
        Assoc {
            id: 0,
            account: account.into(),
            user: user.into(),
            partition: String::new(),
            parent: parent.into(),
            shares: 1,
            limits: Limits::default(),
            qos: Vec::new(),
            default_qos: String::new(),
        }
    }
}

/// A user as accounting knows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    pub name: String,
    pub default_account: String,
    /// None, Operator or Administrator.
    pub admin_level: String,
}

/// Everything the controller caches from accounting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssocSet {
    pub qos: BTreeMap<String, Qos>,
    pub assocs: Vec<Assoc>,
    pub users: BTreeMap<String, User>,
    /// Bumped by the sender on every change; lets the controller skip
    /// identical reloads.
    pub version: u64,
}

impl AssocSet {
    /// True when accounting has given us nothing (no enforcement possible).
    pub fn is_empty(&self) -> bool {
        self.assocs.is_empty()
    }

    /// Whether any association or QOS sets a limit a running job counts
    /// against (without, no pending job can be held by one).
    pub fn has_limits(&self) -> bool {
        let empty = Limits::default();
        self.assocs.iter().any(|a| a.limits != empty)
            || self.qos.values().any(|q| q.limits != empty)
    }

    /// The account a job runs under when it names none: the user's default
    /// account.
    pub fn default_account(&self, user: &str) -> Option<&str> {
        self.users
            .get(user)
            .map(|u| u.default_account.as_str())
            .filter(|a| !a.is_empty())
    }

    /// The user association a job of `user` under `account` in `partition`
    /// runs with: a partition-specific one wins over the account-wide one.
    pub fn find(&self, user: &str, account: &str, partition: &str) -> Option<&Assoc> {
        let mut general = None;
        for a in &self.assocs {
            if a.user != user || a.account != account {
                continue;
            }
            if a.partition == partition && !partition.is_empty() {
                return Some(a);
            }
            if a.partition.is_empty() {
                general = Some(a);
            }
        }
        general
    }

    /// The account association (user empty) of `account`.
    pub fn account(&self, account: &str) -> Option<&Assoc> {
        self.assocs
            .iter()
            .find(|a| a.user.is_empty() && a.account == account)
    }

    /// `account` and its ancestors up to root, nearest first (loop-safe).
    pub fn lineage(&self, account: &str) -> Vec<&Assoc> {
        let mut out: Vec<&Assoc> = Vec::new();
        let mut cur = self.account(account);
        while let Some(a) = cur {
            if out.iter().any(|x| x.account == a.account) {
                break;
            }
            out.push(a);
            cur = if a.parent.is_empty() {
                None
            } else {
                self.account(&a.parent)
            };
        }
        out
    }

    /// The QOS names a user association may use, inherited from the nearest
    /// ancestor that sets them.
    pub fn allowed_qos<'a>(&'a self, a: &'a Assoc) -> &'a [String] {
        if !a.qos.is_empty() {
            return &a.qos;
        }
        for anc in self.lineage(&a.account) {
            if !anc.qos.is_empty() {
                return &anc.qos;
            }
        }
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assoc(account: &str, user: &str, parent: &str) -> Assoc {
        Assoc::new(account, user, parent)
    }

    #[test]
    fn tres_round_trip() {
        let t = parse_tres("cpu=4,mem=10G,gres/gpu=2,node=1").unwrap();
        assert_eq!(t["mem"], 10240);
        assert_eq!(t["gres/gpu"], 2);
        assert_eq!(format_tres(&t), "cpu=4,gres/gpu=2,mem=10G,node=1");
        assert!(parse_tres("cpu").is_err());
        assert!(parse_tres("cpu=x").is_err());
        assert!(parse_tres("cpu=4,cpu=-1").unwrap().is_empty());
    }

    #[test]
    fn lookups() {
        let mut s = AssocSet::default();
        s.assocs.push(assoc("root", "", ""));
        let mut ml = assoc("ml", "", "root");
        ml.qos = vec!["normal".into(), "high".into()];
        s.assocs.push(ml);
        s.assocs.push(assoc("ml", "alice", "ml"));
        let mut p = assoc("ml", "alice", "ml");
        p.partition = "gpu".into();
        p.shares = 7;
        s.assocs.push(p);
        assert_eq!(s.find("alice", "ml", "gpu").unwrap().shares, 7);
        assert_eq!(s.find("alice", "ml", "cpu").unwrap().shares, 1);
        assert!(s.find("bob", "ml", "cpu").is_none());
        let lin: Vec<_> = s.lineage("ml").iter().map(|a| a.account.as_str()).collect();
        assert_eq!(lin, ["ml", "root"]);
        let a = s.find("alice", "ml", "").unwrap().clone();
        assert_eq!(s.allowed_qos(&a), ["normal", "high"]);
    }
}
