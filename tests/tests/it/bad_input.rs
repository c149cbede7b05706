use drover_tests::{Cluster, Spec};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn refusals_name_the_problem() {
    let topology = "NodeName=node[1-2] NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Feature=cpu\n\
        PartitionName=debug Nodes=ALL Default=YES MaxTime=1:00:00 State=UP\n\
        PartitionName=secret Nodes=node1 MaxTime=UNLIMITED State=UP AllowGroups=root\n";
    let c = Cluster::start(Spec {
        topology: Some(topology.into()),
        ..Spec::default()
    });
    let cases: &[(&[&str], &str)] = &[
        (
            &["-p", "nope"],
            "Batch job submission failed: Invalid partition name specified",
        ),
        (
            &["-c", "64"],
            "Batch job submission failed: Requested node configuration is not available",
        ),
        (
            &["-N", "3"],
            "Requested node configuration is not available",
        ),
        (
            &["--mem=100G"],
            "Requested node configuration is not available",
        ),
        (
            &["--gres=gpu:1"],
            "Requested node configuration is not available",
        ),
        (
            &["-t", "2:00:00"],
            "Requested time limit is invalid (missing or exceeds some limit)",
        ),
        (&["-C", "nosuchfeature"], "Invalid feature specification"),
        (&["-w", "node9"], "Invalid node name specified"),
        (&["--array=0-5000"], "Invalid job array specification"),
    ];
    for (args, want) in cases {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--wrap", "true"]);
        let o = c.run("sbatch", &a);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("sbatch: error: "), "{}", stderr(&o));
    }
    // Unknown directive in a script: the option is named.
    let p = c.script("bad.sh", "#!/bin/sh\n#SBATCH --no-such-option=1\ntrue\n");
    let o = c.run("sbatch", &[p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("no-such-option"), "{}", stderr(&o));
    // Not a script.
    let p = c.script("noshebang.sh", "echo hi\n");
    let o = c.run("sbatch", &[p.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("This does not look like a batch script"),
        "{}",
        stderr(&o)
    );
    // AllowGroups=root: nobody is refused, root is not.
    let o = c.run_as(
        65534,
        "sbatch",
        &["-p", "secret", "-D", "/tmp", "--wrap", "true"],
    );
    assert!(
        stderr(&o).contains("User's group not permitted to use this partition"),
        "{}",
        stderr(&o)
    );
    let o = c.run(
        "sbatch",
        &["-p", "secret", "-o", "/dev/null", "--wrap", "true"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // A supplementary group counts (nobody, with root among its groups;
    // the controller has the groups from the kernel with the connection).
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--groups=0", "--"])
        .arg(c.bin.join("sbatch"))
        .args([
            "-p",
            "secret",
            "-D",
            "/tmp",
            "-o",
            "/dev/null",
            "--wrap",
            "true",
        ])
        .env("DROVER_CONF", &c.conf)
        .env_remove("SLURM_CONF")
        .current_dir(c.path())
        .output()
        .expect("setpriv");
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn malformed_config_line_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("drover.conf");
    std::fs::write(
        &conf,
        "ClusterName=x\nSlurmctldHost=localhost\n# fine\nNodeName=n1 CPUs=abc\nPartitionName=p Nodes=n1\n",
    )
    .unwrap();
    let bin = drover_tests::bin_dir();
    for prog in ["droverctld", "droverd"] {
        let o = std::process::Command::new(bin.join(prog))
            .arg("-f")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{prog} accepted a bad config");
        let e = stderr(&o);
        assert!(
            e.contains(&format!("{}:4", conf.display())) && e.contains("CPUs"),
            "{prog}: {e}"
        );
    }
    let o = std::process::Command::new(bin.join("drover"))
        .arg("squeue")
        .env("DROVER_CONF", &conf)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(":4") && stderr(&o).contains("CPUs"),
        "{}",
        stderr(&o)
    );
}

/// Options that used to be accepted and ignored: `-c 0`, a non-root
/// `--uid`/`--gid`, and `scancel -u root` by another user.
#[test]
fn zero_cpus_foreign_uid_and_foreign_cancel_are_refused() {
    let c = Cluster::start(Spec::default());
    // (salloc has no --wrap: its command is its arguments.)
    for (prog, cmd) in [("sbatch", "--wrap=true"), ("salloc", "true")] {
        let o = c.run(prog, &["-c", "0", cmd]);
        assert!(!o.status.success(), "{prog} -c 0 accepted");
        assert!(
            stderr(&o).contains(&format!(
                "{prog}: error: Invalid numeric value \"0\" for --cpus-per-task."
            )),
            "{prog}: {}",
            stderr(&o)
        );
    }
    let o = c.run("srun", &["-c", "0", "true"]);
    assert!(!o.status.success(), "srun -c 0 accepted");
    assert!(
        stderr(&o).contains("Invalid numeric value \"0\" for --cpus-per-task."),
        "{}",
        stderr(&o)
    );
    for opt in ["--uid=0", "--gid=0"] {
        let o = c.run_as(65534, "sbatch", &[opt, "-D", "/tmp", "--wrap", "true"]);
        assert!(!o.status.success(), "{opt} accepted from nobody");
        let want = format!("sbatch: error: {} only permitted by root user", &opt[..5]);
        assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    }
    assert_eq!(c.ok("squeue", &["-h", "-t", "all"]).trim(), "");

    // nobody cannot cancel root's jobs by filter: each is named, exit 1.
    let a = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let b = c.sbatch(&["-o", "/dev/null", "-H"], "#!/bin/sh\nsleep 60\n");
    let o = c.run_as(65534, "scancel", &["-u", "root"]);
    assert!(!o.status.success(), "scancel -u root by nobody exited 0");
    for id in [a, b] {
        assert!(
            stderr(&o).contains(&format!(
                "scancel: error: Kill job error on job id {id}: Access/permission denied"
            )),
            "{}",
            stderr(&o)
        );
    }
    let left = c.ok("squeue", &["-h", "-o", "%i"]);
    assert_eq!(left.lines().count(), 2, "{left}");
    c.ok("scancel", &["-u", "root"]);
}
