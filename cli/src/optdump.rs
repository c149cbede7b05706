//! Slurm's `-v` dump of the options a command was given (sbatch, salloc,
//! srun: `slurm_print_set_options`), pure: the lines after the
//! `CMD: ` prefix.

use crate::opts::{Arg, OptDef};
use crate::timefmt;

/// Slurm's option table order (`common_options` in slurm_opt.c), by long
/// name; the dump lists the options set in this order.
const ORDER: &[&str] = &[
    "accel-bind",
    "account",
    "acctg-freq",
    "array",
    "batch",
    "bcast",
    "bcast-exclude",
    "begin",
    "bell",
    "bb",
    "bbf",
    "cluster-constraint",
    "chdir",
    "cluster",
    "clusters",
    "comment",
    "compress",
    "container",
    "container-id",
    "context",
    "contiguous",
    "constraint",
    "core-spec",
    "cores-per-socket",
    "cpu-bind",
    "cpu-freq",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "debugger-test",
    "delay-boot",
    "dependency",
    "disable-status",
    "distribution",
    "epilog",
    "error",
    "exact",
    "exclude",
    "exclusive",
    "export",
    "external-launcher",
    "extra",
    "extra-node-info",
    "get-user-env",
    "gid",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "help",
    "het-group",
    "hint",
    "hold",
    "ignore-pbs",
    "immediate",
    "input",
    "interactive",
    "jobid",
    "job-name",
    "kill-command",
    "kill-on-bad-exit",
    "kill-on-invalid-dep",
    "label",
    "licenses",
    "mail-type",
    "mail-user",
    "max-threads",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mincpus",
    "mpi",
    "msg-timeout",
    "multi-prog",
    "network",
    "nice",
    "no-allocate",
    "no-bell",
    "no-kill",
    "no-shell",
    "no-requeue",
    "nodefile",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "ntasks-per-tres",
    "open-mode",
    "output",
    "overcommit",
    "overlap",
    "oversubscribe",
    "pack-group",
    "parsable",
    "partition",
    "power",
    "prefer",
    "preserve-env",
    "priority",
    "profile",
    "prolog",
    "propagate",
    "pty",
    "qos",
    "quiet",
    "quit-on-interrupt",
    "reboot",
    "relative",
    "requeue",
    "reservation",
    "resv-ports",
    "send-libs",
    "signal",
    "slurmd-debug",
    "sockets-per-node",
    "spread-job",
    "switches",
    "task-epilog",
    "task-prolog",
    "tasks-per-node",
    "test-only",
    "thread-spec",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "tree-width",
    "tres-bind",
    "tres-per-task",
    "uid",
    "unbuffered",
    "use-min-nodes",
    "verbose",
    "version",
    "umask",
    "usage",
    "wait",
    "wait-all-nodes",
    "wait-srun",
    "wckey",
    "whole",
    "wrap",
    "x11",
];

/// Options shown as a size in megabytes (`mbytes_to_str`).
const MBYTES: &[&str] = &["mem", "mem-per-cpu", "mem-per-gpu", "tmp"];

/// Slurm's `mbytes_to_str`: `512`, `4G`, `2T`.
pub fn mbytes_to_str(mut mb: u64) -> String {
    let units = ['M', 'G', 'T', 'P'];
    let mut i = 0;
    while i < units.len() - 1 && mb != 0 && mb.is_multiple_of(1024) {
        mb /= 1024;
        i += 1;
    }
    if i == 0 {
        mb.to_string()
    } else {
        format!("{mb}{}", units[i])
    }
}

/// How Slurm prints one option's value.
fn shown(def: &OptDef, value: Option<&str>, verbose: u32) -> String {
    let v = value.unwrap_or("").trim();
    match def.key {
        "verbose" => return verbose.to_string(),
        "time" | "time-min" => {
            if let Some(m) = timefmt::parse_time_limit(v) {
                return timefmt::mins2time_str(m);
            }
        }
        k if MBYTES.contains(&k) => {
            if let Ok(mb) = drover_conf::units::parse_mem_mb(v) {
                return mbytes_to_str(mb);
            }
        }
        _ => {}
    }
    match (def.arg, value) {
        (Arg::No, _) | (Arg::Optional, None) => "set".to_string(),
        _ => v.to_string(),
    }
}

/// The dump's lines: `defined options`, a rule, `name<pad>: value` for
/// each option set (last value wins), a rule, `end of defined options`.
/// `set` holds (key, value) in the order they were applied.
pub fn defined_options(
    table: &[OptDef],
    set: &[(&str, Option<String>)],
    verbose: u32,
) -> Vec<String> {
    let rule = "-------------------- --------------------".to_string();
    let mut out = vec!["defined options".to_string(), rule.clone()];
    for name in ORDER {
        let Some(def) = table.iter().find(|d| d.long == *name) else {
            continue;
        };
        let Some((_, value)) = set.iter().rev().find(|(k, _)| *k == def.key) else {
            continue;
        };
        out.push(format!(
            "{:<20}: {}",
            name,
            shown(def, value.as_deref(), verbose)
        ));
    }
    out.push(rule);
    out.push("end of defined options".to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sbatch::options::TABLE;

    #[test]
    fn dump_in_slurms_order_and_forms() {
        let set = vec![
            ("verbose", None),
            ("time", Some("3".to_string())),
            ("partition", Some("debug".to_string())),
            ("mem", Some("4096".to_string())),
            ("hold", None),
            ("partition", Some("batch".to_string())),
        ];
        assert_eq!(
            defined_options(TABLE, &set, 1),
            vec![
                "defined options",
                "-------------------- --------------------",
                "hold                : set",
                "mem                 : 4G",
                "partition           : batch",
                "time                : 00:03:00",
                "verbose             : 1",
                "-------------------- --------------------",
                "end of defined options",
            ]
        );
        assert_eq!(mbytes_to_str(1000), "1000");
        assert_eq!(mbytes_to_str(2 * 1024 * 1024), "2T");
        assert_eq!(mbytes_to_str(0), "0");
    }
}
