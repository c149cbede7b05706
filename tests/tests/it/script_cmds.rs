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
