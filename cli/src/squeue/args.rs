//! squeue's command line: the option table and its parsing. Pure.

use drover_proto::{JobState, ALL_STATES};

use super::format::{self, JobField};
use crate::fmtspec::Format;
use crate::jobids::{self, JobIdArg};
use crate::opts::{self, opt, Arg, OptDef};
use crate::refuse::{self, ClustersFrom};

/// Options Drover recognises and refuses (`Requested operation not
/// supported on this system`): licenses are not scheduled, a job has one
/// partition list and one priority, there is no YAML output.
pub const REFUSED: &[&str] = &["licenses", "priority", "yaml"];
/// Their environment variables, refused the same way.
pub const REFUSED_ENV: &[&str] = &["SQUEUE_LICENSES", "SQUEUE_PRIORITY"];

/// `-O` fields of Slurm 23.11's squeue that Drover does not show (burst
/// buffers, federation, heterogeneous jobs, containers, MCS, switches and
/// accrue/preempt/resize bookkeeping it does not keep): refused as
/// unsupported, where a name no squeue knows gets Slurm's `Invalid job
/// format specification`.
pub const REFUSED_FIELDS: &[&str] = &[
    "accruetime",
    "admin_comment",
    "allocsid",
    "associd",
    "boardspernode",
    "burstbuffer",
    "burstbufferstate",
    "clusterfeature",
    "container",
    "containerid",
    "deadline",
    "delayboot",
    "derivedec",
    "hetjobid",
    "hetjobidset",
    "hetjoboffset",
    "lastschedeval",
    "mcslabel",
    "network",
    "ntperboard",
    "ntpercore",
    "ntpersocket",
    "origin",
    "originraw",
    "packjobid",
    "packjobidset",
    "packjoboffset",
    "preempttime",
    "prefer",
    "profile",
    "reboot",
    "reqswitch",
    "resizetime",
    "siblingsactive",
    "siblingsactiveraw",
    "siblingsviable",
    "siblingsviableraw",
    "sperboard",
    "system_comment",
];

