//! sbatch's option table, the `SBATCH_*` input environment variables, and
//! the conversion of option values into [`SbatchOpts`] (with Slurm's error
//! messages). Pure, but for `-F/--nodefile`, which reads its file.

use crate::timefmt;
use drover_conf::datetime::parse_begin;

pub use super::envvars::{env_options, env_options_from, EnvOption, ENV_VARS, SALLOC_ENV_VARS};
pub use super::table::TABLE;

/// A `[type:]count` GPU request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuReq {
    pub kind: String,
    pub count: u32,
}

/// Everything sbatch's options say, after validation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SbatchOpts {
    pub job_name: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    pub open_append: Option<bool>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    pub time: Option<u32>,
    pub nodes: Option<(u32, u32)>,
    pub ntasks: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    pub cpus_per_task: Option<u32>,
    pub cpus_per_gpu: Option<u32>,
    pub mincpus: Option<u32>,
    pub mem: Option<u64>,
    pub mem_per_cpu: Option<u64>,
    pub mem_per_gpu: Option<u64>,
    pub gres: Option<String>,
    pub gpus: Option<GpuReq>,
    pub gpus_per_node: Option<GpuReq>,
    pub gpus_per_task: Option<u32>,
    pub constraint: Option<String>,
    pub nodelist: Option<String>,
    pub nodefile: Option<String>,
    pub exclude: Option<String>,
    pub exclusive: Option<bool>,
    /// Some(true): --requeue, Some(false): --no-requeue.
    pub requeue: Option<bool>,
    pub reservation: Option<String>,
    pub dependency: Option<String>,
    pub array: Option<String>,
    pub export: Option<String>,
    pub chdir: Option<String>,
    pub comment: Option<String>,
    pub wckey: Option<String>,
    pub clusters: Option<String>,
    /// (signal, seconds before the limit, batch shell only)
    pub signal: Option<(u32, u32, bool)>,
    pub mail_type: Option<String>,
    pub mail_user: Option<String>,
    pub hold: bool,
    pub begin: Option<i64>,
    pub nice: Option<i32>,
    pub priority: Option<u32>,
    pub kill_on_invalid_dep: Option<bool>,
    pub wait: bool,
    pub parsable: bool,
    pub quiet: bool,
    pub verbose: u32,
    pub wrap: Option<String>,
    pub help: bool,
    pub usage: bool,
    pub version: bool,
    /// `--oversubscribe`: share nodes with other jobs.
    pub oversubscribe: bool,
    /// `--gpu-bind`, for the job's steps (`SLURM_GPU_BIND`).
    pub gpu_bind: Option<String>,
}

/// `--mem`, `--mem-per-cpu`, `--mem-per-gpu` in MB (the workspace's one
/// memory-size parser), with sbatch's message.
fn mem_mb(v: &str) -> Result<u64, String> {
    drover_conf::units::parse_mem_mb(v).map_err(|_| format!("invalid memory constraint {v}"))
}

fn parse_u32(v: &str, what: &str) -> Result<u32, String> {
    let t = v.trim();
    if !t.is_empty() && t.len() <= 10 && t.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = t.parse::<u64>() {
            if n < u64::from(u32::MAX) {
                return Ok(n as u32);
            }
        }
    }
    Err(format!("Invalid numeric value \"{v}\" for {what}."))
}

/// A count that must be at least 1 (Slurm's `parse_int(.., positive)`).
pub fn parse_positive(v: &str, what: &str) -> Result<u32, String> {
    match parse_u32(v, what)? {
        0 => Err(format!("Invalid numeric value \"{v}\" for {what}.")),
        n => Ok(n),
    }
}

/// `--uid`/`--gid`: Slurm lets only root submit for another user; Drover
/// does not submit for another user at all, and says so rather than run
/// the job as root.
pub fn identity_option(key: &str, real_uid: u32) -> String {
    if real_uid != 0 {
        format!("--{key} only permitted by root user")
    } else {
        format!("--{key} is not supported: run sbatch as the user (e.g. sudo -u USER sbatch)")
    }
}

/// `-N min[-max]`.
fn parse_nodes(v: &str) -> Result<(u32, u32), String> {
    let bad = || format!("invalid node count `{v}'");
    let (a, b) = match v.split_once('-') {
        Some((a, b)) => (a, b),
        None => (v, v),
    };
    let a = parse_u32(a, "--nodes").map_err(|_| bad())?;
    let b = parse_u32(b, "--nodes").map_err(|_| bad())?;
    if a == 0 && b == 0 || b < a {
        return Err(bad());
    }
    Ok((a, b))
}

