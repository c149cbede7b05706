//! Which of Slurm's sbatch, salloc and srun options Drover refuses (pure,
//! but for [`error_exit`], which reads the environment).
//!
//! Every option of the three man pages (Slurm 23.11) is in the commands'
//! tables, so none is `unrecognized`; an option whose feature Drover lacks
//! (a plugin Drover has no counterpart for, or a request the scheduler
//! would not honour) is refused before anything is submitted, with Slurm's
//! text for an unsupported operation (ESLURM_NOT_SUPPORTED), rather than
//! accepted and silently ignored. docs/user-guide.md ("Option support")
//! lists every option and what Drover does with it.

use crate::opts::NOT_SUPPORTED;

/// Options refused whatever their value (keys of the commands' tables).
pub const REFUSED: &[&str] = &[
    "accel-bind",
    "acctg-freq",
    "autocomplete",
    "batch",
    "bb",
    "bbf",
    "bcast",
    "bcast-exclude",
    "cluster-constraint",
    "compress",
    "container",
    "container-id",
    "context",
    "contiguous",
    "core-spec",
    "cores-per-socket",
    "cpu-freq",
    "deadline",
    "debugger-test",
    "delay-boot",
    "epilog",
    "exact",
    "external-launcher",
    "extra",
    "extra-node-info",
    "get-user-env",
    "gpu-freq",
    "gpus-per-socket",
    "hint",
    "interactive",
    "licenses",
    "mcs-label",
    "msg-timeout",
    "multi-prog",
    "network",
    "no-allocate",
    "no-kill",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-socket",
    "ntasks-per-tres",
    "power",
    "prefer",
    "preserve-env",
    "profile",
    "prolog",
    "propagate",
    "quit-on-interrupt",
    "reboot",
    "relative",
    "resv-ports",
    "send-libs",
    "slurmd-debug",
    "sockets-per-node",
    "spread-job",
    "switches",
    "task-epilog",
    "task-prolog",
    "test-only",
    "thread-spec",
    "threads-per-core",
    "time-min",
    "tmp",
    "tres-bind",
    "tres-per-task",
    "use-min-nodes",
    "whole",
    "x11",
];

/// The refusal of `--key`: `--key is not supported: <Slurm's text>`.
pub fn not_supported(what: &str) -> String {
    format!("{what} is not supported: {NOT_SUPPORTED}")
}

/// Is `--distribution=v` the block layout Drover's steps always have
/// (`block` or `*`, the default; the levels within a node only as `*`, the
/// default; an optional `,Pack`)?
fn block_distribution(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    let v = v
        .strip_suffix(",pack")
        .or_else(|| v.strip_suffix(",nopack"))
        .unwrap_or(&v);
    let mut levels = v.split(':');
    let first = levels.next().unwrap_or("");
    matches!(first, "block" | "*") && levels.all(|l| l == "*") && v.split(':').count() <= 3
}

/// Drover's refusal of option `key` with `value`, or None when it is
/// accepted. Values Drover's behaviour already matches are accepted:
/// `--mem-bind=none`, `--gres-flags=disable-binding`, a block
/// `--distribution`, `--exclusive` for the whole node.
pub fn refusal(key: &str, value: Option<&str>) -> Option<String> {
    let v = value.unwrap_or("").trim();
    let with_value = || not_supported(&format!("--{key}={v}"));
    match key {
        k if REFUSED.contains(&k) => Some(not_supported(&format!("--{k}"))),
        "mem-bind" => {
            let last = v.rsplit(',').next().unwrap_or("").to_ascii_lowercase();
            (!matches!(last.as_str(), "none" | "no")).then(with_value)
        }
        "gres-flags" => (!v.eq_ignore_ascii_case("disable-binding")).then(with_value),
        "distribution" => (!block_distribution(v)).then(with_value),
        "exclusive" => matches!(v, "user" | "mcs" | "topo").then(with_value),
        // 0, the default: a job starts once its nodes are up, as Drover's do.
        "wait-all-nodes" => (v != "0").then(with_value),
        _ => None,
    }
}

/// The refusal of option `key` for a job allocation (sbatch, salloc, and
/// srun's own allocation): [`refusal`], and `-O/--overcommit`, which
/// Drover's steps take (srun) but its scheduler does not (Slurm's sizes
/// an overcommitted allocation as one task a node).
pub fn job_refusal(key: &str, value: Option<&str>) -> Option<String> {
    match key {
        "overcommit" => Some(not_supported("--overcommit for a job allocation")),
        _ => refusal(key, value),
    }
}

/// `-M/--clusters NAMES` on a Drover cluster, which reaches only itself:
/// None when NAMES holds the local cluster (or `all`), else Slurm's
/// `print_db_notok` words for the first name (`from_env`: the names came
/// from `SLURM_CLUSTERS`).
pub fn cluster_refusal(names: &str, local: &str, from_env: bool) -> Option<String> {
    let mut list = names.split(',').map(str::trim).filter(|n| !n.is_empty());
    let first = list.clone().next()?;
    if list.any(|n| n.eq_ignore_ascii_case("all") || n == local) {
        return None;
    }
    let what = if from_env {
        "SLURM_CLUSTERS"
    } else {
        "--cluster"
    };
    Some(format!(
        "'{first}' can't be reached now, or it is an invalid entry for {what}.  Use 'sacctmgr list clusters' to see available clusters."
    ))
}

/// The exit status of a command's errors: the number in `value` (Slurm's
/// `SLURM_EXIT_ERROR`, or `SLURM_EXIT_IMMEDIATE` for `-I` giving up) when
/// it is a non-zero number, else 1.
pub fn exit_status(value: Option<&str>) -> i32 {
    value
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|&n| n != 0)
        .unwrap_or(1)
}