pub const TABLE: &[OptDef] = &[
    opt("accounts", Some('A'), Arg::Required, "accounts"),
    opt("account", None, Arg::Required, "accounts"),
    opt("all", Some('a'), Arg::No, "all"),
    opt("array", Some('r'), Arg::No, "array"),
    opt("array-unique", None, Arg::No, "array-unique"),
    opt("Format", Some('O'), Arg::Required, "Format"),
    opt("format", Some('o'), Arg::Required, "format"),
    opt("federation", None, Arg::No, "federation"),
    opt("help", None, Arg::No, "help"),
    opt("hide", None, Arg::No, "hide"),
    opt("iterate", Some('i'), Arg::Required, "iterate"),
    opt("jobs", Some('j'), Arg::Optional, "jobs"),
    opt("job", None, Arg::Optional, "jobs"),
    opt("json", None, Arg::Optional, "json"),
    opt("yaml", None, Arg::Optional, "yaml"),
    opt("local", None, Arg::No, "local"),
    opt("long", Some('l'), Arg::No, "long"),
    opt("licenses", Some('L'), Arg::Required, "licenses"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("me", None, Arg::No, "me"),
    opt("name", Some('n'), Arg::Required, "name"),
    opt("noconvert", None, Arg::No, "noconvert"),
    opt("node", None, Arg::Required, "nodelist"),
    opt("nodes", None, Arg::Required, "nodelist"),
    opt("nodelist", Some('w'), Arg::Required, "nodelist"),
    opt("noheader", Some('h'), Arg::No, "noheader"),
    opt("only-job-state", None, Arg::No, "only-job-state"),
    opt("partitions", Some('p'), Arg::Required, "partitions"),
    opt("partition", None, Arg::Required, "partitions"),
    opt("priority", Some('P'), Arg::No, "priority"),
    opt("qos", Some('q'), Arg::Required, "qos"),
    opt("reservation", Some('R'), Arg::Required, "reservation"),
    opt("sib", None, Arg::No, "sibling"),
    opt("sibling", None, Arg::No, "sibling"),
    opt("sort", Some('S'), Arg::Required, "sort"),
    opt("start", None, Arg::No, "start"),
    opt("steps", Some('s'), Arg::Optional, "steps"),
    opt("states", Some('t'), Arg::Required, "states"),
    opt("state", None, Arg::Required, "states"),
    opt("usage", None, Arg::No, "usage"),
    opt("user", None, Arg::Required, "users"),
    opt("users", Some('u'), Arg::Required, "users"),
    opt("", Some('U'), Arg::Required, "accounts"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
];

pub const USAGE: &str = "Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
              [--json] [--only-job-state] [-ahjlrsv]
";

/// Slurm state names Drover has no records for (accepted by `-t`, match nothing).
const OTHER_STATES: &[&str] = &[
    "REVOKED",
    "RV",
    "SPECIAL_EXIT",
    "SE",
    "STAGE_OUT",
    "SO",
    "RESIZING",
    "RS",
    "SIGNALING",
    "SI",
    "STOPPED",
    "ST",
    "REQUEUE_HOLD",
    "RH",
    "REQUEUE_FED",
    "RF",
    "RESV_DEL_HOLD",
    "RD",
];

/// Everything the command line asked for.
#[derive(Debug, Clone)]
pub struct Params {
    pub format: Format<JobField>,
    pub no_header: bool,
    pub long: bool,
    pub array: bool,
    pub json: bool,
    pub iterate: u64,
    pub jobs: Option<Vec<JobIdArg>>,
    pub job_texts: Vec<String>,
    pub users: Option<Vec<u32>>,
    pub names: Option<Vec<String>>,
    pub states: Option<Vec<JobState>>,
    pub all_states: bool,
    /// `-t SE` without `PD`: of the pending jobs, only those held by
    /// `scontrol requeuehold State=SpecialExit`.
    pub special_exit_only: bool,
    pub partitions: Option<Vec<String>>,
    pub accounts: Option<Vec<String>>,
    pub qos: Option<Vec<String>>,
    pub reservation: Option<String>,
    pub nodes: Option<Vec<String>>,
    pub sort: String,
    pub verbose: u32,
    /// `-v`: Slurm's dump of the options, printed before the jobs.
    pub dump: Vec<String>,
    /// Non-fatal complaints (`Invalid user: x`), printed as errors.
    pub warnings: Vec<String>,
    /// `-s`: list job steps instead of jobs, with the `-o` text if any.
    pub steps: bool,
    pub step_format: Option<String>,
    /// `-s LIST`: only these steps (job id, step id; `None` = every step).
    pub step_list: Option<Vec<(u32, Option<u32>)>>,
    /// `-a` (or `-p`, `SQUEUE_ALL`): jobs in hidden partitions too;
    /// `--hide` turns it off again.
    pub all: bool,
    /// `-M` (or `SLURM_CLUSTERS`): checked against the cluster's name.
    pub clusters: Option<(String, ClustersFrom)>,
    /// Hidden partitions (slurm.conf `Hidden=YES`) whose jobs are not shown:
    /// filled in by `run` unless `all` or the caller is root.
    pub hidden_partitions: Vec<String>,
}

/// What a command line amounts to.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Params>),
    Help,
    Usage,
    Version,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parse a `-t` list. `Ok(None)` means all states.
pub fn parse_states(s: &str) -> Result<Option<Vec<JobState>>, String> {
    if s.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut v = Vec::new();
    for t in s.split(',').filter(|t| !t.is_empty()) {
        match JobState::parse(t) {
            Some(st) => v.push(st),
            None if OTHER_STATES.contains(&t.trim().to_ascii_uppercase().as_str()) => {}
            None => return Err(t.to_string()),
        }
    }
    Ok(Some(v))
}

fn valid_states_line() -> String {
    ALL_STATES
        .iter()
        .map(|s| s.long_name())
        .collect::<Vec<_>>()
        .join(",")
}

/// Parse squeue's command line. Errors are complete stderr lines.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    lookup_uid: &dyn Fn(&str) -> Option<u32>,
    euid: u32,
) -> Result<Parsed, Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("squeue: {e}"),
            "Try \"squeue --help\" for more information".to_string(),
        ]
    })?;
    if p.has("help") {
        return Ok(Parsed::Help);
    }
    if p.has("usage") {
        return Ok(Parsed::Usage);
    }
    if p.has("version") {
        return Ok(Parsed::Version);
    }
    refuse::refuse_options("squeue", &p, REFUSED)?;
    refuse::refuse_env("squeue", env, REFUSED_ENV)?;
    let mut warnings = Vec::new();
    let fatal = |m: String| vec![format!("squeue: error: {m}")];

    // Format.
    let long = p.has("long");
    let mut format_short = p.value("format").map(str::to_string);
    let mut format_long = p.value("Format").map(str::to_string);
    if format_short.is_some() && format_long.is_some() {
        return Err(fatal(
            "-O (--Format) is incompatible with -o (--format)".into(),
        ));
    }
    if long && format_short.is_some() {
        return Err(vec![
            "squeue: fatal: Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
                .to_string(),
        ]);
    }
    let only_state = p.has("only-job-state");
    if format_short.is_none() && format_long.is_none() && !long {
        if let Some(f) = env("SQUEUE_FORMAT") {
            format_short = Some(f);
        } else if let Some(f) = env("SQUEUE_FORMAT2") {
            format_long = Some(f);
        }
    }
    let format_text = format_short.clone();
    let format = if let Some(f) = format_long {
        let (fmt, bad) = format::parse_long_format(&f);
        for b in bad {
            let name = b.trim().to_ascii_lowercase();
            if REFUSED_FIELDS.contains(&name.as_str()) {
                return Err(vec![refuse::not_supported(
                    "squeue",
                    &format!("-O {}", b.trim()),
                )]);
            }
            warnings.push(format!("Invalid job format specification: {b}"));
        }
        fmt
    } else {
        let f = format_short.unwrap_or_else(|| {
            if only_state {
                format::STATE_ONLY_FORMAT.to_string()
            } else if p.has("start") {
                format::START_FORMAT.to_string()
            } else if long {
                format::LONG_FORMAT.to_string()
            } else {
                format::DEFAULT_FORMAT.to_string()
            }
        });
        let (fmt, bad) = format::parse_format(&f);
        for b in bad {
            warnings.push(format!("Invalid job format specification: {b}"));
        }
        fmt
    };
    let mut format = format;
    if p.has("noconvert") {
        for f in &mut format.fields {
            if f.kind == JobField::MinMemory {
                f.kind = JobField::MinMemoryExact;
            }
        }
    }

    // Jobs: -j LIST, --jobs=LIST, or `-j` followed by a positional list.
    let mut positional = p.positional.clone();
    let mut job_texts: Vec<String> = Vec::new();
    if p.has("jobs") {
        for f in p.opts.iter().filter(|f| f.key == "jobs") {
            if let Some(v) = &f.value {
                job_texts.extend(jobids::split_job_list(v));
            }
        }
        if job_texts.is_empty() && !positional.is_empty() {
            job_texts = jobids::split_job_list(&positional.remove(0));
        }
    }
    let mut steps_text = p.value("steps").map(str::to_string);
    if p.has("steps") && !p.has("jobs") && steps_text.is_none() && !positional.is_empty() {
        steps_text = Some(positional.remove(0));
    }
    if p.has("steps") && p.has("jobs") && job_texts.is_empty() {
        return Err(fatal("Incompatible options --jobs and --steps".into()));
    }
    let step_list = match &steps_text {
        Some(t) => {
            Some(parse_step_list(t).map_err(|bad| fatal(format!("Invalid job step id: {bad}")))?)
        }
        None => None,
    };
    if let Some(extra) = positional.first() {
        return Err(vec![
            format!("squeue: error: Unrecognized option: {extra}"),
            USAGE.trim_end().to_string(),
        ]);
    }
    let mut jobs = None;
    if !job_texts.is_empty() {
        let mut v = Vec::new();
        for t in &job_texts {
            match jobids::parse_job_id(t) {
                Some(j) => v.push(j),
                None => return Err(fatal(format!("Invalid job id: {t}"))),
            }
        }
        jobs = Some(v);
    }

    // Users: the last of --me / -u wins.
    let me_pos = p.opts.iter().rposition(|f| f.key == "me");
    let users_pos = p.opts.iter().rposition(|f| f.key == "users");
    let users_text = match (me_pos, users_pos) {
        (Some(m), Some(u)) if m > u => Some(euid.to_string()),
        (Some(_), None) => Some(euid.to_string()),
        (_, Some(_)) => p.value("users").map(str::to_string),
        (None, None) => env("SQUEUE_USERS"),
    };
    let users_shown = users_text.clone();
    let users = users_text.map(|t| {
        let mut v = Vec::new();
        for u in t.split(',').filter(|u| !u.is_empty()) {
            match lookup_uid(u) {
                Some(uid) => v.push(uid),
                None => warnings.push(format!("Invalid user: {u}")),
            }
        }
        v
    });

    let states_text = p
        .value("states")
        .map(str::to_string)
        .or_else(|| env("SQUEUE_STATES"));
    let asks = |t: &str, names: &[&str]| {
        t.split(',')
            .any(|w| names.iter().any(|n| w.trim().eq_ignore_ascii_case(n)))
    };
    let special_exit_only = states_text
        .as_deref()
        .is_some_and(|t| asks(t, &["SE", "SPECIAL_EXIT"]) && !asks(t, &["PD", "PENDING", "ALL"]));
    let (states, all_states) = match states_text {
        // --start: pending jobs and their expected starts.
        None if p.has("start") => (Some(vec![JobState::Pending]), false),
        None => (None, false),
        Some(t) => match parse_states(&t) {
            Ok(None) => (None, true),
            Ok(Some(mut v)) => {
                // SPECIAL_EXIT jobs are pending ones (Slurm's JOB_SPECIAL_EXIT flag).
                if special_exit_only {
                    v.push(JobState::Pending);
                }
                (Some(v), false)
            }
            Err(bad) => {
                return Err(vec![
                    format!("squeue: error: Invalid job state specified: {bad}"),
                    format!(
                        "squeue: error: Valid job states include: {}",
                        valid_states_line()
                    ),
                ])
            }
        },
    };

    let nodes = match p.value("nodelist") {
        Some(w) => match drover_conf::hostlist::expand(w) {
            Ok(h) => Some(h),
            Err(_) => return Err(fatal(format!("'{w}' invalid entry for --nodelist"))),
        },
        None => None,
    };

    let iterate = match p.value("iterate") {
        Some(s) => match s.trim().parse::<i64>() {
            Ok(n) if n > 0 => n as u64,
            _ => return Err(fatal(format!("--iterate={s}"))),
        },
        None => 0,
    };

    let sort = p
        .value("sort")
        .map(str::to_string)
        .or_else(|| env("SQUEUE_SORT"))
        .unwrap_or_else(|| {
            if p.has("start") {
                "S".to_string()
            } else {
                "P,t,-p".to_string()
            }
        });
    check_sort(&sort).map_err(|c| fatal(format!("Invalid sort specification: {c}")))?;

    let verbose = p.count("verbose") as u32;
    let dump = if verbose > 0 {
        let raw = |key: &str, var: &str| p.value(key).map(str::to_string).or_else(|| env(var));
        let states_shown =
            raw("states", "SQUEUE_STATES").or_else(|| p.has("start").then(|| "PD".to_string()));
        let format_shown = format_text
            .clone()
            .or_else(|| p.has("start").then(|| format::START_FORMAT.to_string()));
        options_dump(&OptionsShown {
            all: p.has("all"),
            array: p.has("array") || env("SQUEUE_ARRAY").is_some(),
            federation: p.has("federation"),
            format: format_shown,
            iterate,
            job_flag: p.has("jobs"),
            jobs: (!job_texts.is_empty()).then(|| job_texts.join(",")),
            licenses: p.value("licenses").map(str::to_string),
            local: p.has("local"),
            names: raw("name", "SQUEUE_NAMES"),
            nodes: nodes
                .as_ref()
                .map(|h| drover_conf::hostlist::compress(h))
                .unwrap_or_default(),
            only_job_state: only_state,
            partitions: raw("partitions", "SQUEUE_PARTITION"),
            priority: p.has("priority"),
            reservation: p.value("reservation").map(str::to_string),
            sibling: p.has("sibling"),
            sort: p
                .value("sort")
                .map(str::to_string)
                .or_else(|| env("SQUEUE_SORT"))
                .or_else(|| p.has("start").then(|| "S".to_string())),
            start_flag: p.has("start"),
            states: states_shown,
            step_flag: p.has("steps"),
            steps: p.value("steps").map(str::to_string),
            users: users_shown,
            verbose,
        })
    } else {
        Vec::new()
    };

    // -a shows jobs in hidden partitions; -p and SQUEUE_PARTITION imply it,
    // --hide undoes it (the last of -a/--hide wins, as Slurm reads them).
    let all_pos = p
        .opts
        .iter()
        .rposition(|f| f.key == "all" || f.key == "partitions");
    let hide_pos = p.opts.iter().rposition(|f| f.key == "hide");
    let all = match (all_pos, hide_pos) {
        (Some(a), Some(h)) => a > h,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => env("SQUEUE_ALL").is_some() || env("SQUEUE_PARTITION").is_some(),
    };
    let clusters = refuse::clusters_asked(p.value("clusters"), env);

    Ok(Parsed::Run(Box::new(Params {
        dump,
        step_list,
        all,
        clusters,
        hidden_partitions: Vec::new(),
        steps: p.has("steps"),
        step_format: p.value("format").map(str::to_string),
        format,
        no_header: p.has("noheader"),
        long,
        array: p.has("array") || env("SQUEUE_ARRAY").is_some(),
        json: p.has("json"),
        iterate,
        jobs,
        job_texts,
        users,
        names: p
            .value("name")
            .map(list)
            .or_else(|| env("SQUEUE_NAMES").map(|s| list(&s))),
        states,
        all_states,
        special_exit_only,
        partitions: p
            .value("partitions")
            .map(list)
            .or_else(|| env("SQUEUE_PARTITION").map(|s| list(&s))),
        accounts: p
            .value("accounts")
            .map(list)
            .or_else(|| env("SQUEUE_ACCOUNT").map(|s| list(&s))),
        qos: p
            .value("qos")
            .map(list)
            .or_else(|| env("SQUEUE_QOS").map(|s| list(&s))),
        reservation: p.value("reservation").map(str::to_string),
        nodes,
        sort,
        verbose,
        warnings,
    })))
}

