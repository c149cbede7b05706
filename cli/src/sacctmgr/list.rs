//! `sacctmgr list|show`: rows built from the association set, filtered by
//! names and `where`, printed with Slurm's columns. Pure.

use std::collections::BTreeMap;

use drover_proto::acct::{Assoc, AssocSet, KeyValue, Limits};

use crate::sacct::output::{cell, Mode};

/// (key, header, width) of every column sacctmgr knows.
const COLS: &[(&str, &str, i32)] = &[
    ("account", "Account", 10),
    ("admin", "Admin", 9),
    ("cluster", "Cluster", 10),
    ("controlhost", "ControlHost", 15),
    ("controlport", "ControlPort", 12),
    ("defacct", "Def Acct", 10),
    ("defqos", "Def QOS", 9),
    ("descr", "Descr", 20),
    ("fairshare", "Share", 9),
    ("gracetime", "GraceTime", 10),
    ("grpjobs", "GrpJobs", 7),
    ("grpsubmit", "GrpSubmit", 9),
    ("grptres", "GrpTRES", 13),
    ("id", "ID", 6),
    ("lft", "Lft", 6),
    ("maxjobs", "MaxJobs", 7),
    ("maxjobspu", "MaxJobsPU", 9),
    ("maxsubmit", "MaxSubmit", 9),
    ("maxsubmitpu", "MaxSubmitPU", 11),
    ("maxtres", "MaxTRES", 13),
    ("maxtrespu", "MaxTRESPU", 13),
    ("maxwall", "MaxWall", 11),
    ("name", "Name", 10),
    ("nodecount", "NodeCount", 9),
    ("org", "Org", 20),
    ("parentname", "Par Name", 10),
    ("partition", "Partition", 10),
    ("preempt", "Preempt", 10),
    ("preemptmode", "PreemptMode", 11),
    ("priority", "Priority", 10),
    ("qos", "QOS", 20),
    ("rpc", "RPC", 5),
    ("share", "Share", 9),
    ("tres", "TRES", 20),
    ("usagefactor", "UsageFactor", 11),
    ("user", "User", 10),
];

/// Header spellings users type in `format=` that differ from the key.
fn alias(k: &str) -> &str {
    match k {
        "description" => "descr",
        "organization" => "org",
        "defaultaccount" | "defaultacct" => "defacct",
        "adminlevel" => "admin",
        "parent" | "par" => "parentname",
        "defaultqos" => "defqos",
        "maxwalldurationperjob" => "maxwall",
        "maxtresperjob" => "maxtres",
        "maxtresperuser" => "maxtrespu",
        "maxsubmitjobs" => "maxsubmit",
        "grpsubmitjobs" => "grpsubmit",
        "users" => "user",
        "accounts" => "account",
        "clusters" => "cluster",
        "partitions" => "partition",
        other => other,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Col {
    pub idx: usize,
    pub width: i32,
}

/// `format=name[%width],...`: exact key, alias or unambiguous prefix.
pub fn parse_format(s: &str) -> Result<Vec<Col>, String> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, w.trim().parse::<i32>().ok()),
            None => (item, None),
        };
        let lname = name.trim().to_ascii_lowercase().replace(' ', "");
        let key = alias(&lname);
        let idx = COLS
            .iter()
            .position(|c| c.0 == key)
            .or_else(|| {
                let c: Vec<usize> = COLS
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.0.starts_with(key))
                    .map(|(i, _)| i)
                    .collect();
                (c.len() == 1).then(|| c[0])
            })
            .ok_or_else(|| format!("Unknown field '{name}'"))?;
        out.push(Col {
            idx,
            width: width.filter(|w| *w != 0).unwrap_or(COLS[idx].2),
        });
    }
    Ok(out)
}

