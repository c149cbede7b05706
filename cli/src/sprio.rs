//! `sprio`: the factors of pending jobs' multifactor priorities.

use drover_proto::{GetPrioritiesRequest, GetPrioritiesResponse, PriorityFactors};

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("jobs", Some('j'), Arg::Required, "jobs"),
    opt("user", Some('u'), Arg::Required, "user"),
    opt("users", None, Arg::Required, "user"),
    opt("long", Some('l'), Arg::No, "long"),
    opt("norm", Some('n'), Arg::No, "norm"),
    opt("weights", Some('w'), Arg::No, "weights"),
    opt("noheader", Some('h'), Arg::No, "noheader"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("help", None, Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
];

const USAGE: &str =
    "Usage: sprio [-j jid[s]] [-u user_name[s]] [-l] [-n] [-w] [-h] [-p partition[s]]
";

/// What sprio prints.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Opts {
    pub jobs: Vec<u32>,
    pub users: Vec<String>,
    pub partitions: Vec<String>,
    pub long: bool,
    pub norm: bool,
    pub weights: bool,
    pub noheader: bool,
}

pub fn parse(args: &[String]) -> Result<Opts, String> {
    let p = opts::parse(TABLE, args, false).map_err(|e| format!("sprio: {e}"))?;
    let mut o = Opts {
        long: p.has("long"),
        norm: p.has("norm"),
        weights: p.has("weights"),
        noheader: p.has("noheader"),
        ..Default::default()
    };
    for f in &p.opts {
        let v = f.value.clone().unwrap_or_default();
        match f.key {
            "jobs" => {
                for j in v.split(',').filter(|s| !s.is_empty()) {
                    o.jobs.push(
                        j.trim()
                            .parse()
                            .map_err(|_| format!("sprio: error: Invalid job id: {j}"))?,
                    );
                }
            }
            "user" => o.users.extend(v.split(',').map(str::to_string)),
            "partition" => o.partitions.extend(v.split(',').map(str::to_string)),
            _ => {}
        }
    }
    if let Some(x) = p.positional.first() {
        return Err(format!("sprio: error: Unrecognized option: {x}"));
    }
    Ok(o)
}

fn col(out: &mut String, v: &str, w: usize, right: bool) {
    if !out.is_empty() {
        out.push(' ');
    }
    let v: String = v
        .chars()
        .take(w)
        .map(drover_proto::text::printable_char)
        .collect();
    if right {
        out.push_str(&format!("{v:>w$}"));
    } else {
        out.push_str(&format!("{v:<w$}"));
    }
}

