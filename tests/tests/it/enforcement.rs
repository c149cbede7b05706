//! Kernel enforcement through the real daemons: memory limits and
//! OUT_OF_MEMORY, GPU binding with fake device nodes, CPU sets, time
//! limits and --signal, Prolog/Epilog/TaskProlog. Runs as root on the CI
//! machine (cgroup v1 controllers and a cgroup2 mount).

use std::path::Path;
use std::time::Duration;

use drover_tests::{Cluster, Spec};

fn root() -> bool {
    drover_proto::sys::is_root()
}

fn has_cgroup_v1(ctrl: &str) -> bool {
    Path::new("/sys/fs/cgroup")
        .join(ctrl)
        .join("cgroup.procs")
        .exists()
}

fn read(c: &Cluster, name: &str) -> String {
    std::fs::read_to_string(c.path().join(name)).unwrap_or_default()
}

#[test]
fn memory_limit_ends_out_of_memory() {
    if !root() || !has_cgroup_v1("memory") {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = Cluster::start(Spec {
        nodes: 1,
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    });
    let out = c.path().join("oom.out");
    let id = c.sbatch(
        &["--mem=32M", "-o", out.to_str().unwrap()],
        "#!/bin/sh\nperl -e '$x = \"a\" x 268435456; print \"survived\\n\"'\necho after\n",
    );
    c.expect_end(id, "OUT_OF_MEMORY");
    let sid = id.to_string();
    assert_eq!(c.job_field(&sid, "ExitCode").as_deref(), Some("0:125"));
    let q = c.ok("squeue", &["-h", "-t", "all", "-j", &sid, "-o", "%t %r"]);
    assert_eq!(q.trim(), "OOM OutOfMemory");
    let text = read(&c, "oom.out");
    assert!(!text.contains("survived"), "{text}");
    assert!(text.contains("oom_kill event"), "{text}");
    assert!(text.contains(&format!("StepId={id}.batch")), "{text}");
    assert!(text.contains("asked for 32M"), "{text}");
    // The job's cgroup is gone once it ended.
    let scope = format!("drover/node1_{}/job_{id}", c.agent_port);
    assert!(!Path::new("/sys/fs/cgroup/memory").join(&scope).exists());
}

#[test]
fn gpus_and_cores_are_bound() {
    let devs = tempfile::tempdir().unwrap();
    let d = devs.path().display().to_string();
    let Some(c) =
        drover_tests::gpu_cluster(devs.path(), "ConstrainDevices=yes\nConstrainCores=yes\n")
    else {
        return;
    };
    let probe = format!(
        "#!/bin/sh\n\
         echo \"CUDA=$CUDA_VISIBLE_DEVICES JOBGPUS=$SLURM_JOB_GPUS ON_NODE=$SLURM_GPUS_ON_NODE\"\n\
         cat {d}/nvidia0 2>&1 | sed 's/^cat: //'\n\
         cat {d}/nvidia1 2>&1 | sed 's/^cat: //'\n\
         grep Cpus_allowed_list /proc/self/status\n\
         while [ ! -e {dir}/go ]; do sleep 0.05; done\n",
        dir = c.path().display()
    );
    let a = c.sbatch(
        &[
            "--gres=gpu:1",
            "-c1",
            "-o",
            c.path().join("a.out").to_str().unwrap(),
        ],
        &probe,
    );
    let b = c.sbatch(
        &[
            "--gpus=1",
            "-c1",
            "-o",
            c.path().join("b.out").to_str().unwrap(),
        ],
        &probe,
    );
    for id in [a, b] {
        c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(30));
    }
    let a_out = c.wait_file(&c.path().join("a.out"), |t| t.contains("Cpus_allowed_list"));
    let b_out = c.wait_file(&c.path().join("b.out"), |t| t.contains("Cpus_allowed_list"));
    // Each sees exactly one GPU, renumbered 0 for CUDA, and a different one.
    let gpu_of = |out: &str| -> String {
        assert!(out.contains("CUDA=0 "), "{out}");
        assert!(out.contains("ON_NODE=1"), "{out}");
        out.split("JOBGPUS=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .to_string()
    };
    let (ga, gb) = (gpu_of(&a_out), gpu_of(&b_out));
    assert_ne!(ga, gb, "two jobs got the same GPU:\n{a_out}\n{b_out}");
    for (out, mine) in [(&a_out, &ga), (&b_out, &gb)] {
        let other = if mine == "0" { "1" } else { "0" };
        assert!(
            out.contains(&format!("nvidia{mine}: No such device or address")),
            "own GPU must open (no driver: ENXIO):\n{out}"
        );
        assert!(
            out.contains(&format!("nvidia{other}: Operation not permitted")),
            "other GPU must be denied:\n{out}"
        );
    }
    // One CPU each, not the same one.
    let cpus = |out: &str| {
        out.split("Cpus_allowed_list:")
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    };
    assert_ne!(cpus(&a_out), cpus(&b_out), "{a_out}\n{b_out}");
    assert!(!cpus(&a_out).contains(['-', ',']), "{a_out}");
    // scontrol show job -d names the GPU index.
    let detail = c.ok("scontrol", &["show", "job", "-d", &a.to_string()]);
    assert!(detail.contains(&format!("GRES=gpu(IDX:{ga})")), "{detail}");
    std::fs::write(c.path().join("go"), "").unwrap();
    c.expect_end(a, "COMPLETED");
    c.expect_end(b, "COMPLETED");
}

#[test]
fn prolog_epilog_and_task_prolog() {
    let c = Cluster::start(Spec {
        nodes: 2,
        extra: vec![
            "Prolog={DIR}/prolog.sh".into(),
            "Epilog={DIR}/epilog.sh".into(),
            "TaskProlog={DIR}/taskprolog.sh".into(),
        ],
        files: vec![
            (
                "prolog.sh".into(),
                "#!/bin/sh\necho \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURM_JOB_USER $SLURMD_NODENAME\" >> {DIR}/prolog.log\n\
                 [ \"$SLURM_JOB_NAME\" = badprolog ] && exit 3\nexit 0\n"
                    .into(),
            ),
            (
                "epilog.sh".into(),
                "#!/bin/sh\necho \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURM_JOB_EXIT_CODE2\" >> {DIR}/epilog.log\n\
                 [ \"$SLURM_JOB_NAME\" = badepilog ] && exit 1\nexit 0\n"
                    .into(),
            ),
            (
                "taskprolog.sh".into(),
                "#!/bin/sh\necho export FROM_TASK_PROLOG=yes\necho print hello from task prolog\necho unset DROP_ME\n"
                    .into(),
            ),
        ],
        ..Spec::default()
    });
    let out = c.path().join("ok.out");
    let id = c.sbatch_env(
        &["-o", out.to_str().unwrap(), "-w", "node1"],
        "#!/bin/sh\necho \"tp=$FROM_TASK_PROLOG drop=${DROP_ME:-gone}\"\nexit 4\n",
        &[("DROP_ME", "still-here")],
    );
    c.expect_end(id, "FAILED");
    let text = read(&c, "ok.out");
    assert!(text.contains("hello from task prolog"), "{text}");
    assert!(text.contains("tp=yes drop=gone"), "{text}");
    let pro = c.wait_file(&c.path().join("prolog.log"), |t| {
        t.contains(&format!("prolog_slurmd {id} "))
    });
    assert!(
        pro.contains(&format!("prolog_slurmd {id} root node1")),
        "{pro}"
    );
    let epi = c.wait_file(&c.path().join("epilog.log"), |t| {
        t.contains(&format!("epilog_slurmd {id} "))
    });
    assert!(epi.contains(&format!("epilog_slurmd {id} 4:0")), "{epi}");

    // A failing Prolog drains the node and requeues the job held.
    let bad = c.sbatch(
        &["-J", "badprolog", "-w", "node1"],
        "#!/bin/sh\necho never\n",
    );
    let sbad = bad.to_string();
    c.wait_file(&c.path().join("prolog.log"), |t| {
        t.contains(&format!("prolog_slurmd {bad} "))
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let r = c.job_field(&sbad, "Reason").unwrap_or_default();
        if c.job_field(&sbad, "JobState").as_deref() == Some("PENDING") && r.contains("launch") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            c.ok("scontrol", &["show", "job", &sbad])
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    let q = c.ok("squeue", &["-h", "-j", &sbad, "-o", "%t|%r"]);
    assert_eq!(q.trim(), "PD|launch failed requeued held");
    assert_eq!(c.job_field(&sbad, "Restarts").as_deref(), Some("1"));
    let n = c.ok("sinfo", &["-h", "-n", "node1", "-o", "%t|%E"]);
    assert_eq!(n.trim(), "drain|Prolog error");

    // A failing Epilog drains the node; the job itself is fine.
    let epi_bad = c.sbatch(&["-J", "badepilog", "-w", "node2"], "#!/bin/sh\ntrue\n");
    c.expect_end(epi_bad, "COMPLETED");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let n = c.ok("sinfo", &["-h", "-n", "node2", "-o", "%t|%E"]);
        if n.trim() == "drain|Epilog error" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "node2: {n}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn time_limit_signals_then_timeout() {
    let c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    // B: goes to the batch shell only, 55 s before the 1-minute limit.
    let out = c.path().join("warn.out");
    let warned = c.sbatch(
        &[
            "--time=1",
            "--signal=B:USR1@55",
            "-o",
            out.to_str().unwrap(),
        ],
        "#!/bin/sh\ntrap 'echo got-usr1; exit 0' USR1\nwhile :; do sleep 0.1; done\n",
    );
    c.expect_end(warned, "COMPLETED");
    assert!(read(&c, "warn.out").contains("got-usr1"));

    // Past the limit: SIGTERM (trapped and ignored here), SIGKILL after KillWait, TIMEOUT.
    let out = c.path().join("limit.out");
    let id = c.sbatch(
        &["--time=1", "-o", out.to_str().unwrap()],
        "#!/bin/sh\ntrap 'echo got-term' TERM\nwhile :; do sleep 0.1; done\n",
    );
    let got = c.wait_state(
        &id.to_string(),
        &["TIMEOUT", "COMPLETED", "FAILED", "CANCELLED"],
        Duration::from_secs(120),
    );
    assert_eq!(got, "TIMEOUT");
    assert!(read(&c, "limit.out").contains("got-term"));
    let elapsed = c.ok(
        "squeue",
        &["-h", "-t", "all", "-j", &id.to_string(), "-o", "%M %t %r"],
    );
    assert!(elapsed.trim().ends_with("TO TimeLimit"), "{elapsed}");
}

/// sacct/sstat sizes (`20664K`, `20M`) in KiB.
fn kib(v: &str) -> u64 {
    let (num, mult) = match v.chars().last() {
        Some('K') => (&v[..v.len() - 1], 1),
        Some('M') => (&v[..v.len() - 1], 1024),
        Some('G') => (&v[..v.len() - 1], 1024 * 1024),
        _ => (v, 1),
    };
    num.parse::<u64>().unwrap_or(0) * mult
}

#[test]
fn sstat_reports_live_usage() {
    let c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let flag = c.path().join("stop");
    let id = c.sbatch(
        &[],
        &format!(
            "#!/bin/sh\nperl -e '$x = \"a\" x 20000000; $i = 0; until (-e \"{f}\") {{ $i++ }}' &\nwait\n",
            f = flag.display()
        ),
    );
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], Duration::from_secs(30));
    // Wait until the job has used some CPU, then look at it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let line = loop {
        let o = c.run(
            "sstat",
            &[
                "-j",
                &sid,
                "-n",
                "-P",
                "-o",
                "JobID,MaxRSS,AveCPU,NTasks,Pids",
            ],
        );
        let text = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let rss = text.split('|').nth(1).map(kib).unwrap_or(0);
        // Wait until the string is allocated and CPU time has accrued.
        if o.status.success() && !text.contains("|00:00:00|") && rss > 10_000 {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sstat: {text} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let f: Vec<&str> = line.split('|').collect();
    assert_eq!(f[0], format!("{id}.batch"));
    assert_eq!(f[3], "1");
    assert!(!f[4].is_empty(), "{line}");
    // The table form has Slurm's header.
    let t = c.ok(
        "sstat",
        &["-j", &format!("{id}.batch"), "-o", "JobID,MaxRSS"],
    );
    assert!(
        t.starts_with("       JobID     MaxRSS \n------------ ---------- \n"),
        "{t}"
    );
    // Someone else's job: refused.
    let o = c.run_as(65534, "sstat", &["-j", &sid]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("Access/permission denied"));
    std::fs::write(&flag, "").unwrap();
    c.expect_end(id, "COMPLETED");
    let o = c.run("sstat", &["-j", &sid]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("no steps running for job {id}")));
}

#[test]
fn nvml_autodetect_without_a_driver_keeps_the_node_up() {
    let c = Cluster::start(Spec {
        nodes: 1,
        extra: vec!["GresTypes=gpu".into()],
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=2 RealMemory=2000 Gres=gpu:1\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        files: vec![("gres.conf".into(), "AutoDetect=nvml\n".into())],
        ..Spec::default()
    });
    let log = c.log_text("droverd");
    if !log.contains("NVML found") {
        assert!(log.contains("AutoDetect=nvml"), "{log}");
    }
    let out = c.path().join("g.out");
    let id = c.sbatch(
        &["--gres=gpu:1", "-o", out.to_str().unwrap()],
        "#!/bin/sh\necho \"gpus=$SLURM_JOB_GPUS on=$SLURM_GPUS_ON_NODE\"\n",
    );
    c.expect_end(id, "COMPLETED");
    assert!(
        read(&c, "g.out").contains("gpus=0 on=1"),
        "{}",
        read(&c, "g.out")
    );
}

#[test]
fn agent_restart_keeps_running_jobs_and_reaps_orphan_cgroups() {
    if !root() || !has_cgroup_v1("freezer") {
        eprintln!("needs root and the v1 freezer");
        return;
    }
    let mut c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let flag = c.path().join("go");
    let id = c.sbatch(
        &[],
        &format!(
            "#!/bin/sh\necho up > {}/started\nwhile [ ! -e {} ]; do sleep 0.05; done\n",
            c.path().display(),
            flag.display()
        ),
    );
    // RUNNING comes before the script starts: wait for the script itself.
    c.wait_file(&c.path().join("started"), |t| t.contains("up"));
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    let scope = freezer.join(format!("drover/node1_{}", c.agent_port));
    let job_cg = scope.join(format!("job_{id}"));
    assert!(
        job_cg.join("step_batch").is_dir(),
        "job cgroup exists while it runs"
    );

    // A cgroup left behind by a supervisor that died, with a process in it.
    c.kill_agent();
    let orphan = scope.join("job_999999").join("step_batch");
    std::fs::create_dir_all(&orphan).unwrap();
    let procs = orphan.join("cgroup.procs");
    let mut sleeper = {
        let p = std::ffi::CString::new(procs.to_str().unwrap()).unwrap();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("300");
        drover_proto::sys::join_cgroups_in_child(&mut cmd, vec![p]);
        cmd.spawn().unwrap()
    };
    c.start_agent().unwrap();
    // The orphan's process is killed and its group removed; the live job stays.
    let status = sleeper.wait().unwrap();
    assert!(!status.success(), "the orphan's process was killed");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while scope.join("job_999999").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "orphan cgroup not removed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(job_cg.is_dir(), "the running job's cgroup is kept");
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    std::fs::write(&flag, "").unwrap();
    c.expect_end(id, "COMPLETED");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while job_cg.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "job cgroup not removed at its end"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn oom_and_usage_reach_accounting() {
    if !root() || !has_cgroup_v1("memory") {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = Cluster::start(Spec {
        nodes: 1,
        accounting: Some("sqlite".into()),
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    });
    let oom = c.sbatch(
        &["--mem=32M", "-o", "/dev/null"],
        "#!/bin/sh\nperl -e '$x = \"a\" x 268435456'\n",
    );
    // CPU for about a second and a 20 MB string: TotalCPU and MaxRSS show them.
    let busy = c.sbatch(
        &["--mem=200M", "-o", "/dev/null"],
        "#!/bin/sh\nperl -e '$x = \"a\" x 20000000; $t = time + 1; while (time < $t) {}'\n",
    );
    c.expect_end(oom, "OUT_OF_MEMORY");
    c.expect_end(busy, "COMPLETED");
    let ids = format!("{oom},{busy}");
    let text = c.wait_sacct(
        &[
            "-j",
            &ids,
            "-P",
            "-n",
            "-o",
            "JobID,State,ExitCode,MaxRSS,TotalCPU",
        ],
        Duration::from_secs(60),
        // Records arrive after the jobs end: wait for the final ones.
        |t| {
            t.lines().count() == 4
                && t.contains(&format!("{oom}|OUT_OF_MEMORY|"))
                && t.contains(&format!("{busy}|COMPLETED|"))
                && t.contains(&format!("{busy}.batch|COMPLETED|"))
        },
    );
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    let find = |id: String| {
        lines
            .iter()
            .find(|l| l[0] == id)
            .unwrap_or_else(|| panic!("no {id} in {text}"))
    };
    assert_eq!(
        &find(oom.to_string())[1..3],
        ["OUT_OF_MEMORY", "0:125"],
        "{text}"
    );
    assert_eq!(find(busy.to_string())[1], "COMPLETED", "{text}");
    // Memory is per step in Slurm's records: the batch step carries it.
    let b = find(format!("{busy}.batch"));
    assert!(kib(b[3]) > 15_000, "MaxRSS from the cgroup: {text}");
    assert_ne!(b[4], "00:00:00", "TotalCPU from the cgroup: {text}");
}
