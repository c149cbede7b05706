//! `sshare`: fair-share shares and usage of associations.

use drover_proto::{GetSharesRequest, ShareRow};

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("accounts", Some('A'), Arg::Required, "accounts"),
    opt("all", Some('a'), Arg::No, "all"),
    opt("long", Some('l'), Arg::No, "long"),
    opt("noheader", Some('n'), Arg::No, "noheader"),
    opt("format", Some('o'), Arg::Required, "format"),
    opt("parsable", Some('P'), Arg::No, "parsable"),
    opt("parsable2", Some('p'), Arg::No, "parsable2"),
    opt("users", Some('u'), Arg::Required, "users"),
    opt("Users", Some('U'), Arg::No, "users_only"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("partition", Some('m'), Arg::No, "partition"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
];

const USAGE: &str =
    "Usage: sshare [-A account[s]] [-a] [-l] [-n] [-o format] [-P] [-p] [-u user[s]] [-U]
";

/// Fields sshare knows: (name, default width, right-aligned).
const FIELDS: &[(&str, usize, bool)] = &[
    ("Account", 20, false),
    ("User", 10, true),
    ("RawShares", 10, true),
    ("NormShares", 11, true),
    ("RawUsage", 11, true),
    ("NormUsage", 11, true),
    ("EffectvUsage", 13, true),
    ("FairShare", 10, true),
    ("LevelFS", 10, true),
];

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Opts {
    pub all: bool,
    pub users_only: bool,
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    pub noheader: bool,
    /// Some("|") for -P (trailing separator), Some("|") + no trailer for -p.
    pub parsable: Option<bool>,
    pub fields: Vec<(usize, usize)>,
}

pub fn parse(args: &[String]) -> Result<Opts, String> {
    let p = opts::parse(TABLE, args, false).map_err(|e| format!("sshare: {e}"))?;
    let mut o = Opts {
        all: p.has("all"),
        users_only: p.has("users_only"),
        noheader: p.has("noheader"),
        ..Default::default()
    };
    if p.has("parsable") {
        o.parsable = Some(true);
    }
    if p.has("parsable2") {
        o.parsable = Some(false);
    }
    for f in &p.opts {
        let v = f.value.clone().unwrap_or_default();
        match f.key {
            "users" => o
                .users
                .extend(v.split(',').filter(|s| !s.is_empty()).map(str::to_string)),
            "accounts" => o
                .accounts
                .extend(v.split(',').filter(|s| !s.is_empty()).map(str::to_string)),
            _ => {}
        }
    }
    let mut names: Vec<&str> = vec![
        "Account",
        "User",
        "RawShares",
        "NormShares",
        "RawUsage",
        "EffectvUsage",
        "FairShare",
    ];
    if p.has("long") {
        names = vec![
            "Account",
            "User",
            "RawShares",
            "NormShares",
            "RawUsage",
            "NormUsage",
            "EffectvUsage",
            "FairShare",
            "LevelFS",
        ];
    }
    let fmt = p.value("format").map(str::to_string);
    let mut fields = Vec::new();
    match fmt {
        Some(f) => {
            for item in f.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (name, width) =
                    match item.split_once('%') {
                        Some((n, w)) => (
                            n,
                            Some(w.parse::<usize>().map_err(|_| {
                                format!("sshare: error: Invalid field width: {item}")
                            })?),
                        ),
                        None => (item, None),
                    };
                let k = FIELDS
                    .iter()
                    .position(|(n, _, _)| n.eq_ignore_ascii_case(name))
                    .ok_or_else(|| format!("sshare: error: Invalid field requested: \"{name}\""))?;
                fields.push((k, width.unwrap_or(FIELDS[k].1)));
            }
        }
        None => {
            for n in names {
                let k = FIELDS.iter().position(|(x, _, _)| *x == n).unwrap_or(0);
                fields.push((k, FIELDS[k].1));
            }
        }
    }
    o.fields = fields;
    if let Some(x) = p.positional.first() {
        return Err(format!("sshare: error: Unrecognized option: {x}"));
    }
    Ok(o)
}

fn value(r: &ShareRow, field: &str, indent: bool) -> String {
    match field {
        "Account" => {
            let pad = if indent { r.depth as usize } else { 0 };
            format!("{}{}", " ".repeat(pad), r.account)
        }
        "User" => r.user.clone(),
        "RawShares" => {
            if r.depth == 0 {
                String::new()
            } else {
                r.raw_shares.to_string()
            }
        }
        "NormShares" => format!("{:.6}", r.norm_shares),
        "RawUsage" => format!("{}", r.raw_usage.round() as u64),
        "NormUsage" | "EffectvUsage" => {
            if r.depth == 0 {
                "1.000000".into()
            } else {
                format!("{:.6}", r.effective_usage)
            }
        }
        "FairShare" => {
            if r.user.is_empty() {
                String::new()
            } else {
                format!("{:.6}", r.fairshare)
            }
        }
        "LevelFS" => {
            if r.effective_usage > 0.0 {
                format!("{:.6}", r.norm_shares / r.effective_usage)
            } else if r.depth == 0 {
                String::new()
            } else {
                "inf".into()
            }
        }
        _ => String::new(),
    }
}

