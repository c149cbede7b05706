//! The option sweep of sbatch, salloc and srun (issue 11): what Drover does
//! not support is refused in Slurm's words, before anything is submitted,
//! from the command line, a directive or an input variable; the input
//! variables are honoured with Slurm's precedence; salloc's own options.

use std::time::Duration;

use drover_tests::{Cluster, Spec};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const NS: &str = "Requested operation not supported on this system";

#[test]
fn unsupported_options_are_refused_in_slurms_words() {
    let c = Cluster::start(Spec::default());
    let plain = c.script("plain.sh", "#!/bin/sh\nhostname\n");
    let hinted = c.script(
        "hinted.sh",
        "#!/bin/sh\n#SBATCH -n 1\n#SBATCH --hint=nomultithread\nhostname\n",
    );
    let p = plain.to_str().unwrap();
    let h = hinted.to_str().unwrap();
    // (program, arguments, environment, the whole error line)
    type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>, String);
    let cases: Vec<Case> = vec![
        (
            "sbatch",
            vec!["--cpu-freq=high", p],
            vec![],
            format!("sbatch: error: --cpu-freq is not supported: {NS}"),
        ),
        (
            "sbatch",
            vec!["--bb", "capacity=1G", p],
            vec![],
            format!("sbatch: error: --bb is not supported: {NS}"),
        ),
        (
            "sbatch",
            vec!["--test-only", p],
            vec![],
            format!("sbatch: error: --test-only is not supported: {NS}"),
        ),
        (
            "sbatch",
            vec!["--exclusive=user", p],
            vec![],
            format!("sbatch: error: --exclusive=user is not supported: {NS}"),
        ),
        (
            "sbatch",
            vec!["-m", "cyclic", p],
            vec![],
            format!("sbatch: error: --distribution=cyclic is not supported: {NS}"),
        ),
        (
            "sbatch",
            vec![h],
            vec![],
            format!(
                "sbatch: error: --hint is not supported: {NS} (in #SBATCH directive on line 3 of the batch script)"
            ),
        ),
        (
            "sbatch",
            vec![p],
            vec![("SBATCH_NETWORK", "sn_all")],
            format!(
                "sbatch: error: --network is not supported: {NS} (from SBATCH_NETWORK in the environment)"
            ),
        ),
        (
            "salloc",
            vec!["--x11", "true"],
            vec![],
            format!("salloc: error: --x11 is not supported: {NS}"),
        ),
        (
            "salloc",
            vec!["-k", "true"],
            vec![],
            format!("salloc: error: --no-kill is not supported: {NS}"),
        ),
        (
            "salloc",
            vec!["true"],
            vec![("SALLOC_POWER", "level")],
            format!(
                "salloc: error: --power is not supported: {NS} (from SALLOC_POWER in the environment)"
            ),
        ),
        (
            "srun",
            vec!["--mpi=pmix", "hostname"],
            vec![],
            format!("srun: error: --mpi=pmix is not supported: {NS}"),
        ),
        (
            "srun",
            vec!["--multi-prog", "ranks.conf"],
            vec![],
            format!("srun: error: --multi-prog is not supported: {NS}"),
        ),
        (
            "srun",
            vec!["-W", "5", "hostname"],
            vec![],
            format!("srun: error: --wait is not supported: {NS}"),
        ),
        (
            "srun",
            vec!["hostname"],
            vec![("SLURM_PROFILE", "task")],
            format!(
                "srun: error: --profile is not supported: {NS} (from SLURM_PROFILE in the environment)"
            ),
        ),
        (
            "sbatch",
            vec!["-O", "-n8", p],
            vec![],
            format!("sbatch: error: --overcommit for a job allocation is not supported: {NS}"),
        ),
        // Not an option of Slurm 23.11 at all: getopt's words.
        (
            "sbatch",
            vec!["--workdir", "/tmp", p],
            vec![],
            "sbatch: error: unrecognized option '--workdir'".to_string(),
        ),
        (
            "salloc",
            vec!["--wrap=hostname"],
            vec![],
            "salloc: error: unrecognized option '--wrap'".to_string(),
        ),
    ];
    for (prog, args, env, want) in cases {
        let mut cmd = c.cmd(prog);
        cmd.args(&args);
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let o = cmd.output().expect("run");
        assert_eq!(o.status.code(), Some(1), "{prog} {args:?} {env:?}");
        assert!(
            text(&o.stderr).lines().any(|l| l == want),
            "{prog} {args:?} {env:?}: want {want:?}, got:\n{}",
            text(&o.stderr)
        );
    }
    // SLURM_EXIT_ERROR is the exit status of an error.
    for prog in ["sbatch", "salloc", "srun"] {
        let o = c
            .cmd(prog)
            .args(["--cpu-freq=high", "true"])
            .env("SLURM_EXIT_ERROR", "7")
            .output()
            .expect("run");
        assert_eq!(o.status.code(), Some(7), "{prog}: {}", text(&o.stderr));
    }
    // Nothing was submitted.
    let q = c.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
    assert_eq!(q.trim(), "", "{q}");
}

