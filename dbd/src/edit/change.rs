//! `sacctmgr modify`: accounts, users and QOS. Pure.

use drover_proto::acct::{AssocSet, KeyValue};

use super::values::*;
use super::*;

pub(super) fn modify_accounts(
    set: &mut AssocSet,
    names: &[String],
    conds: &[KeyValue],
    values: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "account")?;
    let clusters = get_list(conds, &["cluster", "clusters"]);
    let mut out = Vec::new();
    for acc in set.accounts.iter_mut().filter(|a| names.contains(&a.name)) {
        if let Some(d) = get(values, "description") {
            acc.description = d.to_string();
            out.push(format!("Account {} description = {d}", acc.name));
        }
        if let Some(o) = get(values, "organization") {
            acc.organization = o.to_string();
            out.push(format!("Account {} organization = {o}", acc.name));
        }
    }
    let new_parent = get(values, "parent").map(str::to_string);
    if let Some(p) = &new_parent {
        if names.contains(p) {
            return Err("An account cannot be its own parent".into());
        }
        for n in names {
            // No cycles: the new parent may not descend from the account.
            let mut cur = p.clone();
            let mut guard = 0;
            while !cur.is_empty() && guard < 1000 {
                if &cur == n {
                    return Err(format!("Account {p} is a child of {n}"));
                }
                cur = set
                    .assocs
                    .iter()
                    .find(|a| a.account == cur && a.user.is_empty())
                    .map(|a| a.parent.clone())
                    .unwrap_or_default();
                guard += 1;
            }
        }
    }
    let skip = ["description", "organization", "parent"];
    let mut touched = 0;
    for a in set.assocs.iter_mut().filter(|a| {
        a.user.is_empty() && names.contains(&a.account) && matches(&clusters, &a.cluster)
    }) {
        if let Some(p) = &new_parent {
            a.parent = p.clone();
        }
        apply_assoc_values(a, values, &skip)?;
        touched += 1;
        out.push(format!("Account {} (cluster {})", a.account, a.cluster));
    }
    if touched == 0 && out.is_empty() {
        return Err("Nothing modified".into());
    }
    Ok(out)
}

pub(super) fn modify_users(
    set: &mut AssocSet,
    names: &[String],
    conds: &[KeyValue],
    values: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "user")?;
    let accounts = get_list(conds, &["account", "accounts"]);
    let clusters = get_list(conds, &["cluster", "clusters"]);
    let partitions = get_list(conds, &["partition", "partitions"]);
    let mut out = Vec::new();
    let level = match get(values, "adminlevel") {
        Some(v) => Some(admin_level(v)?),
        None => None,
    };
    let default = get(values, "defaultaccount").map(str::to_string);
    if let Some(d) = &default {
        for n in names {
            if !set.assocs.iter().any(|a| &a.user == n && &a.account == d) {
                return Err(format!("User {n} has no association with account {d}"));
            }
        }
    }
    for u in set.users.iter_mut().filter(|u| names.contains(&u.name)) {
        if let Some(l) = &level {
            u.admin_level = l.clone();
            out.push(format!("User {} AdminLevel = {l}", u.name));
        }
        if let Some(d) = &default {
            u.default_account = d.clone();
            out.push(format!("User {} DefaultAccount = {d}", u.name));
        }
    }
    let rest: Vec<KeyValue> = values
        .iter()
        .filter(|p| p.key != "adminlevel" && p.key != "defaultaccount")
        .cloned()
        .collect();
    if !rest.is_empty() {
        for a in set.assocs.iter_mut().filter(|a| {
            names.contains(&a.user)
                && matches(&accounts, &a.account)
                && matches(&clusters, &a.cluster)
                && matches(&partitions, &a.partition)
        }) {
            apply_assoc_values(a, &rest, &[])?;
            out.push(format!(
                "User {} (account {}, cluster {})",
                a.user, a.account, a.cluster
            ));
        }
    }
    if out.is_empty() {
        return Err("Nothing modified".into());
    }
    Ok(out)
}

pub(super) fn modify_qos(
    set: &mut AssocSet,
    names: &[String],
    values: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "QOS")?;
    let mut out = Vec::new();
    for q in set.qos.iter_mut().filter(|q| names.contains(&q.name)) {
        for p in values {
            set_qos_attr(q, &p.key, &p.value)?;
        }
        out.push(format!("QOS {}", q.name));
    }
    if out.is_empty() {
        return Err("Nothing modified".into());
    }
    Ok(out)
}
