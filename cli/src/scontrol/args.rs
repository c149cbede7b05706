//! scontrol's command line: options, and the command words resolved into a
//! [`Command`]. Pure.

use super::{part, resv, token, unsupported};
use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("all", Some('a'), Arg::No, "all"),
    opt("details", Some('d'), Arg::No, "details"),
    opt("federation", None, Arg::No, "federation"),
    opt("future", Some('F'), Arg::No, "future"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("hide", None, Arg::No, "hide"),
    opt("json", None, Arg::Optional, "json"),
    opt("yaml", None, Arg::Optional, "yaml"),
    opt("local", None, Arg::No, "local"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("oneliner", Some('o'), Arg::No, "oneliner"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("sibling", None, Arg::No, "sibling"),
    opt("uid", Some('u'), Arg::Required, "uid"),
    opt("usage", None, Arg::No, "usage"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
];

pub(super) const USAGE: &str = "Usage: scontrol [<OPTION>] [<COMMAND>]
  Valid <OPTION> values are:
     -a or --all: equivalent to \"all\" command
     -d or --details: equivalent to \"details\" command
     -h or --help: equivalent to \"help\" command
     --json: produce JSON output (show job/node/partition)
     -o or --oneliner: equivalent to \"oneliner\" command
     -Q or --quiet: equivalent to \"quiet\" command
     -V or --version: equivalent to \"version\" command

  Valid <COMMAND> values are:
     show <ENTITY> [<ID>]     ENTITY: job, node, partition, reservation, config,
                              hostnames, hostlist
     create reservation <SPECIFICATIONS>   update ReservationName=<NAME> ...
     delete reservation <NAME>
     create PartitionName=<NAME> <SPECIFICATIONS>
     delete PartitionName=<NAME>
     hold <job_list>          uhold <job_list>      release <job_list>
     requeue <job_list>       requeuehold [State=SpecialExit] <job_list>
     suspend <job_list>       resume <job_list>
     update <SPECIFICATIONS>  (JobId=..., NodeName=... or PartitionName=...)
     write batch_script <job_id> [<file>|-]
     listpids [<job_id>[.<step_id>]] [<NodeName>]
     ping  reconfigure  shutdown  version
";

/// Global flags.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub one_liner: bool,
    pub details: bool,
    pub json: bool,
    pub quiet: bool,
    pub verbose: u32,
    /// `-a` (not undone by a later `--hide`): hidden partitions too.
    pub all: bool,
    /// `-F`: nodes in the FUTURE state too.
    pub future: bool,
    /// `-M` (or `SLURM_CLUSTERS`): checked against the cluster's name.
    pub clusters: Option<(String, crate::refuse::ClustersFrom)>,
}

/// The command words, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    ShowJob(Option<String>),
    ShowStep(Option<String>),
    ShowNode(Option<String>),
    ShowPartition(Option<String>),
    ShowConfig,
    ShowDaemons,
    Hostnames(Option<String>),
    Hostlist(String, bool),
    Action(&'static str, Vec<String>),
    Update(Vec<String>),
    Resv(resv::ResvOp),
    /// `create|update|delete PartitionName=...`
    PartEdit(drover_proto::PartitionEdit),
    /// `write batch_script JOBID [FILE|-]`
    WriteBatchScript(String, Option<String>),
    /// `listpids [JOBID[.STEPID]] [NODENAME]`
    ListPids(Option<String>, Option<String>),
    Ping,
    /// `takeover [INDEX]`: backup INDEX (1 by default) takes control.
    Takeover(usize),
    /// `token [lifespan=S] [username=U]`
    Token(drover_proto::MintTokenRequest),
    Reconfigure,
    Shutdown,
    Version,
    Help,
    /// `exit` / `quit` on the command line: nothing to do.
    Quit,
}

/// Match a keyword allowing unambiguous abbreviations (at least `min` chars).
pub(super) fn kw(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    w.len() >= min.min(full.len()) && full.starts_with(&w)
}

/// Resolve the command words. Errors are stderr lines.
pub fn parse_command(words: &[String]) -> Result<Command, Vec<String>> {
    let Some(first) = words.first() else {
        return Ok(Command::Help);
    };
    let rest = &words[1..];
    let one = |v: &[String]| v.first().cloned();
    let c = first.as_str();
    if kw(c, "show", 3) {
        let Some(what) = rest.first() else {
            return Err(vec![
                "scontrol: error: too few arguments for keyword:show".into()
            ]);
        };
        let arg = one(&rest[1..]);
        let w = what.as_str();
        return Ok(if kw(w, "reservations", 3) {
            Command::Resv(resv::ResvOp::Show(arg))
        } else if kw(w, "steps", 2) {
            Command::ShowStep(arg)
        } else if kw(w, "jobs", 1) {
            Command::ShowJob(arg)
        } else if kw(w, "nodes", 1) {
            Command::ShowNode(arg)
        } else if kw(w, "partitions", 1) {
            Command::ShowPartition(arg)
        } else if kw(w, "daemons", 1) {
            Command::ShowDaemons
        } else if kw(w, "config", 1) {
            Command::ShowConfig
        } else if kw(w, "hostnames", 5) {
            Command::Hostnames(arg)
        } else if w.eq_ignore_ascii_case("hostlistsorted") {
            Command::Hostlist(arg.unwrap_or_default(), true)
        } else if kw(w, "hostlist", 5) {
            Command::Hostlist(arg.unwrap_or_default(), false)
        } else if let Some(e) = unsupported::show_entity(w) {
            return Err(vec![crate::refuse::not_supported(
                "scontrol",
                &format!("show {e}"),
            )]);
        } else {
            return Err(vec![format!(
                "scontrol: error: invalid entity:{w} for keyword:show"
            )]);
        });
    }
    let action = |name: &'static str| -> Result<Command, Vec<String>> {
        if rest.is_empty() {
            return Err(vec![format!(
                "scontrol: error: too few arguments for keyword:{name}"
            )]);
        }
        Ok(Command::Action(name, rest.to_vec()))
    };
    let lc = c.to_ascii_lowercase();
    match lc.as_str() {
        "hold" => action("hold"),
        "uhold" => action("uhold"),
        "release" => action("release"),
        "requeue" => action("requeue"),
        "requeuehold" => action("requeuehold"),
        "suspend" => action("suspend"),
        "resume" => action("resume"),
        "top" => action("top"),
        "ping" => Ok(Command::Ping),
        "takeover" => match rest {
            [] => Ok(Command::Takeover(1)),
            [i] => i.parse().map(Command::Takeover).map_err(|_| {
                vec![format!(
                    "scontrol: error: Invalid backup controller index: {i}"
                )]
            }),
            _ => Err(vec![
                "scontrol: error: too many arguments for keyword:takeover".to_string(),
            ]),
        },
        "token" => token::parse(rest).map(Command::Token),
        "listpids" => match rest {
            [] | [_] | [_, _] => Ok(Command::ListPids(one(rest), rest.get(1).cloned())),
            _ => Err(vec![
                "scontrol: error: too many arguments for keyword:listpids".to_string(),
            ]),
        },
        "write" => match rest {
            [what, job, file @ ..] if kw(what, "batch_script", 5) && file.len() <= 1 => Ok(
                Command::WriteBatchScript(job.clone(), file.first().cloned()),
            ),
            [what] if kw(what, "batch_script", 5) => Err(vec![
                "scontrol: error: too few arguments for keyword:write".to_string(),
            ]),
            [what, ..] if kw(what, "batch_script", 5) => Err(vec![
                "scontrol: error: too many arguments for keyword:write".to_string(),
            ]),
            [what, ..] if kw(what, "config", 1) => Err(vec![crate::refuse::not_supported(
                "scontrol",
                "write config",
            )]),
            _ => Err(vec![
                "scontrol: error: invalid write argument: use batch_script".to_string(),
            ]),
        },
        "reconfigure" | "reconfig" => Ok(Command::Reconfigure),
        "shutdown" => Ok(Command::Shutdown),
        "version" => Ok(Command::Version),
        "help" => Ok(Command::Help),
        _ if kw(c, "create", 2) || kw(c, "delete", 3) => {
            let is_create = kw(c, "create", 2);
            if part::is_partition_words(rest) {
                let op = if is_create { "create" } else { "delete" };
                return part::parse(op, rest).map(Command::PartEdit);
            }
            let mut words = rest.to_vec();
            match words.first() {
                Some(w) if kw(w, "reservation", 3) => {
                    words.remove(0);
                }
                Some(w) if w.to_ascii_lowercase().starts_with("reservationname=") => {}
                _ => {
                    return Err(vec![format!(
                        "scontrol: error: invalid entity for keyword:{}",
                        if is_create { "create" } else { "delete" }
                    )])
                }
            }
            if is_create {
                return Ok(Command::Resv(resv::ResvOp::Create(words)));
            }
            let name = words
                .first()
                .map(|w| match w.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => w.clone(),
                })
                .ok_or_else(|| {
                    vec!["scontrol: error: too few arguments for keyword:delete".to_string()]
                })?;
            Ok(Command::Resv(resv::ResvOp::Delete(name)))
        }
        _ if kw(c, "update", 2)
            && rest.first().is_some_and(|w| {
                let l = w.to_ascii_lowercase();
                l.starts_with("reservationname=") || l.starts_with("reservation=")
            }) =>
        {
            Ok(Command::Resv(resv::ResvOp::Update(rest.to_vec())))
        }
        _ if kw(c, "update", 2) => {
            if rest.is_empty() {
                return Err(vec![
                    "scontrol: error: too few arguments for keyword:update".into(),
                ]);
            }
            Ok(Command::Update(rest.to_vec()))
        }
        _ if kw(c, "exit", 2) || kw(c, "quit", 4) => Ok(Command::Quit),
        _ => match unsupported::keyword(c) {
            Some(k) => Err(vec![crate::refuse::not_supported("scontrol", k)]),
            None => Err(vec![format!("invalid keyword: {c}")]),
        },
    }
}