/// What squeue's `-v` shows (its `_print_options`), as Slurm holds it.
struct OptionsShown {
    all: bool,
    array: bool,
    federation: bool,
    format: Option<String>,
    iterate: u64,
    job_flag: bool,
    jobs: Option<String>,
    licenses: Option<String>,
    local: bool,
    names: Option<String>,
    nodes: String,
    only_job_state: bool,
    partitions: Option<String>,
    priority: bool,
    reservation: Option<String>,
    sibling: bool,
    sort: Option<String>,
    start_flag: bool,
    states: Option<String>,
    step_flag: bool,
    steps: Option<String>,
    users: Option<String>,
    verbose: u32,
}

/// squeue's `-v` lines, with Slurm's spacing (and its `(null)` for an
/// option not given).
fn options_dump(o: &OptionsShown) -> Vec<String> {
    let b = |v: bool| if v { "true" } else { "false" };
    let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "(null)".into());
    vec![
        "-----------------------------".to_string(),
        format!("all         = {}", b(o.all)),
        format!("array       = {}", b(o.array)),
        format!("federation  = {}", b(o.federation)),
        format!("format      = {}", s(&o.format)),
        format!("iterate     = {}", o.iterate),
        format!("job_flag    = {}", u8::from(o.job_flag)),
        format!("jobs        = {}", s(&o.jobs)),
        format!("licenses    = {}", s(&o.licenses)),
        format!("local       = {}", b(o.local)),
        format!("names       = {}", s(&o.names)),
        format!("nodes       = {}", o.nodes),
        format!("only_job_state = {}", b(o.only_job_state)),
        format!("partitions  = {}", s(&o.partitions)),
        format!("priority    = {}", b(o.priority)),
        format!("reservation = {}", s(&o.reservation)),
        format!("sibling      = {}", b(o.sibling)),
        format!("sort        = {}", s(&o.sort)),
        format!("start_flag  = {}", u8::from(o.start_flag)),
        format!("states      = {}", s(&o.states)),
        format!("step_flag   = {}", u8::from(o.step_flag)),
        format!("steps       = {}", s(&o.steps)),
        format!("users       = {}", s(&o.users)),
        format!("verbose     = {}", o.verbose),
        "-----------------------------".to_string(),
        String::new(),
        String::new(),
    ]
}