/// Which rows to print: the user's own associations (with their account
/// ancestors) unless -a; -u/-A narrow; -U keeps user rows only.
pub fn select<'a>(o: &Opts, rows: &'a [ShareRow], me: &str) -> Vec<&'a ShareRow> {
    let users: Vec<String> = if !o.users.is_empty() {
        o.users.clone()
    } else if o.all {
        Vec::new()
    } else {
        vec![me.to_string()]
    };
    let user_ok = |r: &ShareRow| users.is_empty() || users.contains(&r.user);
    let acct_ok = |r: &ShareRow| o.accounts.is_empty() || o.accounts.contains(&r.account);
    let mut wanted_accounts: Vec<&str> = rows
        .iter()
        .filter(|r| !r.user.is_empty() && user_ok(r) && acct_ok(r))
        .map(|r| r.account.as_str())
        .collect();
    wanted_accounts.sort_unstable();
    wanted_accounts.dedup();
    rows.iter()
        .filter(|r| {
            if r.user.is_empty() {
                if o.users_only {
                    return false;
                }
                if o.all && o.users.is_empty() {
                    return acct_ok(r) || r.depth == 0;
                }
                r.depth == 0 || wanted_accounts.contains(&r.account.as_str())
            } else {
                user_ok(r) && acct_ok(r)
            }
        })
        .collect()
}

pub fn render(o: &Opts, rows: &[&ShareRow]) -> String {
    let mut out = String::new();
    let line = |vals: Vec<String>| -> String {
        let vals: Vec<_> = vals
            .iter()
            .map(|v| drover_proto::text::printable(v))
            .collect();
        match o.parsable {
            Some(trailer) => {
                let mut s = vals.join("|");
                if trailer {
                    s.push('|');
                }
                s
            }
            None => {
                let mut s = String::new();
                for (k, ((f, w), v)) in o.fields.iter().zip(vals).enumerate() {
                    if k > 0 {
                        s.push(' ');
                    }
                    let v: String = v.chars().take(*w).collect();
                    if FIELDS[*f].2 {
                        s.push_str(&format!("{v:>w$}"));
                    } else {
                        s.push_str(&format!("{v:<w$}"));
                    }
                }
                s
            }
        }
    };
    if !o.noheader {
        out.push_str(&line(
            o.fields
                .iter()
                .map(|(f, _)| FIELDS[*f].0.to_string())
                .collect(),
        ));
        out.push('\n');
        if o.parsable.is_none() {
            out.push_str(&line(
                o.fields.iter().map(|(_, w)| "-".repeat(*w)).collect(),
            ));
            out.push('\n');
        }
    }
    for r in rows {
        let vals = o
            .fields
            .iter()
            .map(|(f, _)| value(r, FIELDS[*f].0, !o.users_only && o.parsable.is_none()))
            .collect();
        out.push_str(&line(vals));
        out.push('\n');
    }
    out
}

pub fn run(args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            eprint!("{USAGE}");
            return 1;
        }
    };
    let (cfg, rt) = match conn::setup("sshare") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    let me = crate::users::user_name(crate::users::uid());
    rt.block_on(async move {
        let mut c = match conn::scheduler_for("sshare", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let req = GetSharesRequest {
            users: o.users.clone(),
            accounts: o.accounts.clone(),
            all_users: o.all,
        };
        match c.get_shares(req).await {
            Ok(r) => {
                let rows = r.into_inner().rows;
                print!("{}", render(&o, &select(&o, &rows, &me)));
                0
            }
            Err(st) => {
                conn::report("sshare", "sshare: error: ", &st);
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(account: &str, user: &str, depth: u32, fs: f64) -> ShareRow {
        ShareRow {
            account: account.into(),
            user: user.into(),
            raw_shares: 1,
            norm_shares: 0.5,
            raw_usage: 120.4,
            effective_usage: 0.25,
            fairshare: fs,
            depth,
        }
    }

    #[test]
    fn default_table_and_script_format() {
        let rows = vec![
            row("root", "", 0, 0.0),
            row("lab", "", 1, 0.0),
            row("lab", "alice", 2, 0.75),
            row("lab", "bob", 2, 0.5),
        ];
        let o = parse(&[]).unwrap();
        let s = render(&o, &select(&o, &rows, "alice"));
        let l: Vec<&str> = s.lines().collect();
        assert_eq!(
            l[0],
            "Account                    User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare"
        );
        assert!(l[1].starts_with("-------------------- ----------"));
        assert!(l[2].starts_with("root "));
        assert!(l[3].starts_with(" lab "));
        assert!(l[4].starts_with("  lab ") && l[4].contains("alice"), "{s}");
        assert!(l[4].ends_with("  0.750000"));
        assert_eq!(l.len(), 5, "bob is not shown without -a: {s}");
        let args: Vec<String> = ["-U", "--format", "Account%256", "--noheader"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        let o = parse(&args).unwrap();
        let s = render(&o, &select(&o, &rows, "alice"));
        assert_eq!(s.lines().count(), 1);
        assert_eq!(s.trim_end(), "lab");
        assert_eq!(s.lines().next().unwrap().len(), 256);
        let o = parse(&["-a".into(), "-P".into()]).unwrap();
        let s = render(&o, &select(&o, &rows, "alice"));
        assert!(
            s.contains("lab|bob|1|0.500000|120|0.250000|0.500000|"),
            "{s}"
        );
        assert!(parse(&["-o".into(), "Bogus".into()]).is_err());
    }
}
