//! `sacctmgr delete`: clusters, accounts, users and QOS. Pure.

use drover_proto::acct::{AssocSet, KeyValue};

use super::values::*;
use super::*;

pub(super) fn delete_clusters(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
    need_names(names, "cluster")?;
    let before = set.clusters.len();
    set.clusters.retain(|c| !names.contains(&c.name));
    set.assocs.retain(|a| !names.contains(&a.cluster));
    if before == set.clusters.len() {
        return Err("Nothing deleted".into());
    }
    Ok(names.iter().map(|n| format!("Cluster {n}")).collect())
}

pub(super) fn delete_accounts(
    set: &mut AssocSet,
    names: &[String],
    conds: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "account")?;
    if names.iter().any(|n| n == "root") {
        return Err("You cannot delete the root account".into());
    }
    let clusters = get_list(conds, &["cluster", "clusters"]);
    if let Some(child) = set.assocs.iter().find(|a| {
        a.user.is_empty()
            && names.contains(&a.parent)
            && !names.contains(&a.account)
            && matches(&clusters, &a.cluster)
    }) {
        return Err(format!(
            "Account {} has child account {}: delete or move it first",
            child.parent, child.account
        ));
    }
    let mut out = Vec::new();
    set.assocs.retain(|a| {
        let hit = names.contains(&a.account) && matches(&clusters, &a.cluster);
        if hit {
            out.push(if a.user.is_empty() {
                format!("Account {} (cluster {})", a.account, a.cluster)
            } else {
                format!(
                    "User {} (account {}, cluster {})",
                    a.user, a.account, a.cluster
                )
            });
        }
        !hit
    });
    if out.is_empty() {
        return Err("Nothing deleted".into());
    }
    let assocs = set.assocs.clone();
    set.accounts
        .retain(|a| a.name == "root" || assocs.iter().any(|x| x.account == a.name));
    fix_users(set);
    Ok(out)
}

/// Users without associations go; default accounts that vanished move.
pub(super) fn fix_users(set: &mut AssocSet) {
    let assocs = set.assocs.clone();
    set.users
        .retain(|u| assocs.iter().any(|a| a.user == u.name));
    for u in &mut set.users {
        if !assocs
            .iter()
            .any(|a| a.user == u.name && a.account == u.default_account)
        {
            if let Some(a) = assocs.iter().find(|a| a.user == u.name) {
                u.default_account = a.account.clone();
            }
        }
    }
}

pub(super) fn delete_users(
    set: &mut AssocSet,
    names: &[String],
    conds: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "user")?;
    let accounts = get_list(conds, &["account", "accounts"]);
    let clusters = get_list(conds, &["cluster", "clusters"]);
    let partitions = get_list(conds, &["partition", "partitions"]);
    let mut out = Vec::new();
    set.assocs.retain(|a| {
        let hit = names.contains(&a.user)
            && matches(&accounts, &a.account)
            && matches(&clusters, &a.cluster)
            && matches(&partitions, &a.partition);
        if hit {
            out.push(format!(
                "User {} (account {}, cluster {})",
                a.user, a.account, a.cluster
            ));
        }
        !hit
    });
    if out.is_empty() {
        return Err("Nothing deleted".into());
    }
    fix_users(set);
    Ok(out)
}

pub(super) fn delete_qos(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
    need_names(names, "QOS")?;
    let before = set.qos.len();
    set.qos.retain(|q| !names.contains(&q.name));
    if before == set.qos.len() {
        return Err("Nothing deleted".into());
    }
    for a in &mut set.assocs {
        a.qos.retain(|q| !names.contains(q));
    }
    Ok(names.iter().map(|n| format!("QOS {n}")).collect())
}