fn parse_gpu_req(v: &str, what: &str) -> Result<GpuReq, String> {
    let bad = || format!("Invalid {what} specification: {v}");
    let v = v.trim();
    let v = v.strip_prefix("gpu:").unwrap_or(v);
    let (kind, count) = match v.rsplit_once(':') {
        Some((k, c)) => (k.to_string(), c),
        None => (String::new(), v),
    };
    if kind.contains(':') || kind.contains(',') {
        return Err(bad());
    }
    let count = parse_u32(count, what).map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    Ok(GpuReq { kind, count })
}

/// Signal numbers by name (Linux numbering).
pub const SIGNALS: &[(&str, u32)] = &[
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
    ("STKFLT", 16),
    ("CHLD", 17),
    ("CONT", 18),
    ("STOP", 19),
    ("TSTP", 20),
    ("TTIN", 21),
    ("TTOU", 22),
    ("URG", 23),
    ("XCPU", 24),
    ("XFSZ", 25),
    ("VTALRM", 26),
    ("PROF", 27),
    ("WINCH", 28),
    ("IO", 29),
    ("POLL", 29),
    ("PWR", 30),
    ("SYS", 31),
];

/// A signal by number or name, with or without the `SIG` prefix.
pub fn parse_signal(s: &str) -> Option<u32> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        let n: u32 = s.parse().ok()?;
        return (1..=64).contains(&n).then_some(n);
    }
    let u = s.to_ascii_uppercase();
    let u = u.strip_prefix("SIG").unwrap_or(&u);
    SIGNALS.iter().find(|(n, _)| *n == u).map(|(_, v)| *v)
}

/// `--signal=[R:][B:]SIG[@TIME]` -> (signal, time, batch only).
pub fn parse_signal_spec(v: &str) -> Option<(u32, u32, bool)> {
    let mut rest = v.trim();
    let mut batch = false;
    loop {
        if let Some(r) = rest.strip_prefix("B:").or_else(|| rest.strip_prefix("b:")) {
            batch = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix("R:").or_else(|| rest.strip_prefix("r:")) {
            rest = r;
        } else {
            break;
        }
    }
    let (sig, time) = match rest.split_once('@') {
        Some((s, t)) => {
            let t = t.trim();
            if t.is_empty() || t.len() > 5 || !t.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let t: u32 = t.parse().ok()?;
            if t > 0xffff {
                return None;
            }
            (s, t)
        }
        None => (rest, 60),
    };
    Some((parse_signal(sig)?, time, batch))
}

const DEP_TYPES: &[&str] = &[
    "after",
    "afterany",
    "afterburstbuffer",
    "aftercorr",
    "afternotok",
    "afterok",
    "expand",
];

/// Syntax check of a `--dependency` list (`afterok:12:13,singleton`, `?` = any).
pub fn valid_dependency(v: &str) -> bool {
    let v = v.trim();
    if v.is_empty() {
        return false;
    }
    for item in v.split([',', '?']) {
        if item.eq_ignore_ascii_case("singleton") {
            continue;
        }
        let mut parts = item.split(':');
        let kind = parts.next().unwrap_or("").to_ascii_lowercase();
        if !DEP_TYPES.contains(&kind.as_str()) {
            return false;
        }
        let mut any = false;
        for id in parts {
            any = true;
            let (id, plus) = match id.split_once('+') {
                Some((i, p)) => (i, Some(p)),
                None => (id, None),
            };
            if let Some(p) = plus {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return false;
                }
            }
            let ok = match id.split_once('_') {
                Some((j, t)) => {
                    crate::jobids::parse_job_id(j).is_some()
                        && (t == "*" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())))
                }
                None => crate::jobids::parse_job_id(id).is_some(),
            };
            if !ok {
                return false;
            }
        }
        if !any {
            return false;
        }
    }
    true
}

const MAIL_TYPES: &[&str] = &[
    "NONE",
    "BEGIN",
    "END",
    "FAIL",
    "REQUEUE",
    "ALL",
    "INVALID_DEPEND",
    "STAGE_OUT",
    "TIME_LIMIT",
    "TIME_LIMIT_90",
    "TIME_LIMIT_80",
    "TIME_LIMIT_50",
    "ARRAY_TASKS",
];

