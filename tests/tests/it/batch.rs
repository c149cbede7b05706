use std::time::Duration;

use drover_tests::{field, Cluster, Spec};

#[test]
fn batch_job_runs_with_environment_output_and_exit_code() {
    let c = Cluster::start(Spec::default());
    let out_dir = c.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let script = format!(
        "#!/bin/bash\n#SBATCH --job-name=env.check\n#SBATCH -o {}/%x-%j.out\n#SBATCH --error={}/%j.err\n\
         echo \"id=$SLURM_JOB_ID jobid=$SLURM_JOBID name=$SLURM_JOB_NAME\"\n\
         echo \"nodes=$SLURM_JOB_NODELIST nnodes=$SLURM_JOB_NUM_NODES ntasks=$SLURM_NTASKS cpus=$SLURM_CPUS_ON_NODE\"\n\
         echo \"part=$SLURM_JOB_PARTITION cluster=$SLURM_CLUSTER_NAME submitdir=$SLURM_SUBMIT_DIR\"\n\
         echo \"mine=$MY_VAR pwd=$(pwd)\"\n\
         echo oops >&2\nexit 3\n",
        out_dir.display(),
        out_dir.display()
    );
    let id = c.sbatch_env(&[], &script, &[("MY_VAR", "exported-value")]);
    assert_eq!(c.wait_done(id), "FAILED");
    assert_eq!(
        c.job_field(&id.to_string(), "ExitCode").as_deref(),
        Some("3:0")
    );
    let out = std::fs::read_to_string(out_dir.join(format!("env.check-{id}.out"))).unwrap();
    assert!(
        out.contains(&format!("id={id} jobid={id} name=env.check")),
        "{out}"
    );
    // SLURM_NTASKS is set only when -n (or --ntasks-per-node) was given, as in Slurm.
    assert!(out.contains("nnodes=1 ntasks= cpus=1"), "{out}");
    assert!(
        out.contains("nodes=node1") || out.contains("nodes=node2"),
        "{out}"
    );
    assert!(out.contains("part=debug cluster=test"), "{out}");
    assert!(
        out.contains(&format!("submitdir={}", c.path().display())),
        "{out}"
    );
    assert!(out.contains("mine=exported-value"), "{out}");
    assert!(
        out.contains(&format!("pwd={}", c.path().display())),
        "{out}"
    );
    let err = std::fs::read_to_string(out_dir.join(format!("{id}.err"))).unwrap();
    assert_eq!(err, "oops\n");
    // Still visible to squeue -t all (MinJobAge), with the right state code.
    let q = c.ok(
        "squeue",
        &["-h", "-t", "all", "-j", &id.to_string(), "-o", "%i %t %j"],
    );
    assert_eq!(q.trim(), format!("{id} F env.check"));
}

#[test]
fn every_directive_form_parses() {
    let c = Cluster::start(Spec {
        mem_mb: 8000,
        ..Spec::default()
    });
    let script = "#!/bin/sh\n\
        #SBATCH --job-name=forms.test\n\
        #SBATCH --time 0-00:05:00\n\
        #SBATCH -c 2\n\
        #SBATCH --mem      954M\n\
        #SBATCH --comment=\"quoted value\"\n\
        #SBATCH --exclusive   \n\
        #SBATCH -J later.name\n\
        \n\
        # a comment between\n\
        #SBATCH --ntasks=1\n\
        echo hi\n\
        #SBATCH --partition=nonexistent\n";
    let id = c.sbatch(&["--hold"], script);
    let sid = id.to_string();
    assert_eq!(c.job_field(&sid, "JobName").as_deref(), Some("later.name"));
    assert_eq!(c.job_field(&sid, "TimeLimit").as_deref(), Some("00:05:00"));
    assert_eq!(c.job_field(&sid, "MinMemoryNode").as_deref(), Some("954M"));
    let q = c.ok("squeue", &["-h", "-j", &sid, "-o", "%k|%j"]);
    assert_eq!(q.trim(), "quoted value|later.name");
    assert_eq!(
        c.job_field(&sid, "Partition").as_deref(),
        Some("debug"),
        "directive after the first command is ignored"
    );
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("PENDING"));
    assert_eq!(c.job_field(&sid, "Reason").as_deref(), Some("JobHeldUser"));
    // Other time and memory spellings.
    for (t, want) in [
        ("0:5:0", "00:05:00"),
        ("30", "00:30:00"),
        ("1-0", "1-00:00:00"),
    ] {
        let id = c.sbatch(&["-H", "-t", t], "#!/bin/sh\ntrue\n");
        assert_eq!(
            c.job_field(&id.to_string(), "TimeLimit").as_deref(),
            Some(want),
            "-t {t}"
        );
    }
    for (m, want) in [("4g", "4G"), ("1024M", "1G"), ("2048K", "2M")] {
        let id = c.sbatch(&["-H", &format!("--mem={m}")], "#!/bin/sh\ntrue\n");
        assert_eq!(
            c.job_field(&id.to_string(), "MinMemoryNode").as_deref(),
            Some(want),
            "--mem={m}"
        );
    }
    // --wrap, stdin script, #SBATCH --parsable.
    let out = c.ok("sbatch", &["--wrap", "echo \"wrapped\""]);
    assert!(out.starts_with("Submitted batch job "), "{out}");
    let mut child = c
        .cmd("sbatch")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"#!/bin/bash\n#SBATCH --parsable\n#SBATCH -o /dev/null\ntrue\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let id: u32 = text.trim().parse().unwrap_or_else(|_| panic!("{text:?}"));
    assert_eq!(c.wait_done(id), "COMPLETED");
}