/// `-s` list: `JOB.STEP` or `JOB` (every step of the job), comma separated.
pub fn parse_step_list(t: &str) -> Result<Vec<(u32, Option<u32>)>, String> {
    let mut v = Vec::new();
    for id in t.split(',').filter(|x| !x.is_empty()) {
        let (job, step) = match id.split_once('.') {
            Some((j, s)) => (j, Some(s)),
            None => (id, None),
        };
        let job: u32 = job.trim().parse().map_err(|_| id.to_string())?;
        let step = match step {
            Some(s) => Some(match s.trim() {
                "batch" => u32::MAX - 3,
                "extern" => u32::MAX - 4,
                n => n.parse::<u32>().map_err(|_| id.to_string())?,
            }),
            None => None,
        };
        v.push((job, step));
    }
    Ok(v)
}

const SORT_KEYS: &str = "ABCDGLMNPQSTUVaceghijlmnpqtuvz";

fn check_sort(spec: &str) -> Result<(), char> {
    for c in spec.chars() {
        if matches!(c, ',' | '+' | '-') || SORT_KEYS.contains(c) {
            continue;
        }
        return Err(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &[&str], vars: &[(&str, &str)]) -> Result<Params, Vec<String>> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        match parse_args(&args, &env, &|u| u.parse().ok(), 1000)? {
            Parsed::Run(p) => Ok(*p),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn all_and_hide() {
        assert!(!run(&[], &[]).unwrap().all);
        assert!(run(&["-a"], &[]).unwrap().all);
        assert!(run(&["-p", "x"], &[]).unwrap().all);
        assert!(!run(&["-a", "--hide"], &[]).unwrap().all);
        assert!(run(&["--hide", "-a"], &[]).unwrap().all);
        assert!(run(&[], &[("SQUEUE_ALL", "1")]).unwrap().all);
        assert!(!run(&["--hide"], &[("SQUEUE_ALL", "1")]).unwrap().all);
        assert!(run(&[], &[("SQUEUE_PARTITION", "x")]).unwrap().all);
    }

    #[test]
    fn steps_list() {
        let p = run(&["-s", "5.0,6"], &[]).unwrap();
        assert!(p.steps);
        assert_eq!(p.step_list, Some(vec![(5, Some(0)), (6, None)]));
        // `--steps LIST` as a separate word, as Slurm takes it.
        let p = run(&["--steps", "7.1"], &[]).unwrap();
        assert_eq!(p.step_list, Some(vec![(7, Some(1))]));
        assert_eq!(run(&["-s"], &[]).unwrap().step_list, None);
        assert_eq!(
            run(&["-s", "-j"], &[]).unwrap_err(),
            vec!["squeue: error: Incompatible options --jobs and --steps"]
        );
        assert!(run(&["-s", "-j", "5"], &[]).is_ok());
        assert_eq!(
            run(&["-sx.1"], &[]).unwrap_err(),
            vec!["squeue: error: Invalid job step id: x.1"]
        );
    }

    #[test]
    fn noconvert_keeps_megabytes() {
        let p = run(&["--noconvert", "-o", "%m"], &[]).unwrap();
        assert_eq!(p.format.fields[0].kind, JobField::MinMemoryExact);
        let p = run(&["-o", "%m"], &[]).unwrap();
        assert_eq!(p.format.fields[0].kind, JobField::MinMemory);
    }

    #[test]
    fn clusters_from_option_or_environment() {
        assert_eq!(run(&[], &[]).unwrap().clusters, None);
        assert_eq!(
            run(&["-M", "c1"], &[("SLURM_CLUSTERS", "c2")])
                .unwrap()
                .clusters,
            Some(("c1".to_string(), ClustersFrom::Option))
        );
        assert_eq!(
            run(&[], &[("SLURM_CLUSTERS", "c2")]).unwrap().clusters,
            Some(("c2".to_string(), ClustersFrom::Env))
        );
    }

    #[test]
    fn unsupported_long_fields_refused() {
        assert_eq!(
            run(&["-O", "jobid,BurstBuffer:10"], &[]).unwrap_err(),
            vec!["squeue: error: -O BurstBuffer: Requested operation not supported on this system"]
        );
        for f in REFUSED_FIELDS {
            assert!(run(&["-O", f], &[]).is_err(), "{f}");
        }
        let p = run(&["-O", "jobid,nosuchfield"], &[]).unwrap();
        assert_eq!(
            p.warnings,
            vec!["Invalid job format specification: nosuchfield"]
        );
    }

    #[test]
    fn federation_flags_accepted() {
        for a in ["--federation", "--local", "--sibling", "--sib"] {
            assert!(run(&[a], &[]).is_ok(), "{a}");
        }
        for v in [
            "SQUEUE_FEDERATION",
            "SQUEUE_LOCAL",
            "SQUEUE_SIB",
            "SQUEUE_SIBLING",
        ] {
            assert!(run(&[], &[(v, "1")]).is_ok(), "{v}");
        }
    }
}
