//! salloc's options (pure): its table (every option of salloc(1), Slurm
//! 23.11) and the few that are salloc's own; the others are sbatch's
//! ([`crate::sbatch::options::SbatchOpts`]).

use crate::opts::{opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("account", Some('A'), Arg::Required, "account"),
    opt("acctg-freq", None, Arg::Required, "acctg-freq"),
    opt("autocomplete", None, Arg::Required, "autocomplete"),
    opt("begin", Some('b'), Arg::Required, "begin"),
    opt("bell", None, Arg::No, "bell"),
    opt("bb", None, Arg::Required, "bb"),
    opt("bbf", None, Arg::Required, "bbf"),
    opt(
        "cluster-constraint",
        None,
        Arg::Required,
        "cluster-constraint",
    ),
    opt("chdir", Some('D'), Arg::Required, "chdir"),
    opt("cluster", None, Arg::Required, "clusters"),
    opt("clusters", Some('M'), Arg::Required, "clusters"),
    opt("comment", None, Arg::Required, "comment"),
    opt("container", None, Arg::Required, "container"),
    opt("container-id", None, Arg::Required, "container-id"),
    opt("context", None, Arg::Required, "context"),
    opt("contiguous", None, Arg::No, "contiguous"),
    opt("constraint", Some('C'), Arg::Required, "constraint"),
    opt("core-spec", Some('S'), Arg::Required, "core-spec"),
    opt("cores-per-socket", None, Arg::Required, "cores-per-socket"),
    opt("cpu-freq", None, Arg::Required, "cpu-freq"),
    opt("cpus-per-gpu", None, Arg::Required, "cpus-per-gpu"),
    opt("cpus-per-task", Some('c'), Arg::Required, "cpus-per-task"),
    opt("deadline", None, Arg::Required, "deadline"),
    opt("delay-boot", None, Arg::Required, "delay-boot"),
    opt("dependency", Some('d'), Arg::Required, "dependency"),
    opt("distribution", Some('m'), Arg::Required, "distribution"),
    opt("exclude", Some('x'), Arg::Required, "exclude"),
    opt("exclusive", None, Arg::Optional, "exclusive"),
    opt("extra", None, Arg::Required, "extra"),
    opt(
        "extra-node-info",
        Some('B'),
        Arg::Required,
        "extra-node-info",
    ),
    opt("get-user-env", None, Arg::Optional, "get-user-env"),
    opt("gpu-bind", None, Arg::Required, "gpu-bind"),
    opt("gpu-freq", None, Arg::Required, "gpu-freq"),
    opt("gpus", Some('G'), Arg::Required, "gpus"),
    opt("gpus-per-node", None, Arg::Required, "gpus-per-node"),
    opt("gpus-per-socket", None, Arg::Required, "gpus-per-socket"),
    opt("gpus-per-task", None, Arg::Required, "gpus-per-task"),
    opt("gres", None, Arg::Required, "gres"),
    opt("gres-flags", None, Arg::Required, "gres-flags"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("hint", None, Arg::Required, "hint"),
    opt("hold", Some('H'), Arg::No, "hold"),
    opt("immediate", Some('I'), Arg::Optional, "immediate"),
    opt("job-name", Some('J'), Arg::Required, "job-name"),
    opt("kill-command", Some('K'), Arg::Optional, "kill-command"),
    opt("licenses", Some('L'), Arg::Required, "licenses"),
    opt("mail-type", None, Arg::Required, "mail-type"),
    opt("mail-user", None, Arg::Required, "mail-user"),
    opt("mcs-label", None, Arg::Required, "mcs-label"),
    opt("mem", None, Arg::Required, "mem"),
    opt("mem-bind", None, Arg::Required, "mem-bind"),
    opt("mem-per-cpu", None, Arg::Required, "mem-per-cpu"),
    opt("mem-per-gpu", None, Arg::Required, "mem-per-gpu"),
    opt("mincpus", None, Arg::Required, "mincpus"),
    opt("network", None, Arg::Required, "network"),
    opt("nice", None, Arg::Optional, "nice"),
    opt("no-bell", None, Arg::No, "no-bell"),
    opt("no-kill", Some('k'), Arg::Optional, "no-kill"),
    opt("no-shell", None, Arg::No, "no-shell"),
    opt("nodefile", Some('F'), Arg::Required, "nodefile"),
    opt("nodelist", Some('w'), Arg::Required, "nodelist"),
    opt("nodes", Some('N'), Arg::Required, "nodes"),
    opt("ntasks", Some('n'), Arg::Required, "ntasks"),
    opt("ntasks-per-core", None, Arg::Required, "ntasks-per-core"),
    opt("ntasks-per-gpu", None, Arg::Required, "ntasks-per-gpu"),
    opt("ntasks-per-node", None, Arg::Required, "ntasks-per-node"),
    opt(
        "ntasks-per-socket",
        None,
        Arg::Required,
        "ntasks-per-socket",
    ),
    opt("ntasks-per-tres", None, Arg::Required, "ntasks-per-tres"),
    opt("overcommit", Some('O'), Arg::No, "overcommit"),
    opt("oversubscribe", Some('s'), Arg::No, "oversubscribe"),
    opt("partition", Some('p'), Arg::Required, "partition"),
    opt("power", None, Arg::Required, "power"),
    opt("prefer", None, Arg::Required, "prefer"),
    opt("priority", None, Arg::Required, "priority"),
    opt("profile", None, Arg::Required, "profile"),
    opt("qos", Some('q'), Arg::Required, "qos"),
    opt("quiet", Some('Q'), Arg::No, "quiet"),
    opt("reboot", None, Arg::No, "reboot"),
    opt("reservation", None, Arg::Required, "reservation"),
    opt("signal", None, Arg::Required, "signal"),
    opt("sockets-per-node", None, Arg::Required, "sockets-per-node"),
    opt("spread-job", None, Arg::No, "spread-job"),
    opt("switches", None, Arg::Required, "switches"),
    opt("tasks-per-node", None, Arg::Required, "ntasks-per-node"),
    opt("thread-spec", None, Arg::Required, "thread-spec"),
    opt("threads-per-core", None, Arg::Required, "threads-per-core"),
    opt("time", Some('t'), Arg::Required, "time"),
    opt("time-min", None, Arg::Required, "time-min"),
    opt("tmp", None, Arg::Required, "tmp"),
    opt("tres-bind", None, Arg::Required, "tres-bind"),
    opt("tres-per-task", None, Arg::Required, "tres-per-task"),
    opt("use-min-nodes", None, Arg::No, "use-min-nodes"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("usage", None, Arg::No, "usage"),
    opt("wait-all-nodes", None, Arg::Required, "wait-all-nodes"),
    opt("wckey", None, Arg::Required, "wckey"),
    opt("x11", None, Arg::Optional, "x11"),
];

/// Seconds salloc waits before it rings the bell by default.
pub const BELL_DELAY_SECS: u64 = 10;

/// What salloc's own options say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SallocOpts {
    /// `--bell` (Some(true)), `--no-bell` (Some(false)); None: ring only
    /// after a wait longer than [`BELL_DELAY_SECS`].
    pub bell: Option<bool>,
    /// `-I/--immediate[=secs]`: give up when the allocation is not
    /// granted within this many seconds.
    pub immediate: Option<u64>,
    /// `-K/--kill-command[=signal]`: the signal the command gets when the
    /// allocation is revoked.
    pub kill_signal: Option<i32>,
    /// `--no-shell`: exit once the allocation is granted, keeping it.
    pub no_shell: bool,
}

impl SallocOpts {
    /// Apply `key` if it is one of salloc's own options (Ok(true)); Ok(false)
    /// for sbatch's. Errors are Slurm's messages.
    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<bool, String> {
        match key {
            "bell" => self.bell = Some(true),
            "no-bell" => self.bell = Some(false),
            "no-shell" => self.no_shell = true,
            "immediate" => {
                self.immediate = Some(match value {
                    None => 1,
                    Some(v) => v
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("Invalid numeric value \"{v}\" for immediate."))?,
                })
            }
            "kill-command" => {
                self.kill_signal = Some(match value {
                    None => 15,
                    Some(v) => crate::sbatch::options::parse_signal(v)
                        .ok_or("Invalid --kill-command specification")?
                        as i32,
                })
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Should the terminal bell ring, the allocation having taken `waited`
    /// seconds?
    pub fn ring(&self, waited: u64) -> bool {
        self.bell.unwrap_or(waited > BELL_DELAY_SECS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opts::parse;

    fn salloc(args: &[&str]) -> Result<SallocOpts, String> {
        let p = parse(TABLE, args, true).map_err(|e| e.to_string())?;
        let mut o = SallocOpts::default();
        for f in &p.opts {
            o.apply(f.key, f.value.as_deref())?;
        }
        Ok(o)
    }

    #[test]
    fn own_options() {
        let o = salloc(&["-I", "-K", "--bell", "--no-shell"]).unwrap();
        assert_eq!(o.immediate, Some(1));
        assert_eq!(o.kill_signal, Some(15));
        assert!(o.no_shell && o.ring(0));
        let o = salloc(&["--immediate=30", "--kill-command=USR1", "--no-bell"]).unwrap();
        assert_eq!((o.immediate, o.kill_signal), (Some(30), Some(10)));
        assert!(!o.ring(100));
        let o = salloc(&["-K9", "-I5", "sleep", "1"]).unwrap();
        assert_eq!((o.immediate, o.kill_signal), (Some(5), Some(9)));
        assert!(!o.ring(10) && o.ring(11));
        assert_eq!(
            salloc(&["-Kbogus"]).unwrap_err(),
            "Invalid --kill-command specification"
        );
        assert_eq!(
            salloc(&["--immediate=x"]).unwrap_err(),
            "Invalid numeric value \"x\" for immediate."
        );
    }

    #[test]
    fn sbatch_only_options_are_not_sallocs() {
        for o in ["--array=1", "--wrap=x", "--output=f", "--parsable", "-W"] {
            let e = parse(TABLE, &[o], true).unwrap_err().to_string();
            assert!(
                e.starts_with("unrecognized option") || e.starts_with("invalid option"),
                "{o}: {e}"
            );
        }
    }

    #[test]
    fn every_sbatch_key_is_applied_or_salloc_own() {
        for d in TABLE {
            let mut own = SallocOpts::default();
            if own.apply(d.key, Some("1")).unwrap_or(true) {
                continue;
            }
            let mut o = crate::sbatch::options::SbatchOpts::default();
            if let Err(e) = o.apply(d.key, Some("1"), 0) {
                assert!(!e.starts_with("unrecognized"), "{}: {e}", d.key);
            }
        }
    }
}
