//! sacctmgr's add/modify/delete applied to the association set: pure, no
//! I/O. The daemon loads the set, applies one request here and writes the
//! result back in one transaction.

use drover_proto::acct::{
    Account, Assoc, AssocSet, Cluster, KeyValue, Limits, ModifyRequest, Qos, User,
};

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

fn new_assoc(cluster: &str, account: &str, user: &str, parent: &str) -> Assoc {
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

fn next_assoc_id(set: &AssocSet) -> u32 {
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

/// Parse a limit count (`-1` clears).
fn count(key: &str, v: &str) -> Result<i64, String> {
    let t = v.trim();
    if t == "-1" || t.is_empty() {
        return Ok(-1);
    }
    t.parse::<u32>()
        .map(i64::from)
        .map_err(|_| format!("Invalid value for {key}: {v}"))
}

/// Validate a TRES list and merge it into `old` (`name=-1` removes a name).
pub fn merge_tres(old: &str, new: &str, key: &str) -> Result<String, String> {
    let mut map: Vec<(String, String)> = old
        .split(',')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for part in new.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("Invalid value for {key}: {part}"))?;
        let k = k.trim().to_ascii_lowercase();
        let v = v.trim();
        let ok_name = k == "cpu"
            || k == "mem"
            || k == "node"
            || k == "billing"
            || k == "energy"
            || k.starts_with("gres/")
            || k.starts_with("license/");
        if !ok_name {
            return Err(format!("Invalid value for {key}: unknown TRES {k}"));
        }
        map.retain(|(n, _)| *n != k);
        if v == "-1" {
            continue;
        }
        let valid = if k == "mem" {
            drover_conf::units::parse_mem_mb(v).is_ok()
        } else {
            v.parse::<u64>().is_ok()
        };
        if !valid {
            return Err(format!("Invalid value for {key}: {part}"));
        }
        map.push((k, v.to_string()));
    }
    map.sort();
    Ok(map
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(","))
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Apply one limit-like attribute to limits; Ok(false) when `key` is no limit.
fn set_limit(l: &mut Limits, key: &str, v: &str) -> Result<bool, String> {
    match key {
        "grptres" => l.grp_tres = merge_tres(&l.grp_tres, v, "GrpTRES")?,
        "grpjobs" => l.grp_jobs = count("GrpJobs", v)?,
        "grpsubmitjobs" | "grpsubmit" => l.grp_submit_jobs = count("GrpSubmitJobs", v)?,
        "maxjobs" | "maxjobsperuser" => l.max_jobs = count("MaxJobs", v)?,
        "maxsubmitjobs" | "maxsubmit" | "maxsubmitjobsperuser" => {
            l.max_submit_jobs = count("MaxSubmitJobs", v)?
        }
        "maxtresperjob" | "maxtres" => {
            l.max_tres_per_job = merge_tres(&l.max_tres_per_job, v, "MaxTRESPerJob")?
        }
        "maxtresperuser" | "maxtrespu" => {
            l.max_tres_per_user = merge_tres(&l.max_tres_per_user, v, "MaxTRESPerUser")?
        }
        "maxwall" | "maxwalldurationperjob" => {
            l.max_wall_min = if v.trim() == "-1" {
                -1
            } else {
                match drover_conf::units::parse_time_minutes(v) {
                    Ok(Some(m)) => i64::from(m),
                    Ok(None) => -1,
                    Err(_) => return Err(format!("Invalid value for MaxWall: {v}")),
                }
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Attributes shared by account and user associations.
fn set_assoc_attr(a: &mut Assoc, key: &str, v: &str) -> Result<bool, String> {
    let l = a.limits.get_or_insert_with(no_limits);
    if set_limit(l, key, v)? {
        return Ok(true);
    }
    match key {
        "fairshare" | "shares" => {
            a.shares = if v.eq_ignore_ascii_case("parent") {
                u32::MAX
            } else {
                v.trim()
                    .parse()
                    .map_err(|_| format!("Invalid value for Fairshare: {v}"))?
            }
        }
        "qos" => a.qos = list(v),
        "qos+" => {
            for q in list(v) {
                if !a.qos.contains(&q) {
                    a.qos.push(q);
                }
            }
        }
        "qos-" => {
            let rm = list(v);
            a.qos.retain(|q| !rm.contains(q));
        }
        "defaultqos" => a.default_qos = v.trim().to_string(),
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_qos_attr(q: &mut Qos, key: &str, v: &str) -> Result<(), String> {
    let l = q.limits.get_or_insert_with(no_limits);
    if set_limit(l, key, v)? {
        return Ok(());
    }
    match key {
        "description" => q.description = v.to_string(),
        "priority" => {
            q.priority = v
                .trim()
                .parse()
                .map_err(|_| format!("Invalid value for Priority: {v}"))?
        }
        "preempt" => q.preempt = list(v),
        "preemptmode" => {
            let m = v.trim().to_ascii_uppercase();
            if !["OFF", "CANCEL", "REQUEUE", "SUSPEND", "CLUSTER"].contains(&m.as_str()) {
                return Err(format!("Invalid value for PreemptMode: {v}"));
            }
            q.preempt_mode = m;
        }
        "gracetime" => {
            q.grace_time = drover_conf::units::parse_duration(v)
                .ok()
                .flatten()
                .map(|s| s as u32)
                .ok_or_else(|| format!("Invalid value for GraceTime: {v}"))?
        }
        "usagefactor" => {
            q.usage_factor = v
                .trim()
                .parse()
                .map_err(|_| format!("Invalid value for UsageFactor: {v}"))?
        }
        "flags" | "name" => {}
        other => return Err(format!("Unknown option: {other}")),
    }
    Ok(())
}

fn admin_level(v: &str) -> Result<String, String> {
    Ok(match v.trim().to_ascii_lowercase().as_str() {
        "none" | "" => "None",
        "operator" | "oper" => "Operator",
        "administrator" | "admin" => "Administrator",
        _ => return Err(format!("Invalid value for AdminLevel: {v}")),
    }
    .to_string())
}

/// Key lookups in a request's key/value lists.
fn get<'a>(kv: &'a [KeyValue], key: &str) -> Option<&'a str> {
    kv.iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| p.value.as_str())
}

fn get_list(kv: &[KeyValue], keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| get(kv, k))
        .flat_map(list)
        .collect()
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

fn add_clusters(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
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

fn target_clusters(set: &AssocSet, kv: &[KeyValue]) -> Result<Vec<String>, String> {
    let given = get_list(kv, &["cluster", "clusters"]);
    if given.is_empty() {
        let all: Vec<String> = set.clusters.iter().map(|c| c.name.clone()).collect();
        if all.is_empty() {
            return Err("No clusters exist: add one first (sacctmgr add cluster NAME)".into());
        }
        return Ok(all);
    }
    for c in &given {
        if !set.clusters.iter().any(|x| &x.name == c) {
            return Err(format!(
                "This cluster {c} hasn't been added to accounting yet"
            ));
        }
    }
    Ok(given)
}

fn add_accounts(
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

fn apply_assoc_values(a: &mut Assoc, kv: &[KeyValue], skip: &[&str]) -> Result<(), String> {
    for p in kv {
        if skip.contains(&p.key.as_str()) {
            continue;
        }
        if !set_assoc_attr(a, &p.key, &p.value)? {
            return Err(format!("Unknown option: {}", p.key));
        }
    }
    Ok(())
}

fn add_users(set: &mut AssocSet, names: &[String], kv: &[KeyValue]) -> Result<Vec<String>, String> {
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

fn add_qos(set: &mut AssocSet, names: &[String], kv: &[KeyValue]) -> Result<Vec<String>, String> {
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

fn matches(vals: &[String], v: &str) -> bool {
    vals.is_empty() || vals.iter().any(|x| x == v)
}

fn modify_accounts(
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

fn modify_users(
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

fn modify_qos(
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

fn delete_clusters(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
    need_names(names, "cluster")?;
    let before = set.clusters.len();
    set.clusters.retain(|c| !names.contains(&c.name));
    set.assocs.retain(|a| !names.contains(&a.cluster));
    if before == set.clusters.len() {
        return Err("Nothing deleted".into());
    }
    Ok(names.iter().map(|n| format!("Cluster {n}")).collect())
}

fn delete_accounts(
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
fn fix_users(set: &mut AssocSet) {
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

fn delete_users(
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

fn delete_qos(set: &mut AssocSet, names: &[String]) -> Result<Vec<String>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(pairs: &[(&str, &str)]) -> Vec<KeyValue> {
        pairs
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect()
    }

    fn req(
        verb: &str,
        entity: &str,
        names: &[&str],
        c: &[(&str, &str)],
        v: &[(&str, &str)],
    ) -> ModifyRequest {
        ModifyRequest {
            verb: verb.into(),
            entity: entity.into(),
            names: names.iter().map(|s| s.to_string()).collect(),
            conditions: kv(c),
            values: kv(v),
            dry_run: false,
        }
    }

    fn base() -> AssocSet {
        let mut s = AssocSet::default();
        s.qos.push(Qos {
            id: 1,
            name: "normal".into(),
            limits: Some(no_limits()),
            usage_factor: 1.0,
            ..Default::default()
        });
        ensure_cluster(
            &mut s,
            Cluster {
                name: "lab".into(),
                cpus: 8,
                ..Default::default()
            },
        );
        s
    }

    #[test]
    fn account_tree_and_users() {
        let mut s = base();
        apply(
            &mut s,
            &req(
                "add",
                "account",
                &["science"],
                &[],
                &[("description", "Sci")],
            ),
        )
        .unwrap();
        apply(
            &mut s,
            &req(
                "add",
                "account",
                &["ml"],
                &[],
                &[("parent", "science"), ("fairshare", "10")],
            ),
        )
        .unwrap();
        let ml = s
            .assocs
            .iter()
            .find(|a| a.account == "ml" && a.user.is_empty())
            .unwrap();
        assert_eq!((ml.parent.as_str(), ml.shares), ("science", 10));
        apply(
            &mut s,
            &req(
                "add",
                "user",
                &["alice"],
                &[],
                &[("account", "ml"), ("maxjobs", "3")],
            ),
        )
        .unwrap();
        let u = s.users.iter().find(|u| u.name == "alice").unwrap();
        assert_eq!(u.default_account, "ml");
        let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
        assert_eq!(a.limits.as_ref().unwrap().max_jobs, 3);
        // Unknown account, unknown parent.
        assert!(apply(
            &mut s,
            &req("add", "user", &["bob"], &[], &[("account", "nope")])
        )
        .is_err());
        assert!(apply(
            &mut s,
            &req("add", "account", &["x"], &[], &[("parent", "nope")])
        )
        .is_err());
        // Modify limits with where.
        apply(
            &mut s,
            &req(
                "modify",
                "user",
                &["alice"],
                &[("account", "ml")],
                &[("maxwall", "1:00:00"), ("grptres", "cpu=4,gres/gpu=1")],
            ),
        )
        .unwrap();
        let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
        let l = a.limits.as_ref().unwrap();
        assert_eq!(l.max_wall_min, 60);
        assert_eq!(l.grp_tres, "cpu=4,gres/gpu=1");
        apply(
            &mut s,
            &req("modify", "user", &["alice"], &[], &[("grptres", "cpu=-1")]),
        )
        .unwrap();
        let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
        assert_eq!(a.limits.as_ref().unwrap().grp_tres, "gres/gpu=1");
        // Parent loops are refused; sub-accounts block deletion.
        assert!(apply(
            &mut s,
            &req("modify", "account", &["science"], &[], &[("parent", "ml")])
        )
        .is_err());
        assert!(apply(&mut s, &req("delete", "account", &["science"], &[], &[])).is_err());
        apply(&mut s, &req("delete", "user", &["alice"], &[], &[])).unwrap();
        assert!(s.users.iter().all(|u| u.name != "alice"));
        assert!(apply(
            &mut s,
            &req("modify", "user", &["alice"], &[], &[("maxjobs", "1")])
        )
        .is_err());
    }

    #[test]
    fn qos_and_bad_values() {
        let mut s = base();
        apply(
            &mut s,
            &req(
                "add",
                "qos",
                &["high"],
                &[],
                &[("priority", "100"), ("maxwall", "2:00:00")],
            ),
        )
        .unwrap();
        let q = s.qos.iter().find(|q| q.name == "high").unwrap();
        assert_eq!(
            (q.priority, q.limits.as_ref().unwrap().max_wall_min),
            (100, 120)
        );
        assert!(apply(
            &mut s,
            &req("modify", "qos", &["high"], &[], &[("priority", "x")])
        )
        .is_err());
        assert!(apply(
            &mut s,
            &req("add", "account", &["a"], &[], &[("grptres", "cpu=lots")])
        )
        .is_err());
        assert!(apply(
            &mut s,
            &req("add", "account", &["a"], &[], &[("bogus", "1")])
        )
        .is_err());
        apply(&mut s, &req("delete", "qos", &["high"], &[], &[])).unwrap();
        assert!(merge_tres("", "cpu=1,mem=4G", "k").unwrap() == "cpu=1,mem=4G");
    }
}