pub fn default_format(entity: &str, with_assoc: bool) -> &'static str {
    match (entity, with_assoc) {
        ("account", false) => "Account,Descr,Org",
        ("account", true) => {
            "Account,Descr,Org,Cluster,ParentName,User,Share,GrpJobs,GrpSubmit,GrpTRES,MaxJobs,\
             MaxSubmit,MaxTRES,MaxWall,QOS,DefQOS"
        }
        ("user", false) => "User,DefAcct,Admin",
        ("user", true) => {
            "User,DefAcct,Admin,Cluster,Account,Partition,Share,MaxJobs,MaxSubmit,MaxTRES,\
             MaxWall,QOS,DefQOS"
        }
        ("cluster", _) => {
            "Cluster,ControlHost,ControlPort,RPC,Share,GrpJobs,GrpTRES,GrpSubmit,\
                           MaxJobs,MaxTRES,MaxSubmit,MaxWall,QOS,DefQOS"
        }
        ("qos", _) => {
            "Name,Priority,GraceTime,Preempt,PreemptMode,UsageFactor,GrpTRES,GrpJobs,\
                       GrpSubmit,MaxTRES,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU"
        }
        _ => {
            "Cluster,Account,User,Partition,Share,GrpJobs,GrpTRES,GrpSubmit,MaxJobs,MaxTRES,\
              MaxSubmit,MaxWall,QOS,DefQOS"
        }
    }
}

type RowMap = BTreeMap<&'static str, String>;

fn opt(n: i64) -> String {
    if n < 0 {
        String::new()
    } else {
        n.to_string()
    }
}

fn wall(m: i64) -> String {
    if m < 0 {
        String::new()
    } else {
        crate::timefmt::mins2time_str(m as u32)
    }
}

fn limits(r: &mut RowMap, l: Option<&Limits>) {
    let Some(l) = l else { return };
    r.insert("grptres", l.grp_tres.clone());
    r.insert("grpjobs", opt(l.grp_jobs));
    r.insert("grpsubmit", opt(l.grp_submit_jobs));
    r.insert("maxjobs", opt(l.max_jobs));
    r.insert("maxjobspu", opt(l.max_jobs));
    r.insert("maxsubmit", opt(l.max_submit_jobs));
    r.insert("maxsubmitpu", opt(l.max_submit_jobs));
    r.insert("maxtres", l.max_tres_per_job.clone());
    r.insert("maxtrespu", l.max_tres_per_user.clone());
    r.insert("maxwall", wall(l.max_wall_min));
}

fn assoc_row(set: &AssocSet, a: &Assoc) -> RowMap {
    let mut r = RowMap::new();
    r.insert("cluster", a.cluster.clone());
    r.insert("account", a.account.clone());
    r.insert("user", a.user.clone());
    r.insert("partition", a.partition.clone());
    r.insert(
        "parentname",
        if a.user.is_empty() {
            a.parent.clone()
        } else {
            String::new()
        },
    );
    let share = if a.shares == u32::MAX {
        "parent".to_string()
    } else {
        a.shares.to_string()
    };
    r.insert("share", share.clone());
    r.insert("fairshare", share);
    r.insert("id", a.id.to_string());
    limits(&mut r, a.limits.as_ref());
    // QOS shown as inherited when the association sets none.
    let mut qos = a.qos.clone();
    if qos.is_empty() {
        let mut cur = if a.user.is_empty() {
            a.parent.clone()
        } else {
            a.account.clone()
        };
        for _ in 0..64 {
            let Some(p) = set
                .assocs
                .iter()
                .find(|x| x.cluster == a.cluster && x.user.is_empty() && x.account == cur)
            else {
                break;
            };
            if !p.qos.is_empty() {
                qos = p.qos.clone();
                break;
            }
            cur = p.parent.clone();
        }
    }
    r.insert("qos", qos.join(","));
    r.insert("defqos", a.default_qos.clone());
    if let Some(acc) = set.accounts.iter().find(|x| x.name == a.account) {
        r.insert("descr", acc.description.clone());
        r.insert("org", acc.organization.clone());
    }
    if let Some(u) = set.users.iter().find(|u| u.name == a.user) {
        r.insert("defacct", u.default_account.clone());
        r.insert("admin", u.admin_level.clone());
    }
    r
}