impl SbatchOpts {
    /// `-F/--nodefile`: the file's host names (whitespace or comma
    /// separated) become the node list.
    pub fn read_nodefile(&mut self) -> Result<(), String> {
        if let Some(path) = &self.nodefile {
            let t =
                std::fs::read_to_string(path).map_err(|_| format!("Unable to open file {path}"))?;
            let hosts: Vec<&str> = t.split_whitespace().flat_map(|l| l.split(',')).collect();
            self.nodelist = Some(drover_conf::hostlist::compress_in_order(&hosts));
        }
        Ok(())
    }

    /// Apply one option value. Errors are Slurm's messages (without the
    /// `sbatch: error: ` prefix).
    pub fn apply(&mut self, key: &str, value: Option<&str>, now: i64) -> Result<(), String> {
        let v = value.unwrap_or("");
        let s = || Some(v.to_string());
        if let Some(refused) = crate::support::job_refusal(key, value) {
            return Err(refused);
        }
        match key {
            "array" => {
                if crate::jobids::parse_array_spec(v).is_none() {
                    return Err("Invalid --array specification".into());
                }
                self.array = s();
            }
            "account" => self.account = s(),
            "begin" => {
                self.begin = Some(
                    parse_begin(v, now, &timefmt::Local).ok_or("Invalid --begin specification")?,
                )
            }
            "cpus-per-task" => self.cpus_per_task = Some(parse_positive(v, "--cpus-per-task")?),
            "uid" | "gid" => return Err(identity_option(key, crate::users::uid())),
            "constraint" => self.constraint = s(),
            "dependency" => {
                if !valid_dependency(v) {
                    return Err("Batch job submission failed: Job dependency problem".into());
                }
                self.dependency = s();
            }
            "chdir" => self.chdir = s(),
            "error" => self.error = s(),
            "nodefile" => self.nodefile = s(),
            "gpus" => self.gpus = Some(parse_gpu_req(v, "--gpus")?),
            "help" => self.help = true,
            "hold" => self.hold = true,
            "input" => self.input = s(),
            "job-name" => self.job_name = s(),
            "clusters" => self.clusters = s(),
            "ntasks" => self.ntasks = Some(parse_u32(v, "--ntasks")?),
            "nodes" => self.nodes = Some(parse_nodes(v)?),
            "output" => self.output = s(),
            "partition" => self.partition = s(),
            "qos" => self.qos = s(),
            "quiet" => self.quiet = true,
            "time" => {
                self.time = Some(match timefmt::parse_time_limit(v) {
                    // "A time limit of zero requests that no time limit be imposed."
                    Some(0) => drover_proto::INFINITE,
                    Some(m) => m,
                    None => return Err("Invalid --time specification".into()),
                })
            }
            // A count from SBATCH_DEBUG, one more for each -v.
            "verbose" => match value.and_then(|n| n.trim().parse::<u32>().ok()) {
                Some(n) => self.verbose = n,
                None => self.verbose += 1,
            },
            "version" => self.version = true,
            "nodelist" => self.nodelist = s(),
            "wait" => self.wait = true,
            "exclude" => self.exclude = s(),
            "comment" => self.comment = s(),
            "cpus-per-gpu" => self.cpus_per_gpu = Some(parse_u32(v, "--cpus-per-gpu")?),
            "exclusive" => match value {
                None | Some("") | Some("exclusive") => self.exclusive = Some(true),
                Some(x) => return Err(format!("invalid exclusive option {x}")),
            },
            "export" => self.export = s(),
            "gpus-per-node" => self.gpus_per_node = Some(parse_gpu_req(v, "--gpus-per-node")?),
            "gpus-per-task" => {
                self.gpus_per_task = Some(parse_gpu_req(v, "--gpus-per-task")?.count)
            }
            "gres" => {
                if v.trim().is_empty() {
                    return Err(format!("Invalid --gres specification: {v}"));
                }
                self.gres = if v.eq_ignore_ascii_case("none") {
                    None
                } else {
                    s()
                };
            }
            "kill-on-invalid-dep" => {
                self.kill_on_invalid_dep = Some(match v.to_ascii_lowercase().as_str() {
                    "yes" => true,
                    "no" => false,
                    _ => return Err("Invalid --kill-on-invalid-dep specification".into()),
                })
            }
            "mail-type" => {
                for t in v.split(',') {
                    if !MAIL_TYPES.contains(&t.trim().to_ascii_uppercase().as_str()) {
                        return Err(format!("--mail-type={v} invalid"));
                    }
                }
                self.mail_type = s();
            }
            "mail-user" => self.mail_user = s(),
            "mem" => {
                self.mem = Some(mem_mb(v)?);
                self.mem_per_cpu = None;
                self.mem_per_gpu = None;
            }
            "mem-per-cpu" => {
                self.mem_per_cpu = Some(mem_mb(v)?);
                self.mem = None;
                self.mem_per_gpu = None;
            }
            "mem-per-gpu" => {
                self.mem_per_gpu = Some(mem_mb(v)?);
                self.mem = None;
                self.mem_per_cpu = None;
            }
            "mincpus" => self.mincpus = Some(parse_u32(v, "--mincpus")?),
            "nice" => {
                let n: i64 = if value.is_none() {
                    100
                } else {
                    v.trim()
                        .parse()
                        .map_err(|_| format!("Invalid --nice value: {v}"))?
                };
                if n.abs() > 2_147_483_645 {
                    return Err(format!("Invalid --nice value: {v}"));
                }
                self.nice = Some(n as i32);
            }
            "no-requeue" => self.requeue = Some(false),
            "requeue" => self.requeue = Some(true),
            "ntasks-per-node" => self.ntasks_per_node = Some(parse_u32(v, "--ntasks-per-node")?),
            "open-mode" => {
                self.open_append = Some(match v.to_ascii_lowercase().as_str() {
                    "append" | "a" => true,
                    "truncate" | "t" => false,
                    _ => return Err(format!("Invalid --open-mode argument: {v}. Ignored")),
                })
            }
            "parsable" => self.parsable = true,
            "priority" => {
                if v.eq_ignore_ascii_case("top") {
                    self.priority = Some(u32::MAX - 1);
                } else {
                    self.priority = Some(parse_u32(v, "--priority")?);
                }
            }
            "reservation" => self.reservation = s(),
            "signal" => {
                self.signal = Some(parse_signal_spec(v).ok_or("Invalid --signal specification")?)
            }
            "usage" => self.usage = true,
            "wckey" => self.wckey = s(),
            "wrap" => self.wrap = s(),
            "oversubscribe" => self.oversubscribe = true,
            "gpu-bind" => {
                drover_proto::bindopt::parse_gpu_bind(v)?;
                self.gpu_bind = s();
            }
            // Values Drover's behaviour already matches (crate::support
            // refuses the others): block task layout, no memory binding,
            // GRES not bound to sockets, jobs start once their nodes are up.
            "distribution" | "mem-bind" | "gres-flags" | "wait-all-nodes" => {}
            // sbatch reads no #PBS directives.
            "ignore-pbs" => {}
            other => return Err(format!("unrecognized option '--{other}'")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(k: &str, v: Option<&str>) -> Result<SbatchOpts, String> {
        let mut o = SbatchOpts::default();
        o.apply(k, v, 1_700_000_000).map(|_| o)
    }

    #[test]
    fn every_key_in_the_table_is_handled() {
        for d in TABLE {
            let mut o = SbatchOpts::default();
            if let Err(e) = o.apply(d.key, Some("1"), 0) {
                assert!(!e.starts_with("unrecognized"), "{}: {e}", d.key);
            }
        }
    }

    #[test]
    fn zero_cpus_and_other_users_refused() {
        let e = parse_positive("0", "--cpus-per-task").unwrap_err();
        assert_eq!(e, "Invalid numeric value \"0\" for --cpus-per-task.");
        assert_eq!(parse_positive("3", "-c"), Ok(3));
        assert_eq!(
            identity_option("uid", 1000),
            "--uid only permitted by root user"
        );
        assert!(identity_option("gid", 0).contains("not supported"));
    }

    #[test]
    fn memory() {
        assert_eq!(
            apply("mem", Some("4x")).unwrap_err(),
            "invalid memory constraint 4x"
        );
        assert_eq!(
            apply("mem", Some("1P")).unwrap_err(),
            "invalid memory constraint 1P"
        );
        assert_eq!(apply("mem", Some("1TB")).unwrap().mem, Some(1024 * 1024));
        let mut o = apply("mem-per-cpu", Some("2G")).unwrap();
        o.apply("mem", Some("8G"), 0).unwrap();
        assert_eq!((o.mem, o.mem_per_cpu), (Some(8192), None));
    }

    #[test]
    fn values() {
        assert_eq!(apply("time", Some("0:5:0")).unwrap().time, Some(5));
        assert_eq!(
            apply("time", Some("bogus")).unwrap_err(),
            "Invalid --time specification"
        );
        assert_eq!(apply("nodes", Some("2-4")).unwrap().nodes, Some((2, 4)));
        assert_eq!(apply("nodes", Some("3")).unwrap().nodes, Some((3, 3)));
        assert!(apply("nodes", Some("4-2")).is_err());
        assert_eq!(
            apply("ntasks", Some("x")).unwrap_err(),
            "Invalid numeric value \"x\" for --ntasks."
        );
        assert_eq!(
            apply("gpus", Some("a100:2")).unwrap().gpus,
            Some(GpuReq {
                kind: "a100".into(),
                count: 2
            })
        );
        assert_eq!(apply("gpus", Some("4")).unwrap().gpus.unwrap().count, 4);
        assert!(apply("gpus", Some("x")).is_err());
        assert_eq!(apply("nice", None).unwrap().nice, Some(100));
        assert_eq!(apply("nice", Some("-5")).unwrap().nice, Some(-5));
        assert_eq!(
            apply("open-mode", Some("append")).unwrap().open_append,
            Some(true)
        );
        assert!(apply("array", Some("0-15%4")).is_ok());
        assert!(apply("array", Some("x")).is_err());
        assert_eq!(apply("exclusive", None).unwrap().exclusive, Some(true));
        assert!(apply("mail-type", Some("END,FAIL")).is_ok());
        assert!(apply("mail-type", Some("SOMETIMES")).is_err());
        assert_eq!(apply("no-requeue", None).unwrap().requeue, Some(false));
        assert_eq!(
            apply("hint", Some("nomultithread")).unwrap_err(),
            "--hint is not supported: Requested operation not supported on this system"
        );
        assert!(apply("exclusive", Some("user")).is_err());
        assert!(apply("distribution", Some("block")).is_ok());
        assert!(apply("distribution", Some("cyclic")).is_err());
        assert!(apply("oversubscribe", None).unwrap().oversubscribe);
        assert_eq!(
            apply("gpu-bind", Some("single:1"))
                .unwrap()
                .gpu_bind
                .as_deref(),
            Some("single:1")
        );
        assert!(apply("gpu-bind", Some("far")).is_err());
    }

    #[test]
    fn signals() {
        assert_eq!(parse_signal_spec("USR1@90"), Some((10, 90, false)));
        assert_eq!(parse_signal_spec("B:SIGTERM@30"), Some((15, 30, true)));
        assert_eq!(parse_signal_spec("10"), Some((10, 60, false)));
        assert_eq!(parse_signal_spec("sigusr2"), Some((12, 60, false)));
        assert_eq!(parse_signal_spec("R:B:INT@1"), Some((2, 1, true)));
        for bad in ["", "NOPE", "USR1@", "USR1@x", "0", "65", "USR1@99999"] {
            assert!(parse_signal_spec(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn dependencies() {
        for ok in [
            "after:12",
            "afterok:12:13",
            "afternotok:5,afterany:7",
            "singleton",
            "afterok:12?afterok:13",
            "afterany:12_3",
            "aftercorr:12_*",
            "after:12+5",
        ] {
            assert!(valid_dependency(ok), "{ok}");
        }
        for bad in [
            "",
            "afterok",
            "afterok:",
            "sometime:12",
            "afterok:x",
            "after:12+",
        ] {
            assert!(!valid_dependency(bad), "{bad}");
        }
    }

    #[test]
    fn env_vars() {
        let env = vec![
            ("SBATCH_PARTITION".to_string(), "gpu".to_string()),
            ("SBATCH_EXCLUSIVE".to_string(), "".to_string()),
            ("SBATCH_TIMELIMIT".to_string(), "10".to_string()),
            ("HOME".to_string(), "/x".to_string()),
        ];
        let o: Vec<_> = env_options(&env)
            .into_iter()
            .map(|(k, v, _)| (k, v))
            .collect();
        assert!(o.contains(&("partition", Some("gpu".into()))));
        assert!(o.contains(&("exclusive", None)));
        assert!(o.contains(&("time", Some("10".into()))));
        assert_eq!(o.len(), 3);
    }
}
