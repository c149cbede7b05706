//! Command line: `droverd [-f CONFIG] [-N NODES] [--emulate N] [-D] [-v...]`
//! and the hidden supervisor mode `droverd --stepd JOBDIR`.

use std::path::PathBuf;

pub const USAGE: &str = "\
Usage: droverd [-f CONFIG | --conf-server HOST[:PORT]] [-N NODES] [--emulate N]
               [--login] [--key FILE] [-D] [-v]

  -f CONFIG      configuration file (default: $DROVER_CONF, $SLURM_CONF,
                 /etc/drover/drover.conf)
  -N NODES       serve these configured node names (hostlist, e.g. node[1-4])
  --emulate N    serve the first N configured nodes whose NodeAddr is this host
                 or a loopback address, reporting their configured resources
  --conf-server HOST[:PORT]
                 configless: fetch drover.conf, gres.conf and cgroup.conf from
                 the controller (SlurmctldParameters=enable_configless) into the
                 conf cache ($DROVER_CONF_CACHE, default /run/drover/conf),
                 where the commands on this host find them too
  --login        a login host: serve no node, only the local auth socket for
                 the commands (and keep the conf cache fresh when configless)
  --key FILE     the cluster key before a config names one (configless;
                 default /etc/drover/drover.key)
  -D             stay in the foreground, logging to stderr (the default;
                 accepted for Slurm compatibility)
  --detach       detach from the terminal instead, logging to
                 SlurmdLogFile
  -v             more logging (repeat for more)
  -h, --help     this text
  -V, --version  print the version
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub config: Option<PathBuf>,
    pub nodes: Option<String>,
    pub emulate: Option<u32>,
    pub foreground: bool,
    pub verbose: u8,
    /// Configless: the controller to fetch the config from.
    pub conf_server: Option<String>,
    /// Serve no node: only the auth socket (a login host).
    pub login: bool,
    /// The cluster key file (configless, before any config is read).
    pub key: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            config: None,
            nodes: None,
            emulate: None,
            // Daemons log to stderr in the foreground unless told otherwise.
            foreground: true,
            verbose: 0,
            conf_server: None,
            login: false,
            key: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Run(Args),
    Stepd(PathBuf),
    /// The supervisor fork server (internal).
    StepdServer,
    Help,
    Version,
}