/// Rows for `list ENTITY`.
pub fn rows(set: &AssocSet, entity: &str, with_assoc: bool) -> Vec<RowMap> {
    let mut out = Vec::new();
    match (entity, with_assoc) {
        ("account", false) => {
            for a in &set.accounts {
                let mut r = RowMap::new();
                r.insert("account", a.name.clone());
                r.insert("name", a.name.clone());
                r.insert("descr", a.description.clone());
                r.insert("org", a.organization.clone());
                out.push(r);
            }
        }
        ("user", false) => {
            for u in &set.users {
                let mut r = RowMap::new();
                r.insert("user", u.name.clone());
                r.insert("name", u.name.clone());
                r.insert("defacct", u.default_account.clone());
                r.insert("admin", u.admin_level.clone());
                out.push(r);
            }
        }
        ("user", true) => {
            for a in set.assocs.iter().filter(|a| !a.user.is_empty()) {
                let mut r = assoc_row(set, a);
                r.insert("name", a.user.clone());
                out.push(r);
            }
        }
        ("account", true) => {
            for acc in &set.accounts {
                for a in set.assocs.iter().filter(|a| a.account == acc.name) {
                    let mut r = assoc_row(set, a);
                    r.insert("name", acc.name.clone());
                    out.push(r);
                }
            }
        }
        ("cluster", _) => {
            for c in &set.clusters {
                let mut r = RowMap::new();
                r.insert("cluster", c.name.clone());
                r.insert("name", c.name.clone());
                r.insert("controlhost", c.control_host.clone());
                r.insert(
                    "controlport",
                    if c.control_port == 0 {
                        "0".into()
                    } else {
                        c.control_port.to_string()
                    },
                );
                r.insert("rpc", "9984".into());
                r.insert("tres", c.tres.clone());
                r.insert("nodecount", c.nodes.to_string());
                if let Some(a) = set
                    .assocs
                    .iter()
                    .find(|a| a.cluster == c.name && a.account == "root" && a.user.is_empty())
                {
                    let ar = assoc_row(set, a);
                    for k in ["share", "qos", "defqos", "grpjobs", "grptres", "grpsubmit"] {
                        if let Some(v) = ar.get(k) {
                            r.insert(k, v.clone());
                        }
                    }
                }
                out.push(r);
            }
        }
        ("qos", _) => {
            for q in &set.qos {
                let mut r = RowMap::new();
                r.insert("name", q.name.clone());
                r.insert("id", q.id.to_string());
                r.insert("descr", q.description.clone());
                r.insert("priority", q.priority.to_string());
                r.insert(
                    "gracetime",
                    crate::timefmt::secs2time_str(i64::from(q.grace_time)),
                );
                r.insert("preempt", q.preempt.join(","));
                r.insert("preemptmode", q.preempt_mode.clone());
                r.insert("usagefactor", format!("{:.6}", q.usage_factor));
                limits(&mut r, q.limits.as_ref());
                out.push(r);
            }
        }
        _ => {
            for a in &set.assocs {
                out.push(assoc_row(set, a));
            }
        }
    }
    out
}

/// The row key a name or `where` key filters on.
fn filter_key(entity: &str, key: &str) -> Option<&'static str> {
    Some(match key {
        "name" | "names" => match entity {
            "user" => "user",
            "account" => "account",
            "cluster" => "cluster",
            _ => "name",
        },
        "user" | "users" => "user",
        "account" | "accounts" => "account",
        "cluster" | "clusters" => "cluster",
        "partition" | "partitions" => "partition",
        "parent" | "parentname" => "parentname",
        "qos" => "qos",
        "defaultaccount" => "defacct",
        "adminlevel" => "admin",
        _ => return None,
    })
}

