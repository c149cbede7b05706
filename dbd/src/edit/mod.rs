//! sacctmgr's add/modify/delete applied to the association set: pure, no
//! I/O. The daemon loads the set, applies one request here and writes the
//! result back in one transaction.

mod add;
mod change;
mod delete;
mod values;

use drover_proto::acct::{Account, Assoc, AssocSet, Cluster, Limits, ModifyRequest, User};

use add::{add_accounts, add_clusters, add_qos, add_users};
use change::{modify_accounts, modify_qos, modify_users};
use delete::{delete_accounts, delete_clusters, delete_qos, delete_users};
use values::{get, list};

/// Limits with nothing set.
pub fn no_limits() -> Limits {
    Limits {
        grp_tres: String::new(),
        grp_jobs: -1,
        grp_submit_jobs: -1,
        max_jobs: -1,
        max_submit_jobs: -1,
        max_tres_per_job: String::new(),
        max_tres_per_user: String::new(),
        max_wall_min: -1,
    }
}

pub(super) fn new_assoc(cluster: &str, account: &str, user: &str, parent: &str) -> Assoc {
    Assoc {
        id: 0,
        cluster: cluster.into(),
        account: account.into(),
        user: user.into(),
        partition: String::new(),
        parent: parent.into(),
        shares: 1,
        limits: Some(no_limits()),
        qos: Vec::new(),
        default_qos: String::new(),
    }
}

pub(super) fn next_assoc_id(set: &AssocSet) -> u32 {
    set.assocs.iter().map(|a| a.id).max().unwrap_or(1) + 1
}

/// Add a cluster with its root association and root user (idempotent).
pub fn ensure_cluster(set: &mut AssocSet, c: Cluster) -> bool {
    let mut changed = false;
    match set.clusters.iter_mut().find(|x| x.name == c.name) {
        Some(x) => {
            if x.cpus != c.cpus || x.nodes != c.nodes || x.tres != c.tres || x.registered == 0 {
                let registered = if x.registered == 0 {
                    c.registered
                } else {
                    x.registered
                };
                *x = Cluster {
                    registered,
                    ..c.clone()
                };
                changed = true;
            }
        }
        None => {
            set.clusters.push(c.clone());
            changed = true;
        }
    }
    if !set.accounts.iter().any(|a| a.name == "root") {
        set.accounts.push(Account {
            name: "root".into(),
            description: "default root account".into(),
            organization: "root".into(),
        });
        changed = true;
    }
    if !set
        .assocs
        .iter()
        .any(|a| a.cluster == c.name && a.account == "root" && a.user.is_empty())
    {
        let mut a = new_assoc(&c.name, "root", "", "");
        a.id = next_assoc_id(set);
        a.qos = vec!["normal".into()];
        set.assocs.push(a);
        let mut u = new_assoc(&c.name, "root", "root", "root");
        u.id = next_assoc_id(set);
        set.assocs.push(u);
        if !set.users.iter().any(|u| u.name == "root") {
            set.users.push(User {
                name: "root".into(),
                default_account: "root".into(),
                admin_level: "Administrator".into(),
            });
        }
        changed = true;
    }
    changed
}

/// Apply `req`; returns the lines to print (what changed). An error leaves
/// `set` as it was (the caller works on a copy).
pub fn apply(set: &mut AssocSet, req: &ModifyRequest) -> Result<Vec<String>, String> {
    let verb = req.verb.to_ascii_lowercase();
    let entity = req.entity.to_ascii_lowercase();
    let mut names: Vec<String> = req.names.clone();
    let name_keys: &[&str] = if entity == "user" {
        &["name", "names", "user", "users"]
    } else {
        &["name", "names"]
    };
    for src in [&req.conditions, &req.values] {
        for k in name_keys {
            if let Some(v) = get(src, k) {
                names.extend(list(v));
            }
        }
    }
    names.sort();
    names.dedup();
    match (verb.as_str(), entity.as_str()) {
        ("add", "cluster") => add_clusters(set, &names),
        ("add", "account") => add_accounts(set, &names, &req.values),
        ("add", "user") => add_users(set, &names, &req.values),
        ("add", "qos") => add_qos(set, &names, &req.values),
        ("modify", "account") => modify_accounts(set, &names, &req.conditions, &req.values),
        ("modify", "user") => modify_users(set, &names, &req.conditions, &req.values),
        ("modify", "qos") => modify_qos(set, &names, &req.values),
        ("delete", "cluster") => delete_clusters(set, &names),
        ("delete", "account") => delete_accounts(set, &names, &req.conditions),
        ("delete", "user") => delete_users(set, &names, &req.conditions),
        ("delete", "qos") => delete_qos(set, &names),
        (v, e) => Err(format!("sacctmgr cannot {v} {e}")),
    }
}

fn need_names(names: &[String], what: &str) -> Result<(), String> {
    if names.is_empty() {
        Err(format!("No {what} name given"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