#[test]
fn jobs_pack_onto_nodes_without_overcommit() {
    // 2 nodes x 4 CPUs; 6 jobs of 2 CPUs: 4 run, 2 wait.
    let c = Cluster::start(Spec::default());
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(c.sbatch(&["-c", "2", "-o", "/dev/null"], "#!/bin/sh\nsleep 30\n"));
    }
    for id in &ids[..4] {
        c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(20));
    }
    let q = c.ok("squeue", &["-h", "-o", "%i %t %N %C %r"]);
    let running: Vec<&str> = q.lines().filter(|l| l.contains(" R ")).collect();
    assert_eq!(running.len(), 4, "{q}");
    let on1 = running.iter().filter(|l| l.contains("node1")).count();
    let on2 = running.iter().filter(|l| l.contains("node2")).count();
    assert_eq!((on1, on2), (2, 2), "{q}");
    for id in &ids[4..] {
        assert_eq!(
            c.job_field(&id.to_string(), "JobState").as_deref(),
            Some("PENDING")
        );
        // A job below the first blocked one of its partition gets its
        // reason from the next full pass (as in Slurm: `None` until the
        // scheduler has looked at it).
        let mut r = String::new();
        for _ in 0..400 {
            r = c.job_field(&id.to_string(), "Reason").unwrap_or_default();
            if r != "None" {
                break;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        assert!(r == "Resources" || r == "Priority", "{r}");
    }
    let nodes = c.ok("sinfo", &["-h", "-N", "-o", "%N %t %C"]);
    assert!(
        nodes.lines().all(|l| l.contains(" alloc 4/0/0/4")),
        "{nodes}"
    );
    // Cancelling one lets a waiting job start.
    c.ok("scancel", &[&ids[0].to_string()]);
    c.wait_state(&ids[4].to_string(), &["RUNNING"], Duration::from_secs(20));
    assert_eq!(c.wait_done(ids[0]), "CANCELLED");
}

#[test]
fn sbatch_wait_returns_exit_code_and_scancel_kills_the_whole_tree() {
    let c = Cluster::start(Spec::default());
    let out = c.run("sbatch", &["--wait", "-o", "/dev/null", "--wrap", "exit 7"]);
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A job that double-forks a daemon into its own session.
    let marker = format!("drover-orphan-{}", std::process::id());
    let id = c.sbatch(
        &["-o", "/dev/null"],
        &format!("#!/bin/bash\nsetsid bash -c 'exec -a {marker} sleep 300' &\nsleep 300\n"),
    );
    c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(20));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while drover_tests::pids_mentioning(&marker).is_empty() {
        assert!(std::time::Instant::now() < deadline, "daemon never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.ok("scancel", &[&id.to_string()]);
    assert_eq!(c.wait_done(id), "CANCELLED");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !drover_tests::pids_mentioning(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "a process survived its job"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let show = c.ok("scontrol", &["show", "job", "-o", &id.to_string()]);
    assert!(
        field(&show, "JobState").as_deref() == Some("CANCELLED"),
        "{show}"
    );
}