pub fn filter(
    rows: Vec<RowMap>,
    entity: &str,
    names: &[String],
    conds: &[KeyValue],
) -> Result<Vec<RowMap>, String> {
    let mut tests: Vec<(&'static str, Vec<String>)> = Vec::new();
    if !names.is_empty() {
        tests.push((filter_key(entity, "name").unwrap_or("name"), names.to_vec()));
    }
    for c in conds {
        let k =
            filter_key(entity, &c.key).ok_or_else(|| format!("Unknown condition: {}", c.key))?;
        tests.push((k, c.value.split(',').map(str::to_string).collect()));
    }
    Ok(rows
        .into_iter()
        .filter(|r| {
            tests.iter().all(|(k, vals)| {
                let v = r.get(k).map(String::as_str).unwrap_or("");
                vals.iter().any(|x| x.eq_ignore_ascii_case(v))
            })
        })
        .collect())
}

pub fn render(rows: &[RowMap], cols: &[Col], mode: Mode, header: bool) -> String {
    let mut out = String::new();
    let line = |out: &mut String, vals: Vec<&str>| {
        let vals: Vec<_> = vals
            .into_iter()
            .map(drover_proto::text::printable)
            .collect();
        match mode {
            Mode::Table => {
                for (v, c) in vals.iter().zip(cols) {
                    cell(out, v, c.width, true);
                }
            }
            Mode::Parsable => {
                for v in &vals {
                    out.push_str(v);
                    out.push('|');
                }
            }
            Mode::Parsable2 => out.push_str(&vals.join("|")),
        }
        out.push('\n');
    };
    if header {
        line(&mut out, cols.iter().map(|c| COLS[c.idx].1).collect());
        if mode == Mode::Table {
            for c in cols {
                for _ in 0..c.width.unsigned_abs() {
                    out.push('-');
                }
                out.push(' ');
            }
            out.push('\n');
        }
    }
    for r in rows {
        let vals: Vec<&str> = cols
            .iter()
            .map(|c| r.get(COLS[c.idx].0).map(String::as_str).unwrap_or(""))
            .collect();
        line(&mut out, vals);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::acct::{Account, User};

    fn set() -> AssocSet {
        let lim = Limits {
            max_wall_min: 90,
            max_jobs: -1,
            grp_jobs: -1,
            grp_submit_jobs: -1,
            max_submit_jobs: -1,
            ..Default::default()
        };
        AssocSet {
            accounts: vec![Account {
                name: "ml".into(),
                description: "Machine learning".into(),
                organization: "lab".into(),
            }],
            users: vec![User {
                name: "alice".into(),
                default_account: "ml".into(),
                admin_level: "None".into(),
            }],
            assocs: vec![
                Assoc {
                    cluster: "c".into(),
                    account: "ml".into(),
                    parent: "root".into(),
                    shares: 1,
                    qos: vec!["normal".into()],
                    ..Default::default()
                },
                Assoc {
                    cluster: "c".into(),
                    account: "ml".into(),
                    user: "alice".into(),
                    shares: 1,
                    limits: Some(lim),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn user_with_assoc() {
        let s = set();
        let r = filter(rows(&s, "user", true), "user", &["alice".into()], &[]).unwrap();
        let cols = parse_format("account%256").unwrap();
        let text = render(&r, &cols, Mode::Table, false);
        assert_eq!(text.trim(), "ml");
        let cols = parse_format("User,Account,MaxWall,QOS").unwrap();
        let text = render(&r, &cols, Mode::Parsable2, true);
        assert_eq!(text, "User|Account|MaxWall|QOS\nalice|ml|01:30:00|normal\n");
    }

    #[test]
    fn formats_and_filters() {
        assert!(parse_format("descr,org,defacct,def acct").is_ok());
        assert!(parse_format("bogus").is_err());
        let s = set();
        let r = filter(
            rows(&s, "assoc", false),
            "assoc",
            &[],
            &[KeyValue {
                key: "user".into(),
                value: "alice".into(),
            }],
        )
        .unwrap();
        assert_eq!(r.len(), 1);
        assert!(filter(
            rows(&s, "assoc", false),
            "assoc",
            &[],
            &[KeyValue {
                key: "zz".into(),
                value: "1".into()
            }]
        )
        .is_err());
        let cols = parse_format(default_format("account", false)).unwrap();
        let t = render(&rows(&s, "account", false), &cols, Mode::Table, true);
        assert!(
            t.starts_with("   Account                Descr                  Org \n"),
            "{t}"
        );
    }
}
