//! Commands and subcommands scripts use: `scontrol write batch_script`,
//! `scontrol listpids`, `sdiag`, and the refusal of heterogeneous jobs.

use drover_tests::{Cluster, Spec};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const HET: &str =
    "Heterogeneous jobs are not supported: Requested operation not supported on this system";

#[test]
fn heterogeneous_jobs_are_refused_in_slurms_words() {
    let c = Cluster::start(Spec::default());
    let script = c.script(
        "het.sh",
        "#!/bin/sh\n#SBATCH -n 1\n#SBATCH hetjob\n#SBATCH -n 2\nhostname\n",
    );
    let plain = c.script("plain.sh", "#!/bin/sh\nhostname\n");
    let s = script.to_str().unwrap();
    let p = plain.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            "sbatch",
            vec![s],
            format!("sbatch: error: {HET} (in #SBATCH directive on line 3 of the batch script)"),
        ),
        (
            "sbatch",
            vec!["-n1", ":", "-n2", p],
            format!("sbatch: error: {HET}"),
        ),
        (
            "srun",
            vec!["-n1", "hostname", ":", "-n2", "hostname"],
            format!("srun: error: {HET}"),
        ),
        (
            "salloc",
            vec!["-n1", ":", "-n2", "hostname"],
            format!("salloc: error: {HET}"),
        ),
    ];
    for (prog, args, want) in cases {
        let o = c.run(prog, &args);
        assert_eq!(o.status.code(), Some(1), "{prog} {args:?}");
        assert!(
            text(&o.stderr).lines().any(|l| l == want),
            "{prog} {args:?}: {}",
            text(&o.stderr)
        );
    }
    // Nothing was submitted.
    let q = c.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
    assert_eq!(q.trim(), "", "{q}");
    // A ':' among a script's own arguments is just an argument.
    let echo = c.script("echo.sh", "#!/bin/sh\necho \"$@\"\n");
    let out = c.path().join("echo.out");
    let o = c.run(
        "sbatch",
        &[
            "--wait",
            "-o",
            out.to_str().unwrap(),
            echo.to_str().unwrap(),
            "a",
            ":",
            "b",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a : b\n");
}

#[test]
fn scontrol_write_batch_script_to_file_stdout_and_not_to_others() {
    let c = Cluster::start(Spec::default());
    let body = "#!/bin/sh\n#SBATCH -J keepme\necho \"secret $HOME\"\n";
    let id = c.sbatch(&["-H"], body);
    // Default file slurm-ID.sh in the current directory.
    let out = c.ok("scontrol", &["write", "batch_script", &id.to_string()]);
    let file = format!("slurm-{id}.sh");
    assert_eq!(
        out,
        format!("batch script for job {id} written to {file}\n")
    );
    assert_eq!(std::fs::read_to_string(c.path().join(&file)).unwrap(), body);
    // A named file; `-` is standard output; -Q writes quietly.
    let named = c.path().join("copy.sh");
    c.ok(
        "scontrol",
        &[
            "-Q",
            "write",
            "batch_script",
            &id.to_string(),
            named.to_str().unwrap(),
        ],
    );
    assert_eq!(std::fs::read_to_string(&named).unwrap(), body);
    assert_eq!(
        c.ok("scontrol", &["write", "batch_script", &id.to_string(), "-"]),
        body
    );
    // Another user may not read it; nothing is written.
    let o = c.run_as(
        65534,
        "scontrol",
        &["write", "batch_script", &id.to_string(), "/tmp/x-nobody-"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "job script retrieval failed: Access/permission denied\n"
    );
    // Unknown and malformed ids, a missing argument, an unwritable file.
    for (args, want) in [
        (
            vec!["write", "batch_script", "999999", "-"],
            "job script retrieval failed: Invalid job id specified\n".to_string(),
        ),
        (
            vec!["write", "batch_script", "abc", "-"],
            "job script retrieval failed: Invalid job id specified\n".to_string(),
        ),
        (
            vec!["write", "batch_script"],
            "scontrol: error: too few arguments for keyword:write\n".to_string(),
        ),
        (
            vec![
                "write",
                "batch_script",
                &id.to_string(),
                "/nonexistent/dir/f.sh",
            ],
            "failed to open file `/nonexistent/dir/f.sh`: No such file or directory\n".to_string(),
        ),
    ] {
        let o = c.run("scontrol", &args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&o.stderr), want, "{args:?}");
    }
    c.ok("scancel", &[&id.to_string()]);
}

#[test]
fn sdiag_counts_what_the_controller_did() {
    let c = Cluster::start(Spec::default());
    let field = |t: &str, key: &str| -> u64 {
        t.lines()
            .find_map(|l| l.trim_start().strip_prefix(key))
            .unwrap_or_else(|| panic!("no {key} in\n{t}"))
            .trim()
            .parse()
            .unwrap()
    };
    let before = c.ok("sdiag", &[]);
    assert_eq!(field(&before, "Jobs submitted:"), 0, "{before}");
    let ok1 = c.sbatch(&[], "#!/bin/sh\ntrue\n");
    let ok2 = c.sbatch(&[], "#!/bin/sh\ntrue\n");
    let bad = c.sbatch(&[], "#!/bin/sh\nexit 3\n");
    let held = c.sbatch(&["-H"], "#!/bin/sh\ntrue\n");
    for id in [ok1, ok2, bad] {
        c.wait_done(id);
    }
    c.ok("scancel", &[&held.to_string()]);
    c.wait_state(
        &held.to_string(),
        &["CANCELLED"],
        std::time::Duration::from_secs(10),
    );
    let t = c.ok("sdiag", &[]);
    assert_eq!(field(&t, "Jobs submitted:"), 4, "{t}");
    assert_eq!(field(&t, "Jobs started:"), 3, "{t}");
    assert_eq!(field(&t, "Jobs completed:"), 2, "{t}");
    assert_eq!(field(&t, "Jobs canceled:"), 1, "{t}");
    assert_eq!(field(&t, "Jobs failed:"), 1, "{t}");
    assert_eq!(field(&t, "Jobs pending:"), 0, "{t}");
    assert!(field(&t, "Total cycles:") >= 3, "{t}");
    assert!(field(&t, "Max cycle:") >= field(&t, "Last cycle:"), "{t}");
    assert!(field(&t, "Server thread count:") >= 1, "{t}");
    assert!(
        t.contains("\nMain schedule statistics (microseconds):\n"),
        "{t}"
    );
}