pub fn parse_args(args: &[String]) -> Result<(Flags, Command), Vec<String>> {
    let p = opts::parse(TABLE, args, false).map_err(|e| {
        vec![
            format!("scontrol: {e}"),
            "Try \"scontrol --help\" for more information".to_string(),
        ]
    })?;
    crate::refuse::refuse_options("scontrol", &p, unsupported::REFUSED_OPTIONS)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let flags = Flags {
        one_liner: p.has("oneliner"),
        details: p.has("details"),
        json: p.has("json"),
        quiet: p.has("quiet"),
        verbose: p.count("verbose") as u32,
        // SCONTROL_ALL under the command line's last -a/--hide.
        all: match (
            p.opts.iter().rposition(|f| f.key == "all"),
            p.opts.iter().rposition(|f| f.key == "hide"),
        ) {
            (None, None) => env("SCONTROL_ALL").is_some(),
            (a, h) => a > h,
        },
        future: p.has("future") || env("SCONTROL_FUTURE").is_some(),
        clusters: crate::refuse::clusters_asked(p.value("clusters"), &env),
    };
    if p.has("help") || p.has("usage") {
        return Ok((flags, Command::Help));
    }
    if p.has("version") {
        return Ok((flags, Command::Version));
    }
    // Words in the positional list keep their order; `details` and
    // `oneliner` may also be given as words before the command.
    let mut words = p.positional.clone();
    let mut flags = flags;
    while let Some(w) = words.first() {
        match w.to_ascii_lowercase().as_str() {
            "details" => flags.details = true,
            "oneliner" => flags.one_liner = true,
            "quiet" => flags.quiet = true,
            "all" => flags.all = true,
            "hide" => flags.all = false,
            _ => break,
        }
        words.remove(0);
    }
    Ok((flags, parse_command(&words)?))
}
