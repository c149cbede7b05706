//! Values of sacctmgr's key=value pairs: counts, TRES lists, limits and
//! attributes of associations and QOS. Pure.

use super::no_limits;
use drover_proto::acct::{Assoc, AssocSet, KeyValue, Limits, Qos};

/// Parse a limit count (`-1` clears).
pub(super) fn count(key: &str, v: &str) -> Result<i64, String> {
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

pub(super) fn list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Apply one limit-like attribute to limits; Ok(false) when `key` is no limit.
pub(super) fn set_limit(l: &mut Limits, key: &str, v: &str) -> Result<bool, String> {
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
pub(super) fn set_assoc_attr(a: &mut Assoc, key: &str, v: &str) -> Result<bool, String> {
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

pub(super) fn set_qos_attr(q: &mut Qos, key: &str, v: &str) -> Result<(), String> {
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

pub(super) fn admin_level(v: &str) -> Result<String, String> {
    Ok(match v.trim().to_ascii_lowercase().as_str() {
        "none" | "" => "None",
        "operator" | "oper" => "Operator",
        "administrator" | "admin" => "Administrator",
        _ => return Err(format!("Invalid value for AdminLevel: {v}")),
    }
    .to_string())
}

/// Key lookups in a request's key/value lists.
pub(super) fn get<'a>(kv: &'a [KeyValue], key: &str) -> Option<&'a str> {
    kv.iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| p.value.as_str())
}

pub(super) fn get_list(kv: &[KeyValue], keys: &[&str]) -> Vec<String> {
    keys.iter()
        .filter_map(|k| get(kv, k))
        .flat_map(list)
        .collect()
}

pub(super) fn target_clusters(set: &AssocSet, kv: &[KeyValue]) -> Result<Vec<String>, String> {
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

pub(super) fn apply_assoc_values(
    a: &mut Assoc,
    kv: &[KeyValue],
    skip: &[&str],
) -> Result<(), String> {
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

pub(super) fn matches(vals: &[String], v: &str) -> bool {
    vals.is_empty() || vals.iter().any(|x| x == v)
}
