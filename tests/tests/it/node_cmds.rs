//! Commands served by the node agents themselves: `scontrol listpids`,
//! `sbcast`, `sattach`.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use drover_tests::{pids_mentioning, Cluster, Spec};

use crate::steps::{srun_cmd, text};

const NOBODY: u32 = 65534;

/// Poll `f` until it returns Some, for up to 30 s.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The rows of `scontrol listpids` as (pid, job, step, localid, globalid).
fn rows(out: &str) -> Vec<(i32, u32, String, String, String)> {
    out.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((
                w.first()?.parse().ok()?,
                w.get(1)?.parse().ok()?,
                w.get(2)?.to_string(),
                w.get(3)?.to_string(),
                w.get(4)?.to_string(),
            ))
        })
        .collect()
}

#[test]
fn scontrol_listpids_shows_batch_and_step_processes_to_their_owner() {
    listpids_on(Spec::default(), "301.25", "302.5");
}

/// The same without cgroups: the processes come from the process trees.
#[test]
fn scontrol_listpids_without_cgroups() {
    listpids_on(
        Spec {
            files: vec![("cgroup.conf".into(), "CgroupPlugin=disabled\n".into())],
            ..Spec::default()
        },
        "301.75",
        "302.75",
    );
}

/// `batch`, `task`: how long the batch script's and the step's sleeps are
/// (distinct per test: the tests run side by side and find their
/// processes by command line).
fn listpids_on(spec: Spec, batch: &str, task: &str) {
    let c = Cluster::start(spec);
    // Nothing runs yet.
    let o = c.run("scontrol", &["listpids"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stdout),
        "PID      JOBID    STEPID   LOCALID GLOBALID\n"
    );
    assert_eq!(text(&o.stderr), "No job steps exist on this node.\n");

    let job = c.sbatch(
        &["-o", "/dev/null", "-N2", "-n4"],
        &format!("#!/bin/sh\nsleep {batch} &\nwait\n"),
    );
    let js = job.to_string();
    c.wait_state(&js, &["RUNNING"], Duration::from_secs(60));
    let sleep = wait_for("the batch job's sleep", || {
        pids_mentioning(batch).first().copied()
    });
    // The supervisor records the script as task 0 once its fork returns,
    // which under load may be after the script started its sleep.
    let out = wait_for("listpids to show the sleep and the script", || {
        let o = c.run("scontrol", &["listpids", &js]);
        let out = text(&o.stdout);
        let r = rows(&out);
        (r.iter().any(|x| x.0 == sleep) && r.iter().any(|x| x.2 == "batch" && x.3 == "0"))
            .then_some(out)
    });
    let r = rows(&out);
    // The script is task 0 of the batch step; its sleep is not a task.
    assert!(
        r.iter()
            .any(|x| x.1 == job && x.2 == "batch" && x.3 == "0" && x.4 == "0"),
        "{out}"
    );
    assert!(
        r.contains(&(sleep, job, "batch".into(), "-".into(), "-".into())),
        "{out}"
    );
    // An srun step's tasks carry their ranks.
    let mut step = srun_cmd(&c, job, &["-n2", "-N1", "sleep", task])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = wait_for("the step's two tasks", || {
        let o = c.run("scontrol", &["listpids", &format!("{job}.0"), "node1"]);
        let t = text(&o.stdout);
        (o.status.success() && rows(&t).len() == 2).then_some(t)
    });
    let mut ranks: Vec<(String, String)> = rows(&out)
        .into_iter()
        .map(|x| {
            assert_eq!((x.1, x.2.as_str()), (job, "0"), "{out}");
            (x.3, x.4)
        })
        .collect();
    ranks.sort();
    assert_eq!(
        ranks,
        vec![("0".into(), "0".into()), ("1".into(), "1".into())],
        "{out}"
    );
    for (pid, ..) in rows(&out) {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(text(&cmd).contains(task), "pid {pid} is not a task");
    }
    // The whole job: both steps.
    let all = c.ok("scontrol", &["listpids", &js]);
    let steps: Vec<String> = rows(&all).into_iter().map(|x| x.2).collect();
    assert!(
        steps.contains(&"batch".to_string()) && steps.contains(&"0".to_string()),
        "{all}"
    );

    // Another user sees none of it.
    let o = c.run_as(NOBODY, "scontrol", &["listpids", &js]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "scontrol: error: Access/permission denied\n"
    );
    let o = c.run_as(NOBODY, "scontrol", &["listpids"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "No job steps exist on this node.\n");
    // Slurm's words for what is not there.
    let o = c.run("scontrol", &["listpids", "999999"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "Job 999999 does not exist on this node.\n");
    let o = c.run("scontrol", &["listpids", &format!("{job}.7")]);
    assert_eq!(
        text(&o.stderr),
        format!("StepId={job}.7 does not exist on this node.\n")
    );
    let o = c.run("scontrol", &["listpids", "x1"]);
    assert_eq!(text(&o.stderr), "\"x1\" does not look like a jobid\n");
    let o = c.run("scontrol", &["listpids", &js, "nosuchnode"]);
    assert_eq!(
        text(&o.stderr),
        "scontrol: error: node nosuchnode is not in the configuration\n"
    );
    let _ = step.kill();
    let _ = step.wait();
    c.ok("scancel", &[&js]);
}

/// A command as `uid` in `dir`, inside job `job`.
fn as_user_in_job(
    c: &Cluster,
    uid: u32,
    dir: &Path,
    job: u32,
    prog: &str,
    args: &[&str],
) -> Output {
    let mut cmd = c.cmd(prog);
    cmd.args(args)
        .uid(uid)
        .gid(uid)
        .current_dir(dir)
        .env("SLURM_JOB_ID", job.to_string())
        .stdin(Stdio::null());
    cmd.output().expect("run command as user")
}

#[test]
fn sbcast_copies_as_the_jobs_user_to_every_node() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let c = Cluster::start(Spec::default());
    let home = c.path().join("nobody-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    // Three and a half chunks, not all alike.
    let data: Vec<u8> = (0..(3 << 20) + 12345)
        .map(|i: u32| (i % 251) as u8)
        .collect();
    let src = home.join("input.bin");
    std::fs::write(&src, &data).unwrap();
    std::os::unix::fs::chown(&src, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o750)).unwrap();
    let old = std::time::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_times(
            std::fs::FileTimes::new()
                .set_modified(old)
                .set_accessed(old),
        )
        .unwrap();
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "--parsable",
            "-N1",
            "-D",
            home.to_str().unwrap(),
            "-o",
            "/dev/null",
            "--wrap",
            "sleep 300",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let job: u32 = text(&o.stdout).trim().parse().unwrap();
    c.wait_state(&job.to_string(), &["RUNNING"], Duration::from_secs(60));

    // A relative DEST is relative to where sbcast runs; written as nobody, 0700.
    let o = as_user_in_job(&c, NOBODY, &home, job, "sbcast", &["input.bin", "copy.bin"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let copy = home.join("copy.bin");
    assert!(std::fs::read(&copy).unwrap() == data, "content differs");
    let m = std::fs::metadata(&copy).unwrap();
    assert_eq!(
        (m.uid(), m.gid(), m.mode() & 0o7777),
        (NOBODY, NOBODY, 0o700)
    );
    // Not replaced without -f, in Slurm's words.
    let o = as_user_in_job(&c, NOBODY, &home, job, "sbcast", &["input.bin", "copy.bin"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "sbcast: error: REQUEST_FILE_BCAST(node1): File exists\n"
    );
    // -f replaces, -p keeps the source's mode and times.
    std::fs::write(&copy, b"stale").unwrap();
    let o = as_user_in_job(
        &c,
        NOBODY,
        &home,
        job,
        "sbcast",
        &["-f", "-p", "-C", "-F", "4", "input.bin", "copy.bin"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        std::fs::read(&copy).unwrap() == data,
        "content differs after -f"
    );
    let m = std::fs::metadata(&copy).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o750);
    assert_eq!(m.mtime(), 1_600_000_000);
    // The user's rights, never root's: a root-only directory is refused.
    let private = c.path().join("root-only");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = private.join("x.bin");
    let o = as_user_in_job(
        &c,
        NOBODY,
        &home,
        job,
        "sbcast",
        &["input.bin", target.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "sbcast: error: REQUEST_FILE_BCAST(node1): Permission denied\n"
    );
    assert!(!target.exists());
    // Nobody may not write into root's job, even where nobody could write.
    let root_job = c.sbatch(&["-o", "/dev/null", "-N2"], "#!/bin/sh\nsleep 300\n");
    c.wait_state(&root_job.to_string(), &["RUNNING"], Duration::from_secs(60));
    let o = as_user_in_job(
        &c,
        NOBODY,
        &home,
        root_job,
        "sbcast",
        &["input.bin", "intruder.bin"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("REQUEST_FILE_BCAST(node1): Access/permission denied"),
        "{}",
        text(&o.stderr)
    );
    assert!(!home.join("intruder.bin").exists());
    // Root's own two-node job: both nodes (one host here, so -f).
    let dest = c.path().join("both.bin");
    let o = c
        .cmd("sbcast")
        .args([
            "-f",
            "-j",
            &root_job.to_string(),
            src.to_str().unwrap(),
            dest.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::read(&dest).unwrap() == data);
    let log = c.log_text("droverd");
    for n in ["node1", "node2"] {
        assert!(
            log.contains(&format!("to {} on {n}", dest.display())),
            "no write on {n}:\n{log}"
        );
    }
    // Outside a job, and a missing source.
    let o = c.run("sbcast", &["x", "y"]);
    assert_eq!(text(&o.stderr), "sbcast: error: Need a job id\n");
    let o = c.run(
        "sbcast",
        &["-j", &root_job.to_string(), "/no/such", "/tmp/y"],
    );
    assert_eq!(
        text(&o.stderr),
        "sbcast: error: Can't open `/no/such`: No such file or directory\n"
    );
    c.ok("scancel", &[&job.to_string(), &root_job.to_string()]);
}

#[test]
fn sattach_follows_a_running_step_and_ends_with_it() {
    let c = Cluster::start(Spec::default());
    let job = crate::steps::allocation(&c, &["-N1", "-n2"]);
    // Step 0 prints a line every 100 ms for about 5 s.
    let srun = srun_cmd(
        &c,
        job,
        &[
            "-n1",
            "sh",
            "-c",
            "i=0; while [ $i -lt 50 ]; do echo line $i; i=$((i+1)); sleep 0.1; done",
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let step = format!("{job}.0");
    wait_for("step 0", || {
        c.ok("squeue", &["-s", "-h", "-o", "%i"])
            .contains(&step)
            .then_some(())
    });
    // Someone else may not attach. (squeue lists the step a moment before
    // its node's agent has it: until then sattach says it is not there.)
    let mut last = String::new();
    let o = wait_for("sattach refused to another user", || {
        let o = c.run_as(NOBODY, "sattach", &[&step]);
        last = text(&o.stderr);
        (!last.contains("not found") && !last.contains("does not exist on this node")).then_some(o)
    });
    assert_eq!(o.status.code(), Some(1), "{last}");
    assert!(last.contains("Access/permission denied"), "{last}");
    let started = Instant::now();
    let o = c
        .cmd("sattach")
        .args(["-l", &step])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    // Further lines, labelled, in order, up to the last one; then it ended.
    let nums: Vec<u32> = out
        .lines()
        .map(|l| {
            l.strip_prefix("0: line ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("unexpected line {l:?} in {out}"))
        })
        .collect();
    assert!(nums.len() >= 5, "{out}");
    assert_eq!(*nums.last().unwrap(), 49, "{out}");
    assert!(nums.windows(2).all(|w| w[1] == w[0] + 1), "{out}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let srun_out = srun.wait_with_output().unwrap();
    assert!(
        text(&srun_out.stdout).contains("line 0\n"),
        "srun still got everything"
    );

    // Stdin reaches the task; the step's own srun still sees the output.
    let mut srun = srun_cmd(
        &c,
        job,
        &["-n1", "sh", "-c", "while read l; do echo got $l; done"],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let step = format!("{job}.1");
    // Its node's agent has it (squeue may list it a moment earlier).
    let node = c.ok("squeue", &["-j", &job.to_string(), "-h", "-o", "%N"]);
    wait_for("step 1 on its node", || {
        c.run("scontrol", &["listpids", &step, node.trim()])
            .status
            .success()
            .then_some(())
    });
    let mut att = c
        .cmd("sattach")
        .arg(&step)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut att_in = att.stdin.take().unwrap();
    let mut att_out = std::io::BufReader::new(att.stdout.take().unwrap());
    // The attach may not be in place at once: say hello until it answers.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut l = String::new();
        while std::io::BufRead::read_line(&mut att_out, &mut l).unwrap_or(0) > 0 {
            let _ = tx.send(l.clone());
            l.clear();
        }
    });
    let got = wait_for("the task's answer through sattach", || {
        let _ = att_in.write_all(b"hello\n");
        rx.recv_timeout(Duration::from_millis(200)).ok()
    });
    assert_eq!(got, "got hello\n");
    // The step ends when its srun's input does; sattach with it.
    drop(srun.stdin.take());
    let srun_out = srun.wait_with_output().unwrap();
    assert!(text(&srun_out.stdout).contains("got hello\n"));
    let st = att.wait().unwrap();
    assert!(st.success());
    c.ok("scancel", &[&job.to_string()]);
}

/// On hosts of their own: `scontrol listpids` finds the agent of the host
/// it runs on (by host name) and lists that node's processes only;
/// `sattach` follows the tasks of every node of a step.
#[test]
fn listpids_and_sattach_on_several_hosts() {
    let Some(c) = Cluster::start_hosts(Spec {
        nodes: 2,
        cpus: 2,
        ..Default::default()
    }) else {
        return;
    };
    let job = crate::steps::allocation(&c, &["-N2", "-n2"]);
    let srun = srun_cmd(
        &c,
        job,
        &[
            "-N2",
            "-n2",
            "sh",
            "-c",
            "i=0; while [ $i -lt 60 ]; do echo task $SLURM_PROCID $i; i=$((i+1)); sleep 0.1; done",
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let step = format!("{job}.0");
    // node2 has the step's task 1 and no batch script.
    let out = wait_for("task 1 on node2", || {
        let o = c.run_on("node2", "scontrol", &["listpids"]);
        let t = text(&o.stdout);
        rows(&t).iter().any(|r| r.2 == "0").then_some(t)
    });
    for r in rows(&out) {
        assert_eq!(r.1, job, "{out}");
        assert_eq!(r.2, "0", "only the step runs on node2: {out}");
    }
    assert!(rows(&out).iter().any(|r| r.3 == "0" && r.4 == "1"), "{out}");
    // node1 has the batch script and task 0.
    let t = wait_for("task 0 on node1", || {
        let o = c.run_on("node1", "scontrol", &["listpids", &job.to_string()]);
        let t = text(&o.stdout);
        rows(&t)
            .iter()
            .any(|r| r.2 == "0" && r.4 == "0")
            .then_some(t)
    });
    assert!(rows(&t).iter().any(|r| r.2 == "batch" && r.3 == "0"), "{t}");
    assert!(rows(&t).iter().any(|r| r.2 == "0" && r.4 == "0"), "{t}");
    assert!(!rows(&t).iter().any(|r| r.2 == "0" && r.4 == "1"), "{t}");
    // sattach from the controller's host hears both nodes.
    let o = c
        .cmd("sattach")
        .args(["-l", &step])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    for t in ["0: task 0 59", "1: task 1 59"] {
        assert!(out.lines().any(|l| l == t), "{t} missing: {out}");
    }
    let _ = srun.wait_with_output();
    c.ok("scancel", &[&job.to_string()]);
}
