//! What accounting decides at submit time: the default account, and with
//! `AccountingStorageEnforce`, refusing jobs without an association or that
//! break a limit they could never satisfy. Pure.

use drover_proto::JobSpec;

use crate::assoc::{Assoc, AssocSet, Tres};

pub const INVALID_ACCOUNT: &str = "Invalid account or account/partition combination specified";
pub const INVALID_QOS: &str = "Invalid qos specification";
pub const POLICY: &str =
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)";

/// The parsed `AccountingStorageEnforce` list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Enforce {
    pub associations: bool,
    pub limits: bool,
    pub qos: bool,
}

impl Enforce {
    pub fn parse(list: &[String]) -> Enforce {
        let mut e = Enforce::default();
        for item in list {
            match item.trim().to_ascii_lowercase().as_str() {
                "associations" => e.associations = true,
                "limits" | "safe" => {
                    e.associations = true;
                    e.limits = true;
                }
                "qos" => {
                    e.associations = true;
                    e.qos = true;
                }
                "all" => {
                    e.associations = true;
                    e.limits = true;
                    e.qos = true;
                }
                _ => {}
            }
        }
        e
    }
}

/// Does `want` exceed any limit in `max`? (`gres/gpu` limits apply to the
/// sum of typed requests too.)
fn exceeds(want: &Tres, max: &Tres) -> bool {
    max.iter()
        .any(|(k, lim)| want.get(k).is_some_and(|w| w > lim))
}

/// Decide at submit: fill the account, check association, QOS and the
/// per-job limits. `partition` is the partition the job names (or the
/// default). `user` is the submitter's name; `want` the job's resolved
/// request as TRES (`request::tres`).
pub fn check(
    set: &AssocSet,
    enforce: Enforce,
    user: &str,
    partition: &str,
    spec: &mut JobSpec,
    want: &Tres,
) -> Result<(), &'static str> {
    if set.is_empty() {
        // Accounting has told us nothing (yet): Slurm refuses jobs when it
        // must enforce associations it does not know.
        return if enforce.associations {
            Err(INVALID_ACCOUNT)
        } else {
            Ok(())
        };
    }
    if spec.account.is_empty() {
        if let Some(a) = set.default_account(user) {
            spec.account = a.to_string();
        }
    }
    if !enforce.associations {
        return Ok(());
    }
    let first_part = partition.split(',').next().unwrap_or("").trim();
    let Some(assoc) = set.find(user, &spec.account, first_part) else {
        return Err(INVALID_ACCOUNT);
    };
    if enforce.qos && !spec.qos.is_empty() {
        if !set.qos.contains_key(&spec.qos) {
            return Err(INVALID_QOS);
        }
        let allowed = set.allowed_qos(assoc);
        if !allowed.is_empty() && !allowed.iter().any(|q| q == &spec.qos) {
            return Err(INVALID_QOS);
        }
    }
    if enforce.limits {
        check_limits(set, assoc, spec, want)?;
    }
    Ok(())
}

fn check_limits(
    set: &AssocSet,
    assoc: &Assoc,
    spec: &JobSpec,
    want: &Tres,
) -> Result<(), &'static str> {
    // The association's own limits, then its accounts' up to root.
    let mut chain: Vec<&Assoc> = vec![assoc];
    chain.extend(set.lineage(&assoc.account));
    for a in &chain {
        if exceeds(want, &a.limits.max_tres_per_job) {
            return Err(POLICY);
        }
        if let Some(m) = a.limits.max_wall_min {
            if spec.time_limit != 0 && spec.time_limit > m {
                return Err(POLICY);
            }
        }
        // A job bigger than the whole group's allowance can never start.
        if exceeds(want, &a.limits.grp_tres) {
            return Err(POLICY);
        }
    }
    let qos_name = if spec.qos.is_empty() {
        if assoc.default_qos.is_empty() {
            "normal"
        } else {
            assoc.default_qos.as_str()
        }
    } else {
        spec.qos.as_str()
    };
    if let Some(q) = set.qos.get(qos_name) {
        if exceeds(want, &q.limits.max_tres_per_job) || exceeds(want, &q.limits.grp_tres) {
            return Err(POLICY);
        }
        if let Some(m) = q.limits.max_wall_min {
            if spec.time_limit != 0 && spec.time_limit > m {
                return Err(POLICY);
            }
        }
    }
    Ok(())
}

