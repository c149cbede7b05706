//! Issue 11's sweep of the query commands: every option, variable, keyword
//! and entity Drover recognises but does not support is refused with
//! Slurm's words for an unsupported operation (ESLURM_NOT_SUPPORTED) and
//! exit status 1, before any controller is asked (so no cluster is needed).

use std::process::Command;

const NS: &str = "Requested operation not supported on this system";

fn drover(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_drover"));
    c.args(args).env("DROVER_CONF", "/nonexistent/drover.conf");
    for v in [
        "SQUEUE_LICENSES",
        "SQUEUE_PRIORITY",
        "SINFO_SORT",
        "SLURM_CLUSTERS",
        "SACCT_FORMAT",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// One row: the command line, its environment, and what stderr names.
type Row<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn refused_options_table() {
    let table: &[Row] = &[
        (&["squeue", "--yaml"], &[], "--yaml"),
        (&["squeue", "-L", "lic"], &[], "-L"),
        (&["squeue", "--licenses=lic"], &[], "--licenses"),
        (&["squeue", "-P"], &[], "-P"),
        (&["squeue", "--priority"], &[], "--priority"),
        (
            &["squeue"],
            &[("SQUEUE_LICENSES", "lic")],
            "SQUEUE_LICENSES",
        ),
        (&["squeue"], &[("SQUEUE_PRIORITY", "1")], "SQUEUE_PRIORITY"),
        (&["sinfo", "--yaml"], &[], "--yaml"),
        (&["sinfo", "-S", "P"], &[], "-S"),
        (&["sinfo", "--sort=-P"], &[], "--sort"),
        (&["sinfo"], &[("SINFO_SORT", "P")], "SINFO_SORT"),
        (&["scancel", "--sibling=c2", "5"], &[], "--sibling"),
        (&["sacct", "--yaml"], &[], "--yaml"),
        (&["sacct", "-B", "-j", "5"], &[], "-B"),
        (&["sacct", "--batch-script"], &[], "--batch-script"),
        (&["sacct", "--env-vars", "-j", "5"], &[], "--env-vars"),
        (&["sacct", "-c"], &[], "-c"),
        (&["sacct", "--completion"], &[], "--completion"),
        (&["sacct", "-C", "fast"], &[], "-C"),
        (&["sacct", "-f", "/tmp/x"], &[], "-f"),
        (&["sacct", "-F", "SchedMain"], &[], "-F"),
        (&["sacct", "-k", "10"], &[], "-k"),
        (&["sacct", "-K", "10"], &[], "-K"),
        (&["sacct", "-T"], &[], "-T"),
        (&["sacct", "--array"], &[], "--array"),
        (&["sacct", "--units=M"], &[], "--units"),
        (&["sacct", "-x", "12"], &[], "-x"),
        (&["scontrol", "--yaml", "show", "config"], &[], "--yaml"),
        (&["scontrol", "-u", "5", "show", "config"], &[], "-u"),
        (&["scontrol", "setdebug", "debug"], &[], "setdebug"),
        (
            &["scontrol", "setdebugflags", "+Backfill"],
            &[],
            "setdebugflags",
        ),
        (&["scontrol", "schedloglevel", "1"], &[], "schedloglevel"),
        (&["scontrol", "reboot_nodes", "ALL"], &[], "reboot_nodes"),
        (&["scontrol", "cancel_reboot", "n1"], &[], "cancel_reboot"),
        (&["scontrol", "wait_job", "5"], &[], "wait_job"),
        (&["scontrol", "notify", "5", "hi"], &[], "notify"),
        (&["scontrol", "pidinfo", "1"], &[], "pidinfo"),
        (&["scontrol", "abort"], &[], "abort"),
        (&["scontrol", "cluster", "c2"], &[], "cluster"),
        (&["scontrol", "completing"], &[], "completing"),
        (&["scontrol", "errnumstr", "2"], &[], "errnumstr"),
        (
            &["scontrol", "fsdampeningfactor", "2"],
            &[],
            "fsdampeningfactor",
        ),
        (&["scontrol", "getaddrs", "n1"], &[], "getaddrs"),
        (
            &["scontrol", "callerid", "1", "2", "3", "4"],
            &[],
            "callerid",
        ),
        (&["scontrol", "write", "config"], &[], "write config"),
        (
            &["scontrol", "update", "FrontendName=f1", "State=DOWN"],
            &[],
            "FrontendName",
        ),
        (
            &["scontrol", "update", "SuspendExcNodes=n1"],
            &[],
            "SuspendExcNodes",
        ),
        (
            &["scontrol", "update", "JobName=x", "TimeLimit=5"],
            &[],
            "update JobName (use JobId)",
        ),
        (&["scontrol", "show", "licenses"], &[], "show licenses"),
        (&["scontrol", "show", "topology"], &[], "show topology"),
        (
            &["scontrol", "show", "burstbuffer"],
            &[],
            "show burstbuffer",
        ),
        (&["scontrol", "show", "assoc_mgr"], &[], "show assoc_mgr"),
        (&["scontrol", "show", "federation"], &[], "show federations"),
        (&["scontrol", "show", "frontend"], &[], "show frontendname"),
        (&["scontrol", "show", "slurmd"], &[], "show slurmd"),
        (&["scontrol", "show", "aliases"], &[], "show aliases"),
    ];
    for (args, env, what) in table {
        let o = drover(args, env);
        let cmd = args[0];
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!("{cmd}: error: {what}: {NS}\n"),
            "{args:?} {env:?}"
        );
        assert_eq!(o.status.code(), Some(1), "{args:?} {env:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn slurm_words_for_bad_values() {
    let o = drover(&["scancel", "-s", "NOPE", "5"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "Unknown job signal: NOPE\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = drover(&["scancel", "5"], &[("SCANCEL_STATE", "DONE")]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "Unrecognized SCANCEL_STATE value: DONE\nValid job states are PENDING, RUNNING, and SUSPENDED\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = drover(&["squeue", "-s", "-j"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "squeue: error: Incompatible options --jobs and --steps\n"
    );
    assert_eq!(o.status.code(), Some(1));
    let o = drover(&["sacct", "-i", "x"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "sacct: error: Invalid numeric value \"x\" for requested node range.\n\
         sacct: error: invalid node range -i 'x'\n"
    );
    assert_eq!(o.status.code(), Some(1));
    // Slurm keywords Drover has none of stay "invalid keyword".
    let o = drover(&["scontrol", "frobnicate"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "invalid keyword: frobnicate\n"
    );
    assert_eq!(o.status.code(), Some(1));
    // exit / quit need no controller.
    let o = drover(&["scontrol", "exit"], &[]);
    assert_eq!(o.status.code(), Some(0));
}