/// Parse the arguments after the program name.
pub fn parse<I, S>(argv: I) -> Result<Command, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let argv: Vec<String> = argv.into_iter().map(Into::into).collect();
    let mut a = Args::default();
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        argv.get(*i)
            .cloned()
            .ok_or_else(|| format!("option {flag} needs a value"))
    };
    while i < argv.len() {
        let arg = argv[i].as_str();
        if let Some((flag, v)) = arg.split_once('=').filter(|(f, _)| f.starts_with("--")) {
            match flag {
                "--emulate" => a.emulate = Some(parse_count(v)?),
                "--stepd" => return Ok(Command::Stepd(PathBuf::from(v))),
                "--conf" => a.config = Some(PathBuf::from(v)),
                "--nodes" => a.nodes = Some(v.to_string()),
                "--conf-server" => a.conf_server = Some(v.to_string()),
                "--key" => a.key = Some(PathBuf::from(v)),
                _ => return Err(format!("unknown option {flag}")),
            }
            i += 1;
            continue;
        }
        match arg {
            "--stepd" => return Ok(Command::Stepd(PathBuf::from(value(&mut i, arg)?))),
            "--emulate" => a.emulate = Some(parse_count(&value(&mut i, arg)?)?),
            "--conf" => a.config = Some(PathBuf::from(value(&mut i, arg)?)),
            "--nodes" => a.nodes = Some(value(&mut i, arg)?),
            "--conf-server" => a.conf_server = Some(value(&mut i, arg)?),
            "--key" => a.key = Some(PathBuf::from(value(&mut i, arg)?)),
            "--login" => a.login = true,
            "--stepd-server" => return Ok(Command::StepdServer),
            "--detach" => a.foreground = false,
            "--help" => return Ok(Command::Help),
            "--version" => return Ok(Command::Version),
            s if s.starts_with('-') && !s.starts_with("--") && s.len() > 1 => {
                // Short options, possibly clustered (-Dvv) or with a glued value (-fFILE).
                let chars: Vec<char> = s[1..].chars().collect();
                let mut k = 0;
                while k < chars.len() {
                    let c = chars[k];
                    match c {
                        'D' => a.foreground = true,
                        'v' => a.verbose = a.verbose.saturating_add(1),
                        'h' => return Ok(Command::Help),
                        'V' => return Ok(Command::Version),
                        'f' | 'N' => {
                            let rest: String = chars[k + 1..].iter().collect();
                            let v = if rest.is_empty() {
                                value(&mut i, &format!("-{c}"))?
                            } else {
                                rest
                            };
                            if c == 'f' {
                                a.config = Some(PathBuf::from(v));
                            } else {
                                a.nodes = Some(v);
                            }
                            k = chars.len();
                            continue;
                        }
                        other => return Err(format!("unknown option -{other}")),
                    }
                    k += 1;
                }
            }
            other => return Err(format!("unexpected argument {other:?}")),
        }
        i += 1;
    }
    if a.config.is_some() && a.conf_server.is_some() {
        return Err("-f and --conf-server exclude each other".into());
    }
    if a.login && (a.nodes.is_some() || a.emulate.is_some()) {
        return Err("--login serves no node: -N and --emulate do not go with it".into());
    }
    Ok(Command::Run(a))
}

fn parse_count(s: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("--emulate: expected a node count, got {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(v: &[&str]) -> Args {
        match parse(v.iter().copied()).unwrap() {
            Command::Run(a) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_options() {
        assert_eq!(run(&[]), Args::default());
        let a = run(&["-f", "/etc/x.conf", "-N", "node[1-4]", "-D", "-vv"]);
        assert_eq!(a.config, Some(PathBuf::from("/etc/x.conf")));
        assert_eq!(a.nodes.as_deref(), Some("node[1-4]"));
        assert!(a.foreground);
        assert_eq!(a.verbose, 2);
        let a = run(&["--emulate", "4", "-Dv", "-f/x"]);
        assert_eq!(a.emulate, Some(4));
        assert_eq!(a.config, Some(PathBuf::from("/x")));
        assert_eq!(a.verbose, 1);
        assert!(a.foreground);
        assert_eq!(run(&["--emulate=2"]).emulate, Some(2));
        assert!(run(&[]).foreground, "foreground by default");
        assert!(!run(&["--detach"]).foreground);
        assert_eq!(
            parse(["--stepd", "/var/spool/job1"]).unwrap(),
            Command::Stepd(PathBuf::from("/var/spool/job1"))
        );
        let a = run(&["--conf-server", "ctl:7000", "--key=/k", "--login"]);
        assert_eq!(a.conf_server.as_deref(), Some("ctl:7000"));
        assert_eq!(a.key, Some(PathBuf::from("/k")));
        assert!(a.login);
        assert_eq!(parse(["-h"]).unwrap(), Command::Help);
        assert_eq!(parse(["--version"]).unwrap(), Command::Version);
    }

    #[test]
    fn rejects_bad_input() {
        for bad in [
            vec!["-f"],
            vec!["--emulate"],
            vec!["--emulate", "x"],
            vec!["--emulate", "0"],
            vec!["-x"],
            vec!["--bogus"],
            vec!["stray"],
            vec!["--stepd"],
            vec!["--conf-server"],
            vec!["-f", "/x", "--conf-server", "ctl"],
            vec!["--login", "-N", "node1"],
        ] {
            assert!(parse(bad.iter().copied()).is_err(), "{bad:?}");
        }
    }
}