/// MaxSubmitJobs of the association chain: the tightest one, if any.
pub fn max_submit(set: &AssocSet, user: &str, account: &str, partition: &str) -> Option<u32> {
    let a = set.find(user, account, partition.split(',').next().unwrap_or(""))?;
    a.limits.max_submit_jobs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assoc::{Qos, User};

    /// `check` with the spec's request resolved as at submit.
    fn chk(
        set: &AssocSet,
        enforce: Enforce,
        user: &str,
        partition: &str,
        spec: &mut JobSpec,
    ) -> Result<(), &'static str> {
        let cfg = drover_conf::Config::default();
        let want = crate::request::tres(&crate::request::resolve(spec, None, &cfg).unwrap());
        check(set, enforce, user, partition, spec, &want)
    }

    fn set() -> AssocSet {
        let mut s = AssocSet::default();
        let a = Assoc::new;
        s.assocs.push(a("root", "", ""));
        let mut ml = a("ml", "", "root");
        ml.limits.max_tres_per_job = crate::assoc::parse_tres("gres/gpu=2").unwrap();
        s.assocs.push(ml);
        let mut al = a("ml", "alice", "ml");
        al.limits.max_wall_min = Some(60);
        s.assocs.push(al);
        s.users.insert(
            "alice".into(),
            User {
                name: "alice".into(),
                default_account: "ml".into(),
                admin_level: "None".into(),
            },
        );
        s.qos.insert("normal".into(), Qos::normal());
        s
    }

    fn all() -> Enforce {
        Enforce::parse(&["associations".into(), "limits".into(), "qos".into()])
    }

    #[test]
    fn default_account_and_association() {
        let s = set();
        let mut spec = JobSpec::default();
        assert_eq!(chk(&s, all(), "alice", "debug", &mut spec), Ok(()));
        assert_eq!(spec.account, "ml");
        let mut spec = JobSpec::default();
        assert_eq!(
            chk(&s, all(), "bob", "debug", &mut spec),
            Err(INVALID_ACCOUNT)
        );
        let mut spec = JobSpec {
            account: "physics".into(),
            ..Default::default()
        };
        assert_eq!(
            chk(&s, all(), "alice", "debug", &mut spec),
            Err(INVALID_ACCOUNT)
        );
        // Without enforcement only the default is filled in.
        let mut spec = JobSpec::default();
        assert_eq!(
            chk(&s, Enforce::default(), "bob", "debug", &mut spec),
            Ok(())
        );
        // Enforcing with nothing known refuses.
        let mut spec = JobSpec::default();
        assert_eq!(
            chk(&AssocSet::default(), all(), "alice", "", &mut spec),
            Err(INVALID_ACCOUNT)
        );
    }

    #[test]
    fn limits_and_qos() {
        let s = set();
        let mut spec = JobSpec {
            time_limit: 120,
            ..Default::default()
        };
        assert_eq!(chk(&s, all(), "alice", "", &mut spec), Err(POLICY));
        let mut spec = JobSpec {
            gres: "gpu:a100:3".into(),
            ..Default::default()
        };
        assert_eq!(chk(&s, all(), "alice", "", &mut spec), Err(POLICY));
        let mut spec = JobSpec {
            gpus: 2,
            time_limit: 30,
            ..Default::default()
        };
        assert_eq!(chk(&s, all(), "alice", "", &mut spec), Ok(()));
        let mut spec = JobSpec {
            qos: "gold".into(),
            ..Default::default()
        };
        assert_eq!(chk(&s, all(), "alice", "", &mut spec), Err(INVALID_QOS));
    }
}
