//! The daemon's association set (wire form) as the controller caches it
//! ([`crate::assoc::AssocSet`]). Pure.

use drover_proto::acct;

use crate::assoc::{parse_tres, Assoc, AssocSet, Limits, PreemptMode, Qos, User};

fn opt(v: i64) -> Option<u32> {
    (v >= 0).then(|| v.min(i64::from(u32::MAX)) as u32)
}

fn limits(l: Option<&acct::Limits>) -> Limits {
    let Some(l) = l else {
        return Limits::default();
    };
    Limits {
        grp_tres: parse_tres(&l.grp_tres).unwrap_or_default(),
        grp_jobs: opt(l.grp_jobs),
        grp_submit_jobs: opt(l.grp_submit_jobs),
        max_jobs: opt(l.max_jobs),
        max_submit_jobs: opt(l.max_submit_jobs),
        max_tres_per_job: parse_tres(&l.max_tres_per_job).unwrap_or_default(),
        max_tres_per_user: parse_tres(&l.max_tres_per_user).unwrap_or_default(),
        max_wall_min: opt(l.max_wall_min),
    }
}

/// The part of `set` that concerns `cluster`.
pub fn to_cache(set: &acct::AssocSet, cluster: &str) -> AssocSet {
    let mut out = AssocSet {
        version: set.version,
        ..Default::default()
    };
    for q in &set.qos {
        out.qos.insert(
            q.name.clone(),
            Qos {
                id: q.id,
                name: q.name.clone(),
                description: q.description.clone(),
                priority: q.priority,
                preempt: q.preempt.clone(),
                preempt_mode: PreemptMode::parse(&q.preempt_mode).unwrap_or_default(),
                grace_time: q.grace_time,
                usage_factor: q.usage_factor,
                limits: limits(q.limits.as_ref()),
            },
        );
    }
    for a in set.assocs.iter().filter(|a| a.cluster == cluster) {
        out.assocs.push(Assoc {
            id: a.id,
            account: a.account.clone(),
            user: a.user.clone(),
            partition: a.partition.clone(),
            parent: a.parent.clone(),
            shares: a.shares,
            limits: limits(a.limits.as_ref()),
            qos: a.qos.clone(),
            default_qos: a.default_qos.clone(),
        });
    }
    for u in &set.users {
        out.users.insert(
            u.name.clone(),
            User {
                name: u.name.clone(),
                default_account: u.default_account.clone(),
                admin_level: u.admin_level.clone(),
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_own_cluster_and_maps_limits() {
        let set = acct::AssocSet {
            assocs: vec![
                acct::Assoc {
                    cluster: "lab".into(),
                    account: "ml".into(),
                    user: "alice".into(),
                    limits: Some(acct::Limits {
                        grp_tres: "cpu=4,mem=2G".into(),
                        max_jobs: 2,
                        max_wall_min: -1,
                        grp_jobs: -1,
                        grp_submit_jobs: -1,
                        max_submit_jobs: -1,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                acct::Assoc {
                    cluster: "other".into(),
                    account: "x".into(),
                    ..Default::default()
                },
            ],
            version: 7,
            ..Default::default()
        };
        let c = to_cache(&set, "lab");
        assert_eq!(c.version, 7);
        assert_eq!(c.assocs.len(), 1);
        let l = &c.assocs[0].limits;
        assert_eq!(l.max_jobs, Some(2));
        assert_eq!(l.max_wall_min, None);
        assert_eq!(l.grp_tres["mem"], 2048);
    }
}
