//! Slurm compatibility, option by option (issue 11): job steps shaped by
//! their allocation, input environment variables, scancel's words, time
//! forms, small options and messages.

use std::process::Stdio;
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

use crate::steps::{allocation, srun, srun_cmd, text};

const WAIT: Duration = Duration::from_secs(60);

/// The sorted lines a batch job wrote to `out`.
fn job_lines(c: &Cluster, args: &[&str], body: &str) -> Vec<String> {
    let out = c
        .path()
        .join(format!("shape-{}.out", drover_tests::unique()));
    let o = format!("--output={}", out.display());
    let mut all = vec![o.as_str()];
    all.extend_from_slice(args);
    let id = c.sbatch(&all, &format!("#!/bin/sh\n{body}\n"));
    c.expect_end(id, "COMPLETED");
    let mut lines: Vec<String> = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_bare_srun_takes_the_allocations_shape() {
    let c = Cluster::start(Spec::default());
    let each = "srun sh -c 'echo $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NUM_TASKS'";
    assert_eq!(
        job_lines(&c, &["-N1", "--ntasks-per-node=2"], each),
        vec!["0 node1 2", "1 node1 2"]
    );
    assert_eq!(
        job_lines(&c, &["-N2", "--ntasks-per-node=2"], each),
        vec!["0 node1 4", "1 node1 4", "2 node2 4", "3 node2 4"]
    );
    // -N1 on the command line: the task count follows the node count; -n1
    // gets Slurm's warning about the job's 2 nodes.
    assert_eq!(
        job_lines(
            &c,
            &["-N2", "--ntasks-per-node=2"],
            "srun -N1 sh -c 'echo N1 $SLURM_PROCID'; srun -n1 echo n1 2>&1"
        ),
        vec![
            "N1 0",
            "N1 1",
            "n1",
            "srun: warning: can't run 1 processes on 2 nodes, setting nnodes to 1"
        ]
    );
    // A tool that strips every SLURM_* variable but SLURM_JOB_ID still gets
    // the job's layout (the controller's default).
    let job = allocation(&c, &["-N2", "--ntasks-per-node=2"]);
    let o = srun(&c, job, &["sh", "-c", "echo $SLURM_PROCID"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut got: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    got.sort();
    assert_eq!(got, vec!["0", "1", "2", "3"]);
    // Input variables: SRUN_OUTPUT names the output file, SLURM_STDOUTMODE
    // too (the older name); the command line wins over both.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("via-env.out");
    let o = srun_cmd(&c, job, &["-n1", "echo", "from-env"])
        .env("SLURM_STDOUTMODE", "/nonexistent/x")
        .env("SRUN_OUTPUT", &f)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "from-env\n");
    let o = srun_cmd(&c, job, &["-n1", "-o", "none", "echo", "x"])
        .env("SRUN_OUTPUT", dir.path().join("unused.out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!dir.path().join("unused.out").exists());
    // --export=VAR=val and ALL,VAR=val set the variable; without ALL only
    // SLURM_* and the named ones pass; NONE passes SLURM_* only.
    for (export, want) in [
        ("--export=FOO=bar", "bar|"),
        ("--export=ALL,FOO=bar", "bar|kept"),
        ("--export=FOO,KEEP_ME", "outer|kept"),
        ("--export=NONE", "|"),
    ] {
        let o = srun_cmd(
            &c,
            job,
            &["-n1", export, "/bin/sh", "-c", "echo \"$FOO|$KEEP_ME\""],
        )
        .env("KEEP_ME", "kept")
        .env("FOO", "outer")
        .stdin(Stdio::null())
        .output()
        .unwrap();
        assert!(o.status.success(), "{export}: {}", text(&o.stderr));
        assert_eq!(text(&o.stdout), format!("{want}\n"), "{export}");
    }
    // -O: more tasks than the job's CPUs, which refuses them otherwise.
    let o = srun(&c, job, &["-n8", "true"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let o = srun(&c, job, &["-O", "-n8", "true"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // srun -v: Slurm's option dump, the environment's values included.
    let o = srun_cmd(&c, job, &["-v", "-n1", "true"])
        .env("SLURM_LABELIO", "1")
        .output()
        .unwrap();
    let err = text(&o.stderr);
    for l in [
        "srun: defined options",
        "srun: label               : set",
        "srun: ntasks              : 1",
        "srun: verbose             : 1",
        "srun: end of defined options",
    ] {
        assert!(err.lines().any(|x| x == l), "{l} in {err}");
    }
    // Tasks know srun's port.
    let o = srun(
        &c,
        job,
        &["-n1", "sh", "-c", "echo ${SLURM_SRUN_COMM_PORT:-none}"],
    );
    let port: u32 = text(&o.stdout).trim().parse().unwrap_or(0);
    assert!(port > 0, "{}", text(&o.stdout));
    // Every task knows its own pid (SLURM_TASK_PID), as in Slurm.
    let o = srun(
        &c,
        job,
        &[
            "-n2",
            "sh",
            "-c",
            "[ \"$SLURM_TASK_PID\" = \"$$\" ] && echo same || echo \"$SLURM_TASK_PID $$\"",
        ],
    );
    assert_eq!(text(&o.stdout), "same\nsame\n", "{}", text(&o.stderr));
}

#[test]
fn srun_immediate_and_a_steps_own_time_limit() {
    let c = Cluster::start(Spec {
        extra: vec!["KillWait=2".into()],
        ..Spec::default()
    });
    let job = allocation(&c, &["-N1", "-n1"]);
    // The job's one CPU is held by a step: -I gives up at once, in Slurm's
    // words, where a plain srun would wait.
    let mut holder = srun_cmd(&c, job, &["-n1", "sleep", "300"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let s = c.ok("squeue", &["-h", "-s", "-j", &job.to_string(), "-o", "%i"]);
        if s.contains(&format!("{job}.0")) {
            break;
        }
        assert!(Instant::now() < deadline, "step 0 never ran: {s}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = srun(&c, job, &["-I", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!("srun: error: Unable to create step for job {job}: Requested nodes are busy")
    );
    let _ = holder.kill();
    let _ = holder.wait();
    // -t 1: the step ends at one minute with slurmstepd's line; the job
    // goes on.
    let start = Instant::now();
    let o = srun(&c, job, &["-t", "1", "sleep", "300"]);
    assert!(start.elapsed() >= Duration::from_secs(59));
    let err = text(&o.stderr);
    assert!(
        err.lines().any(
            |l| l.starts_with(&format!("slurmstepd: error: *** STEP {job}."))
                && l.ends_with(" DUE TO TIME LIMIT ***")
        ),
        "{err}"
    );
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(
        c.job_field(&job.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
}

#[test]
fn verbose_dumps_and_input_variables_in_slurms_order() {
    let c = Cluster::start(Spec::default());
    // sbatch -v: Slurm's dump of the options set, on stderr.
    let o = c.run(
        "sbatch",
        &["-v", "-p", "debug", "-t", "3", "--wrap", "true"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("Submitted batch job "));
    let err = text(&o.stderr);
    let want = [
        "sbatch: defined options",
        "sbatch: -------------------- --------------------",
        "sbatch: partition           : debug",
        "sbatch: time                : 00:03:00",
        "sbatch: verbose             : 1",
        "sbatch: wrap                : true",
        "sbatch: -------------------- --------------------",
        "sbatch: end of defined options",
    ];
    let got: Vec<&str> = err.lines().filter(|l| want.contains(l)).collect();
    assert_eq!(got, want, "{err}");
    // squeue -v: its option dump on stdout, before the jobs.
    let q = c.ok("squeue", &["-v", "-t", "PD", "-h"]);
    assert!(
        q.starts_with("-----------------------------\nall         = false\narray       = false\n"),
        "{q}"
    );
    for l in [
        "states      = PD",
        "format      = (null)",
        "verbose     = 1",
    ] {
        assert!(q.lines().any(|x| x == l), "{l} in {q}");
    }
    // Precedence: command line > SBATCH_* > #SBATCH directives.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env.out");
    let script = "#!/bin/sh\n#SBATCH -J from-script\n#SBATCH -t 7\necho \"$SLURM_EXPORT_ENV\"\n";
    let id = c.sbatch_env(
        &["--export=NONE"],
        script,
        &[
            ("SBATCH_JOB_NAME", "from-env"),
            ("SBATCH_OUTPUT", out.to_str().unwrap()),
            ("SBATCH_TIMELIMIT", "5"),
        ],
    );
    c.expect_end(id, "COMPLETED");
    let ids = id.to_string();
    assert_eq!(c.job_field(&ids, "JobName").as_deref(), Some("from-env"));
    assert_eq!(c.job_field(&ids, "TimeLimit").as_deref(), Some("00:05:00"));
    // SBATCH_OUTPUT named the file; the job learnt its --export.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "NONE\n");
    let id = c.sbatch_env(
        &["-J", "from-cli", "-o", "/dev/null"],
        script,
        &[("SBATCH_JOB_NAME", "from-env")],
    );
    assert_eq!(
        c.job_field(&id.to_string(), "JobName").as_deref(),
        Some("from-cli")
    );
    // SBATCH_DEBUG counts as -v.
    let o = c
        .cmd("sbatch")
        .args(["-o", "/dev/null", "--wrap", "true"])
        .env("SBATCH_DEBUG", "2")
        .output()
        .unwrap();
    assert!(
        text(&o.stderr)
            .lines()
            .any(|l| l == "sbatch: verbose             : 2"),
        "{}",
        text(&o.stderr)
    );
    // salloc: SALLOC_* variables, and the allocation's layout variables.
    let o = c
        .cmd("salloc")
        .args([
            "-N2",
            "--ntasks-per-node=2",
            "sh",
            "-c",
            "echo $SLURM_JOB_CPUS_PER_NODE $SLURM_TASKS_PER_NODE $SLURM_NTASKS $SLURM_JOB_PARTITION",
        ])
        .env("SALLOC_PARTITION", "debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "2(x2) 2(x2) 4 debug\n");
}

/// salloc run from a terminal puts its command in a process group of its
/// own and makes that the terminal's foreground group (Slurm's salloc), so
/// a shell's job control and Ctrl-C reach the command, not salloc.
#[test]
fn sallocs_command_owns_the_terminal_foreground() {
    let c = Cluster::start(Spec::default());
    let (master, tty) = drover_tests::sys::openpty().expect("openpty");
    let mut cmd = c.cmd("salloc");
    // The command prints its pid, process group and the terminal's
    // foreground group (fields 5 and 8 of /proc/PID/stat).
    cmd.args([
        "-n1",
        "sh",
        "-c",
        "echo $$ $(cut -d' ' -f5,8 /proc/$$/stat)",
    ])
    .stdin(tty.try_clone().unwrap())
    .stderr(Stdio::null())
    .stdout(Stdio::piped());
    drover_tests::sys::controlling_tty_in_child(&mut cmd);
    let o = cmd.output().unwrap();
    drop(tty);
    drop(master);
    assert!(o.status.success());
    let f: Vec<String> = text(&o.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(f.len(), 3, "{:?}", text(&o.stdout));
    assert_eq!(f[1], f[0], "the command leads its own group: {f:?}");
    assert_eq!(f[2], f[0], "its group is the terminal's foreground: {f:?}");
}

#[test]
fn scancel_signals_steps_and_talks_like_slurm() {
    let c = Cluster::start(Spec::default());
    let out = c.path().join("sig.out");
    // Builtins only in the loops: a signal that lands in a helper would end
    // them early.
    let script = "#!/bin/bash\n\
        trap 'echo shell USR1' USR1\n\
        srun -n1 bash -c 'trap \"echo step USR1; exit 0\" USR1; echo ready; i=0; while [ $i -lt 600 ]; do i=$((i+1)); sleep 0.1; done' &\n\
        until wait; do :; done\n\
        echo end\n";
    let id = c.sbatch(&["-o", out.to_str().unwrap()], script);
    let ids = id.to_string();
    c.wait_file(&out, |t| t.contains("ready"));
    // -b: the batch shell only.
    let o = c.run("scancel", &["-v", "-b", "-s", "USR1", &ids]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!("scancel: Signal 10 to batch job {id}")
    );
    c.wait_file(&out, |t| t.contains("shell USR1"));
    // No flag: the steps, not the shell.
    let o = c.run("scancel", &["-v", "--signal=USR1", &ids]);
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!("scancel: Signal 10 to job {id}")
    );
    c.expect_end(id, "COMPLETED");
    let t = std::fs::read_to_string(&out).unwrap();
    assert_eq!(t.matches("shell USR1").count(), 1, "{t}");
    assert!(t.contains("step USR1") && t.ends_with("end\n"), "{t}");
    // SIGSTOP: the job shows STOPPED (ST) until SIGCONT, as in Slurm.
    let idle = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsrun sleep 300\n");
    let idles = idle.to_string();
    c.wait_state(&idles, &["RUNNING"], WAIT);
    c.ok("scancel", &["-s", "STOP", &idles]);
    assert_eq!(c.job_field(&idles, "JobState").as_deref(), Some("STOPPED"));
    assert_eq!(
        c.ok("squeue", &["-h", "-j", &idles, "-o", "%t %T"]),
        "ST STOPPED\n"
    );
    c.ok("scancel", &["-s", "CONT", &idles]);
    assert_eq!(c.job_field(&idles, "JobState").as_deref(), Some("RUNNING"));
    c.ok("scancel", &[&idles]);
    // Filters that match nothing: Slurm's note with -v, and success.
    let o = c.run("scancel", &["-v", "-n", "no-such-job", "-t", "R"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stderr).trim_end(),
        "scancel: error: No active jobs match ALL job filters, including: job_name=no-such-job state=RUNNING"
    );
    let o = c.run("scancel", &["-n", "no-such-job"]);
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        text(&o.stderr)
    );
    // Terminating, by id and by filter.
    let a = c.sbatch(
        &["-o", "/dev/null", "-J", "victim"],
        "#!/bin/sh\nsleep 300\n",
    );
    let o = c.run("scancel", &["-v", &a.to_string()]);
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!("scancel: Terminating job {a}")
    );
    let b = c.sbatch(
        &["-o", "/dev/null", "-J", "victim2"],
        "#!/bin/sh\nsleep 300\n",
    );
    let o = c.run("scancel", &["-v", "-n", "victim2"]);
    assert_eq!(
        text(&o.stderr).trim_end(),
        format!("scancel: Terminating job {b}")
    );
    c.expect_end(b, "CANCELLED");
}

/// `date` in the local zone, as the commands see it.
fn local_date(args: &[&str]) -> String {
    let o = std::process::Command::new("date")
        .args(args)
        .output()
        .unwrap();
    text(&o.stdout).trim().to_string()
}

#[test]
fn begin_times_in_every_form_and_sacct_today() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    let tomorrow = local_date(&["-d", "tomorrow", "+%Y-%m-%d"]);
    for (begin, want) in [
        ("noon-tomorrow", format!("{tomorrow}T12:00:00")),
        ("noon tomorrow", format!("{tomorrow}T12:00:00")),
        ("midnight", format!("{tomorrow}T00:00:00")),
        ("teatime tomorrow", format!("{tomorrow}T16:00:00")),
        ("fika-tomorrow", format!("{tomorrow}T15:00:00")),
        ("4:30PM tomorrow", format!("{tomorrow}T16:30:00")),
    ] {
        let id = c.sbatch(&["--begin", begin, "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
        let ids = id.to_string();
        assert_eq!(c.job_field(&ids, "EligibleTime"), Some(want), "{begin}");
        assert_eq!(
            c.job_field(&ids, "Reason").as_deref(),
            Some("BeginTime"),
            "{begin}"
        );
        c.ok("scancel", &[&ids]);
    }
    // now+1hour: an hour from now (to the minute either side).
    let id = c.sbatch(
        &["--begin=now+1hour", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let got = c.job_field(&id.to_string(), "EligibleTime").unwrap();
    let near: Vec<String> = ["+59 minutes", "+60 minutes", "+61 minutes"]
        .iter()
        .map(|d| local_date(&["-d", d, "+%Y-%m-%dT%H:%M"]))
        .collect();
    assert!(
        near.iter().any(|n| got.starts_with(n)),
        "{got} not in {near:?}"
    );
    let o = c.run("sbatch", &["--begin=now+5parsecs", "--wrap", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("Invalid --begin specification"),
        "{}",
        text(&o.stderr)
    );
    // sacct --starttime=00:00 is today's midnight (a time of day looks back).
    let done = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsrun true\n");
    c.expect_end(done, "COMPLETED");
    let ids = done.to_string();
    let t = c.wait_sacct(
        &["-X", "-n", "-P", "-S", "00:00", "-o", "JobID"],
        WAIT,
        |t| t.lines().any(|l| l == ids),
    );
    assert!(t.lines().any(|l| l == ids), "{t}");
    // sacct -j J.N: that step only; nothing for a step that never was.
    let step = format!("{ids}.0");
    let t = c.wait_sacct(&["-j", &step, "-n", "-P", "-o", "JobID"], WAIT, |t| {
        !t.trim().is_empty()
    });
    assert_eq!(t, format!("{step}\n"));
    let t = c.ok(
        "sacct",
        &["-j", &format!("{ids}.7"), "-n", "-P", "-o", "JobID"],
    );
    assert_eq!(t, "");
    let t = c.ok(
        "sacct",
        &["-j", &format!("{ids}.batch"), "-n", "-P", "-o", "JobID"],
    );
    assert_eq!(t, format!("{ids}.batch\n"));
}

#[test]
fn messages_and_small_options_in_slurms_words() {
    let c = Cluster::start(Spec::default());
    let lines = |prog: &str, args: &[&str]| -> (Option<i32>, Vec<String>) {
        let o = c
            .cmd(prog)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            o.status.code(),
            text(&o.stderr).lines().map(String::from).collect(),
        )
    };
    let (code, err) = lines("sbatch", &["-p", "nosuch", "--wrap", "true"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        vec![
            "sbatch: error: invalid partition specified: nosuch",
            "sbatch: error: Batch job submission failed: Invalid partition name specified"
        ]
    );
    let (code, err) = lines("srun", &["-p", "debug,nosuch", "true"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        vec![
            "srun: error: invalid partition specified: nosuch",
            "srun: error: Unable to allocate resources: Invalid partition name specified"
        ]
    );
    let (code, err) = lines("salloc", &["-p", "nosuch", "true"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        vec![
            "salloc: error: invalid partition specified: nosuch",
            "salloc: error: Job submit/allocate failed: Invalid partition name specified"
        ]
    );
    // squeue -w: a name that is no node is refused.
    let (code, err) = lines("squeue", &["--nodelist=unknown"]);
    assert_eq!(code, Some(1));
    assert_eq!(err, vec!["squeue: error: Invalid node name unknown"]);
    c.ok("squeue", &["-w", "node1"]);
    // sinfo -O: statecomplete and the other long fields.
    let s = c.ok(
        "sinfo",
        &[
            "-h",
            "-N",
            "-O",
            "nodelist:8,statecomplete:12,share:6,comment:8",
        ],
    );
    assert_eq!(
        s.lines().collect::<Vec<_>>(),
        vec![
            "node1   idle        NO    (null)  ",
            "node2   idle        NO    (null)  "
        ],
        "{s}"
    );
    c.ok(
        "scontrol",
        &["update", "NodeName=node2", "State=DRAIN", "Reason=test"],
    );
    let s = c.ok("sinfo", &["-h", "-n", "node2", "-O", "statecomplete"]);
    assert_eq!(s.trim(), "idle+drain");
    let all = c.ok("sinfo", &["-O", "all"]);
    let head = all.lines().next().unwrap_or("");
    assert!(head.starts_with("AVAIL|ACTIVE_FEATURES|"), "{head}");
}

#[test]
fn scontrol_daemons_hostnames_and_every_config_key() {
    let c = Cluster::start(Spec::default());
    // The test cluster's controller is on this host (localhost), its
    // nodes (node1, node2) are not: Slurm's "slurmctld " line.
    let d = c.ok("scontrol", &["show", "daemons"]);
    assert_eq!(d, "droverctld \n");
    // Several brackets: the last varies fastest, as in Slurm.
    let h = c.ok("scontrol", &["show", "hostnames", "row[0,1]_rack[2-3]"]);
    assert_eq!(h, "row0_rack2\nrow0_rack3\nrow1_rack2\nrow1_rack3\n");
    let cfg = c.ok("scontrol", &["show", "config"]);
    let key = |k: &str| {
        cfg.lines()
            .find(|l| l.split_whitespace().next() == Some(k))
            .map(|l| l.split_once(" = ").map_or("", |x| x.1).to_string())
    };
    for (k, want) in [
        ("ProctrackType", "proctrack/cgroup"),
        ("AccountingStorageEnforce", "none"),
        ("PrologFlags", "(null)"),
        ("JobSubmitPlugins", "(null)"),
        ("DependencyParameters", "(null)"),
        ("SlurmctldParameters", "(null)"),
        ("MinJobAge", "300 sec"),
    ] {
        assert_eq!(key(k).as_deref(), Some(want), "{k}");
    }
    assert!(cfg.lines().count() > 150, "{cfg}");
}

/// `sbatch -n 5` without `-N` on 2-CPU nodes: Slurm spans as few nodes as
/// hold the tasks (3 here), and the job's steps use them all.
#[test]
fn tasks_without_a_node_count_span_nodes() {
    let c = Cluster::start(Spec {
        nodes: 3,
        cpus: 2,
        ..Spec::default()
    });
    let out = c.path().join("span.out");
    let id = c.sbatch(
        &["-n5", "-o", out.to_str().unwrap()],
        "#!/bin/sh\necho nodes=$SLURM_NNODES tasks=$SLURM_NTASKS\nsrun hostname | wc -l\n",
    );
    c.expect_end(id, "COMPLETED");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, "nodes=3 tasks=5\n5\n", "{text}");
    assert_eq!(
        c.job_field(&id.to_string(), "NumNodes").as_deref(),
        Some("3")
    );
    // More tasks than the cluster has CPUs: refused at submit, in Slurm's words.
    let o = c.run("sbatch", &["-n7", "--wrap", "true"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Requested node configuration is not available"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