/// sbatch's, salloc's and srun's exit status for an error (`SLURM_EXIT_ERROR`).
pub fn error_exit() -> i32 {
    exit_status(std::env::var("SLURM_EXIT_ERROR").ok().as_deref())
}

/// One option as given to a command: its key, its value, and where it
/// was set, as a message suffix ("" on the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub key: &'static str,
    pub value: Option<String>,
    pub origin: String,
}

impl Given {
    pub fn new(key: &'static str, value: Option<String>, origin: String) -> Given {
        Given { key, value, origin }
    }

    /// The suffix for an option from input variable `var`.
    pub fn from_env(var: &str) -> String {
        format!(" (from {var} in the environment)")
    }
}

/// Is `given[i]` overridden by a later option of the same key (options are
/// last-wins: `#SBATCH` directives, then the environment, then the
/// command line)?
pub fn overridden(given: &[Given], i: usize) -> bool {
    given[i + 1..].iter().any(|g| g.key == given[i].key)
}

/// The refusal (by `rule`) of the options as finally set, naming where the
/// refused one was set.
pub fn final_refusal(
    given: &[Given],
    rule: fn(&str, Option<&str>) -> Option<String>,
) -> Option<String> {
    (0..given.len())
        .filter(|&i| !overridden(given, i))
        .find_map(|i| {
            let g = &given[i];
            rule(g.key, g.value.as_deref()).map(|m| format!("{m}{}", g.origin))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_use_slurms_text() {
        assert_eq!(
            refusal("cpu-freq", Some("high")).unwrap(),
            "--cpu-freq is not supported: Requested operation not supported on this system"
        );
        assert_eq!(
            refusal("mem-bind", Some("local")).unwrap(),
            "--mem-bind=local is not supported: Requested operation not supported on this system"
        );
        assert!(refusal("mem-bind", Some("verbose,none")).is_none());
        assert!(refusal("gres-flags", Some("disable-binding")).is_none());
        assert!(refusal("gres-flags", Some("enforce-binding")).is_some());
        assert!(refusal("exclusive", None).is_none());
        assert!(refusal("exclusive", Some("user")).is_some());
        assert!(refusal("partition", Some("x")).is_none());
    }

    #[test]
    fn the_last_setting_decides() {
        let g = |k: &'static str, v: &str, o: &str| Given::new(k, Some(v.into()), o.into());
        let given = vec![
            g(
                "distribution",
                "cyclic",
                " (in #SBATCH directive on line 2 of the batch script)",
            ),
            g("partition", "x", ""),
            g("distribution", "block", ""),
        ];
        assert!(overridden(&given, 0) && !overridden(&given, 2));
        assert_eq!(final_refusal(&given, refusal), None);
        let given = vec![
            g("hint", "compute_bound", &Given::from_env("SLURM_HINT")),
            g("partition", "x", ""),
        ];
        assert_eq!(
            final_refusal(&given, refusal).unwrap(),
            "--hint is not supported: Requested operation not supported on this system (from SLURM_HINT in the environment)"
        );
    }

    /// The user guide's "Option support" section lists every option and
    /// input variable of the three commands' tables.
    #[test]
    fn the_user_guide_lists_every_option_and_variable() {
        let guide = include_str!("../../docs/user-guide.md");
        let section = guide
            .split("## Option support: sbatch, salloc, srun")
            .nth(1)
            .expect("the section");
        let tables = [
            crate::sbatch::options::TABLE,
            crate::salloc::options::TABLE,
            crate::srun::args::TABLE,
        ];
        for d in tables.iter().flat_map(|t| t.iter()) {
            let row = format!("| `--{}`", d.long);
            assert!(section.contains(&row), "{row}");
            if REFUSED.contains(&d.key) {
                assert!(
                    section
                        .lines()
                        .any(|l| l.starts_with(&row) && l.contains("refused")),
                    "{row} refused"
                );
            }
        }
        let vars = crate::sbatch::options::ENV_VARS
            .iter()
            .chain(crate::sbatch::options::SALLOC_ENV_VARS)
            .chain(crate::srun::args::ENV_VARS);
        for (var, _) in vars {
            assert!(section.contains(&format!("`{var}`")), "{var}");
        }
    }

    #[test]
    fn clusters_other_than_this_one_are_unreachable() {
        assert_eq!(cluster_refusal("c1", "c1", false), None);
        assert_eq!(cluster_refusal("x,c1", "c1", false), None);
        assert_eq!(cluster_refusal("all", "c1", true), None);
        assert_eq!(
            cluster_refusal("x,y", "c1", false).unwrap(),
            "'x' can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters."
        );
        assert!(cluster_refusal("x", "c1", true)
            .unwrap()
            .contains("SLURM_CLUSTERS"));
    }

    #[test]
    fn error_exit_statuses() {
        assert_eq!(exit_status(None), 1);
        assert_eq!(exit_status(Some("7")), 7);
        assert_eq!(exit_status(Some("0")), 1);
        assert_eq!(exit_status(Some("x")), 1);
    }

    #[test]
    fn block_layouts_only() {
        for ok in ["block", "*", "block:*", "*:*:*", "block,Pack"] {
            assert!(refusal("distribution", Some(ok)).is_none(), "{ok}");
        }
        for bad in [
            "cyclic",
            "plane=4",
            "arbitrary",
            "cyclic:block",
            "",
            "block:cyclic",
        ] {
            assert!(refusal("distribution", Some(bad)).is_some(), "{bad}");
        }
    }
}
