//! `sacctmgr add`: clusters, accounts, users and QOS. Pure.

use drover_proto::acct::{Account, AssocSet, Cluster, KeyValue, Qos, User};

use super::values::*;
use super::*;

pub(super) fn add_clusters(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
    need_names(names, "cluster")?;
    let mut out = Vec::new();
    for n in names {
        if set.clusters.iter().any(|c| &c.name == n) {
            continue;
        }
        ensure_cluster(
            set,
            Cluster {
                name: n.clone(),
                ..Default::default()
            },
        );
        out.push(format!("Cluster {n}"));
    }
    Ok(out)
}

pub(super) fn add_accounts(
    set: &mut AssocSet,
    names: &[String],
    kv: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "account")?;
    let clusters = target_clusters(set, kv)?;
    let parent = get(kv, "parent").unwrap_or("root").to_string();
    let mut out = Vec::new();
    for n in names {
        if !set.accounts.iter().any(|a| &a.name == n) {
            set.accounts.push(Account {
                name: n.clone(),
                description: get(kv, "description").unwrap_or(n).to_string(),
                organization: get(kv, "organization").unwrap_or(&parent).to_string(),
            });
        }
        for c in &clusters {
            if set
                .assocs
                .iter()
                .any(|a| &a.cluster == c && &a.account == n && a.user.is_empty())
            {
                continue;
            }
            if !set
                .assocs
                .iter()
                .any(|a| &a.cluster == c && a.account == parent && a.user.is_empty())
            {
                return Err(format!(
                    "Parent account {parent} doesn't exist on cluster {c}"
                ));
            }
            let mut a = new_assoc(c, n, "", &parent);
            a.id = next_assoc_id(set);
            apply_assoc_values(
                &mut a,
                kv,
                &[
                    "parent",
                    "description",
                    "organization",
                    "cluster",
                    "clusters",
                    "name",
                    "names",
                ],
            )?;
            set.assocs.push(a);
            out.push(format!("Account {n} (cluster {c}, parent {parent})"));
        }
    }
    Ok(out)
}

pub(super) fn add_users(
    set: &mut AssocSet,
    names: &[String],
    kv: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "user")?;
    let accounts = get_list(kv, &["account", "accounts"]);
    let default = get(kv, "defaultaccount").map(str::to_string);
    if accounts.is_empty() && default.is_none() {
        return Err("Need a default account for these users to add".into());
    }
    let accounts = if accounts.is_empty() {
        vec![default.clone().unwrap_or_default()]
    } else {
        accounts
    };
    let clusters = target_clusters(set, kv)?;
    let partitions = get_list(kv, &["partition", "partitions"]);
    let partitions = if partitions.is_empty() {
        vec![String::new()]
    } else {
        partitions
    };
    let level = match get(kv, "adminlevel") {
        Some(v) => Some(admin_level(v)?),
        None => None,
    };
    let mut out = Vec::new();
    for n in names {
        match set.users.iter_mut().find(|u| &u.name == n) {
            Some(u) => {
                if let Some(l) = &level {
                    u.admin_level = l.clone();
                }
                if let Some(d) = &default {
                    u.default_account = d.clone();
                }
            }
            None => set.users.push(User {
                name: n.clone(),
                default_account: default.clone().unwrap_or_else(|| accounts[0].clone()),
                admin_level: level.clone().unwrap_or_else(|| "None".into()),
            }),
        }
        for c in &clusters {
            for acct in &accounts {
                if !set
                    .assocs
                    .iter()
                    .any(|a| &a.cluster == c && &a.account == acct && a.user.is_empty())
                {
                    return Err(format!("Account {acct} doesn't exist on cluster {c}"));
                }
                for p in &partitions {
                    if set.assocs.iter().any(|a| {
                        &a.cluster == c && &a.account == acct && &a.user == n && &a.partition == p
                    }) {
                        continue;
                    }
                    let mut a = new_assoc(c, acct, n, acct);
                    a.partition = p.clone();
                    a.id = next_assoc_id(set);
                    apply_assoc_values(
                        &mut a,
                        kv,
                        &[
                            "account",
                            "accounts",
                            "cluster",
                            "clusters",
                            "partition",
                            "partitions",
                            "defaultaccount",
                            "adminlevel",
                            "name",
                            "names",
                            "user",
                            "users",
                        ],
                    )?;
                    set.assocs.push(a);
                    let part = if p.is_empty() {
                        String::new()
                    } else {
                        format!(", partition {p}")
                    };
                    out.push(format!("User {n} (account {acct}, cluster {c}{part})"));
                }
            }
        }
    }
    Ok(out)
}

pub(super) fn add_qos(
    set: &mut AssocSet,
    names: &[String],
    kv: &[KeyValue],
) -> Result<Vec<String>, String> {
    need_names(names, "QOS")?;
    let mut out = Vec::new();
    for n in names {
        if set.qos.iter().any(|q| &q.name == n) {
            continue;
        }
        let mut q = Qos {
            id: set.qos.iter().map(|q| q.id).max().unwrap_or(0) + 1,
            name: n.clone(),
            description: n.clone(),
            priority: 0,
            preempt: Vec::new(),
            preempt_mode: "CLUSTER".into(),
            grace_time: 0,
            usage_factor: 1.0,
            limits: Some(no_limits()),
        };
        for p in kv {
            set_qos_attr(&mut q, &p.key, &p.value)?;
        }
        set.qos.push(q);
        out.push(format!("QOS {n}"));
    }
    Ok(out)
}