/// The table (or the weights line) as sprio prints it.
pub fn render(o: &Opts, r: &GetPrioritiesResponse) -> String {
    let w = r.weights.clone().unwrap_or_default();
    let show_tres = !w.tres.is_empty();
    let mut header = String::new();
    let mut cols: Vec<(&str, usize, bool)> = vec![("JOBID", 15, true), ("PARTITION", 9, false)];
    if o.long {
        cols.push(("USER", 8, true));
        cols.push(("ACCOUNT", 8, true));
    }
    cols.push(("PRIORITY", 10, true));
    cols.push(("SITE", 10, true));
    cols.push(("AGE", 10, true));
    if o.long {
        cols.push(("ASSOC", 10, true));
    }
    cols.extend([
        ("FAIRSHARE", 10, true),
        ("JOBSIZE", 10, true),
        ("PARTITION", 10, true),
        ("QOS", 10, true),
    ]);
    if o.long {
        cols.push(("NICE", 11, true));
    }
    if show_tres || o.long {
        cols.push(("TRES", 20, true));
    }
    for (n, wd, right) in &cols {
        col(&mut header, n, *wd, *right);
    }
    let mut out = String::new();
    if !o.noheader {
        out.push_str(&header);
        out.push('\n');
    }
    let fmt = |v: f64, weight: u32| -> String {
        if o.norm {
            if weight == 0 {
                "0.0000000".into()
            } else {
                format!("{:.7}", v / f64::from(weight))
            }
        } else {
            format!("{}", v.round() as i64)
        }
    };
    if o.weights {
        let mut line = String::new();
        for (n, wd, right) in &cols {
            let v = match *n {
                "JOBID" => "Weights".to_string(),
                "PRIORITY" | "USER" | "ACCOUNT" | "NICE" => String::new(),
                "PARTITION" if !*right => String::new(),
                "SITE" => "1".into(),
                "AGE" => w.age.to_string(),
                "ASSOC" => w.assoc.to_string(),
                "FAIRSHARE" => w.fairshare.to_string(),
                "JOBSIZE" => w.jobsize.to_string(),
                "PARTITION" => w.partition.to_string(),
                "QOS" => w.qos.to_string(),
                "TRES" => w.tres.clone(),
                _ => String::new(),
            };
            col(&mut line, &v, *wd, *right);
        }
        out.push_str(&line);
        out.push('\n');
        return out;
    }
    for j in r.jobs.iter().filter(|j| keep(o, j)) {
        let mut line = String::new();
        for (n, wd, right) in &cols {
            let v = match *n {
                "JOBID" => j.job_id.to_string(),
                "PARTITION" if !*right => j.partition.clone(),
                "USER" => j.user.clone(),
                "ACCOUNT" => j.account.clone(),
                "PRIORITY" => {
                    if o.norm {
                        format!("{:.7}", f64::from(j.priority) / f64::from(u32::MAX))
                    } else {
                        j.priority.to_string()
                    }
                }
                "SITE" => "0".into(),
                "AGE" => fmt(j.age, w.age),
                "ASSOC" => fmt(j.assoc, w.assoc),
                "FAIRSHARE" => fmt(j.fairshare, w.fairshare),
                "JOBSIZE" => fmt(j.jobsize, w.jobsize),
                "PARTITION" => fmt(j.partition_factor, w.partition),
                "QOS" => fmt(j.qos, w.qos),
                "NICE" => j.nice.to_string(),
                "TRES" => j.tres.clone(),
                _ => String::new(),
            };
            col(&mut line, &v, *wd, *right);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn keep(o: &Opts, j: &PriorityFactors) -> bool {
    (o.partitions.is_empty() || o.partitions.contains(&j.partition))
        && (o.users.is_empty() || o.users.contains(&j.user))
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
    let (cfg, rt) = match conn::setup("sprio") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut c = match conn::scheduler_for("sprio", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let req = GetPrioritiesRequest {
            job_ids: o.jobs.clone(),
            users: o.users.clone(),
        };
        match c.get_priorities(req).await {
            Ok(r) => {
                let r = r.into_inner();
                if !r.multifactor {
                    eprintln!(
                        "You are not running a supported priority plugin\n({}).\n\
                         Only 'priority/multifactor' is supported.",
                        cfg.priority_type
                    );
                    return 1;
                }
                if !o.jobs.is_empty() && r.jobs.is_empty() {
                    eprintln!("Unable to find jobs matching user/id(s) specified");
                    return 1;
                }
                print!("{}", render(&o, &r));
                0
            }
            Err(st) => {
                conn::report("sprio", "sprio: error: ", &st);
                1
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::PriorityWeights;

    #[test]
    fn table_and_weights() {
        let r = GetPrioritiesResponse {
            jobs: vec![PriorityFactors {
                job_id: 12,
                partition: "batch".into(),
                user: "alice".into(),
                priority: 1525,
                age: 500.4,
                fairshare: 1000.0,
                jobsize: 25.0,
                ..Default::default()
            }],
            weights: Some(PriorityWeights {
                age: 1000,
                fairshare: 2000,
                jobsize: 100,
                ..Default::default()
            }),
            multifactor: true,
        };
        let o = parse(&[]).unwrap();
        let s = render(&o, &r);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS"
        );
        assert_eq!(
            lines[1],
            "             12 batch           1525          0        500       1000         25          0          0"
        );
        let w = render(&parse(&["-w".to_string()]).unwrap(), &r);
        assert!(
            w.lines()
                .nth(1)
                .unwrap()
                .trim_start()
                .starts_with("Weights"),
            "{w}"
        );
        assert!(w.contains("      1000       2000        100"), "{w}");
        let n = render(&parse(&["-n".to_string(), "-h".to_string()]).unwrap(), &r);
        assert!(n.contains("0.5004000"), "{n}");
        assert!(parse(&["-j".into(), "x".into()]).is_err());
    }
}