#[test]
fn command_line_over_environment_over_directives() {
    let c = Cluster::start(Spec::default());
    let script = "#!/bin/sh\n#SBATCH --job-name=from_directive\n#SBATCH --comment=dir\n#SBATCH --distribution=cyclic\ntrue\n";
    let name = |id: u32| c.job_field(&id.to_string(), "JobName").unwrap_or_default();
    let comment = |id: u32| c.job_field(&id.to_string(), "Comment").unwrap_or_default();
    // The directive's cyclic layout is overridden by the environment's
    // block one, so the script is accepted.
    let block = [("SBATCH_DISTRIBUTION", "block")];
    let id = c.sbatch_env(&["--hold"], script, &block);
    assert_eq!(
        (name(id), comment(id)),
        ("from_directive".into(), "dir".into())
    );
    let env = [
        ("SBATCH_DISTRIBUTION", "block"),
        ("SBATCH_JOB_NAME", "from_env"),
    ];
    let id = c.sbatch_env(&["--hold"], script, &env);
    assert_eq!(name(id), "from_env");
    let id = c.sbatch_env(&["--hold", "-J", "from_cli", "--comment=cli"], script, &env);
    assert_eq!((name(id), comment(id)), ("from_cli".into(), "cli".into()));
    // A cyclic layout left in force is refused.
    let p = c.script("cyclic.sh", script);
    let o = c.run("sbatch", &[p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains(&format!(
            "--distribution=cyclic is not supported: {NS} (in #SBATCH directive on line 4 of the batch script)"
        )),
        "{}",
        text(&o.stderr)
    );
    c.ok("scancel", &["--me"]);
}

#[test]
fn gpu_bind_reaches_the_jobs_steps() {
    let c = Cluster::start(Spec::default());
    let out = c.path().join("bind.out");
    let id = c.sbatch(
        &["--gpu-bind=closest", "-o", out.to_str().unwrap()],
        "#!/bin/sh\necho \"bind=$SLURM_GPU_BIND\"\n",
    );
    c.expect_end(id, "COMPLETED");
    let t = c.wait_file(&out, |t| t.contains("bind="));
    assert_eq!(t.trim(), "bind=closest");
}

#[test]
fn salloc_no_shell_keeps_the_allocation_and_immediate_gives_up() {
    let c = Cluster::start(Spec::default());
    let o = c.run(
        "salloc",
        &["--no-shell", "-N1", "--exclusive", "-J", "kept"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("{err}"))
        .trim()
        .to_string();
    assert_eq!(c.job_field(&id, "JobState").as_deref(), Some("RUNNING"));
    // Both nodes busy: -I gives up at once, in Slurm's words, and withdraws.
    let busy = c.sbatch(&["-N1", "--exclusive"], "#!/bin/sh\nsleep 300\n");
    c.wait_state(&busy.to_string(), &["RUNNING"], Duration::from_secs(30));
    let o = c
        .cmd("salloc")
        .args(["-I", "-N1", "true"])
        .env("SLURM_EXIT_IMMEDIATE", "9")
        .output()
        .expect("run salloc");
    assert_eq!(o.status.code(), Some(9), "SLURM_EXIT_IMMEDIATE");
    assert!(
        text(&o.stderr)
            .lines()
            .any(|l| l == "salloc: error: Unable to allocate resources: Connection timed out"),
        "{}",
        text(&o.stderr)
    );
    let q = c.ok("squeue", &["-h", "-o", "%i %T"]);
    assert_eq!(q.lines().count(), 2, "the withdrawn request is gone: {q}");
    c.ok("scancel", &[&id, &busy.to_string()]);
}

#[test]
fn quiet_means_errors_only_and_salloc_chdir() {
    let c = Cluster::start(Spec::default());
    let o = c.run("sbatch", &["-Q", "--hold", "--wrap=true"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "", "no job id with -Q");
    let q = c.ok("squeue", &["-h", "-o", "%i"]);
    assert_eq!(q.lines().count(), 1, "{q}");
    let o = c.run("salloc", &["-Q", "-N1", "true"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stderr), "", "salloc -Q says nothing");
    let o = c.run("salloc", &["-N1", "true"]);
    assert!(text(&o.stderr).contains("salloc: Granted job allocation"));
    // salloc -D: the command starts in that directory.
    std::fs::create_dir_all(c.path().join("sub")).unwrap();
    let o = c.run("salloc", &["-Q", "-D", "sub", "pwd"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::path::Path::new(text(&o.stdout).trim())
            .canonicalize()
            .unwrap(),
        c.path().join("sub").canonicalize().unwrap()
    );
    // salloc -F: the file's nodes; --gpu-bind reaches the shell's srun.
    std::fs::write(c.path().join("nodes.txt"), "node2\n").unwrap();
    let o = c.run(
        "salloc",
        &[
            "-Q",
            "-F",
            "nodes.txt",
            "--gpu-bind=closest",
            "sh",
            "-c",
            "echo $SLURM_JOB_NODELIST $SLURM_GPU_BIND",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "node2 closest");
    c.ok("scancel", &["--me"]);
}

#[test]
fn clusters_name_this_cluster_or_fail_in_slurms_words() {
    let c = Cluster::start(Spec::default());
    let me = c.ok("scontrol", &["show", "config"]);
    let name = me
        .lines()
        .find_map(|l| l.strip_prefix("ClusterName"))
        .and_then(|l| l.split('=').nth(1))
        .map(|v| v.trim().to_string())
        .expect("ClusterName");
    let o = c.run("sbatch", &["-M", &name, "--hold", "--wrap=true"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("Submitted batch job ")
            && text(&o.stdout)
                .trim_end()
                .ends_with(&format!(" on cluster {name}")),
        "{}",
        text(&o.stdout)
    );
    let o = c.run(
        "sbatch",
        &["--parsable", "-M", "all", "--hold", "--wrap=true"],
    );
    assert!(
        text(&o.stdout).trim_end().ends_with(&format!(";{name}")),
        "{}",
        text(&o.stdout)
    );
    let want = "can't be reached now, or it is an invalid entry for --cluster.  Use 'sacctmgr list clusters' to see available clusters.";
    for prog in ["sbatch", "salloc", "srun"] {
        let args: Vec<&str> = if prog == "sbatch" {
            vec!["-M", "elsewhere", "--wrap=true"]
        } else {
            vec!["-M", "elsewhere", "true"]
        };
        let o = c.run(prog, &args);
        assert_eq!(o.status.code(), Some(1), "{prog}");
        assert_eq!(
            text(&o.stderr).trim_end(),
            format!("{prog}: error: 'elsewhere' {want}"),
            "{prog}"
        );
    }
    c.ok("scancel", &["--me"]);
}
