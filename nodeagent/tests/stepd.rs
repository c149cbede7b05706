//! End-to-end tests of the per-job supervisor (`droverd --stepd JOBDIR`)
//! without a controller: real scripts, real processes.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use drover_nodeagent::jobdir::{prepare_job_dir, spawn_stepd, Prepared};
use drover_nodeagent::status::JobStatus;
use drover_nodeagent::stepd::protocol::Request;
use drover_nodeagent::stepd_client;
use drover_proto::{JobInfo, JobSpec, LaunchRequest, NodeAlloc};
use tokio::io::{AsyncBufReadExt, BufReader};

const T: Duration = Duration::from_secs(30);

fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_droverd"))
}

fn is_root() -> bool {
    drover_proto::sys::is_root()
}

/// A scratch area: spool dir and work dir, reachable by any user.
struct Area {
    _tmp: tempfile::TempDir,
    spool: PathBuf,
    work: PathBuf,
}

fn area() -> Area {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let spool = tmp.path().join("spool");
    let work = tmp.path().join("work");
    std::fs::create_dir(&spool).unwrap();
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    Area {
        _tmp: tmp,
        spool,
        work,
    }
}

fn request(job_id: u32, script: &str, work: &Path) -> LaunchRequest {
    let (uid, gid) = (drover_proto::sys::getuid(), drover_proto::sys::getgid());
    LaunchRequest {
        job_id,
        spec: Some(JobSpec {
            name: "e2e".into(),
            work_dir: work.to_string_lossy().into_owned(),
            script: script.as_bytes().to_vec(),
            argv: vec!["first arg".into(), "second".into()],
            environment: vec![
                "PATH=/usr/local/bin:/usr/bin:/bin".into(),
                "FROM_SUBMITTER=yes".into(),
            ],
            ..Default::default()
        }),
        info: Some(JobInfo {
            job_id,
            partition: "debug".into(),
            time_limit: 10,
            start_time: drover_proto::auth::now_secs(),
            alloc: vec![NodeAlloc {
                node: "node1".into(),
                cpus: 2,
                ..Default::default()
            }],
            ..Default::default()
        }),
        uid,
        gid,
        user_name: "tester".into(),
        node: "node1".into(),
        cluster_name: "testcl".into(),
        ..Default::default()
    }
}

/// A running supervisor and its notify pipe.
struct Running {
    dir: PathBuf,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _child: tokio::process::Child,
}

impl Running {
    async fn next_line(&mut self) -> String {
        tokio::time::timeout(T, self.lines.next_line())
            .await
            .expect("supervisor line in time")
            .expect("read notify pipe")
            .unwrap_or_default()
    }

    /// Wait for the `done` line.
    async fn done(&mut self) -> JobStatus {
        loop {
            let l = self.next_line().await;
            assert!(!l.is_empty(), "notify pipe closed before done");
            if let Some(st) = JobStatus::parse_done_line(&l) {
                return st;
            }
        }
    }
}

async fn start(area: &Area, req: &LaunchRequest) -> Running {
    let dir = match prepare_job_dir(&area.spool, req, None, &vec![]).unwrap() {
        Prepared::New(d) => d,
        Prepared::Exists(d) => panic!("exists: {}", d.display()),
    };
    let started = spawn_stepd(&exe(), &dir, Path::new("/etc/drover/test.conf"), true).unwrap();
    Running {
        dir,
        lines: BufReader::new(started.notify).lines(),
        _child: started.child,
    }
}

async fn start_ok(area: &Area, req: &LaunchRequest) -> (Running, i32) {
    let mut r = start(area, req).await;
    let first = r.next_line().await;
    let pid = first
        .strip_prefix("started ")
        .unwrap_or_else(|| panic!("expected started, got {first:?}"))
        .parse()
        .unwrap();
    (r, pid)
}

fn alive(pid: i32) -> bool {
    // A zombie still answers kill(0); look at the state instead.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(t) => drover_nodeagent::proctree::parse_stat(&t).is_some_and(|p| p.state != 'Z'),
        Err(_) => false,
    }
}

async fn wait_for_file(p: &Path) -> String {
    for _ in 0..300 {
        if let Ok(s) = std::fs::read_to_string(p) {
            if s.ends_with('\n') {
                return s;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} never appeared", p.display());
}

#[tokio::test]
async fn runs_script_with_environment_output_and_exit_code() {
    let a = area();
    let script = "#!/bin/bash\n\
        echo \"ID=$SLURM_JOB_ID NAME=$SLURM_JOB_NAME NODE=$SLURMD_NODENAME\"\n\
        echo \"NODELIST=$SLURM_JOB_NODELIST CPUS=$SLURM_CPUS_ON_NODE TPN=$SLURM_TASKS_PER_NODE\"\n\
        echo \"PID_OK=$([ \"$SLURM_TASK_PID\" = \"$$\" ] && echo yes)\"\n\
        echo \"CONF=$SLURM_CONF ENVIRONMENT=$ENVIRONMENT SUB=$FROM_SUBMITTER\"\n\
        echo \"ARGS=[$1][$2] ARGV0=$0\"\n\
        echo \"PWD=$(pwd)\"\n\
        echo to-stderr >&2\n\
        read x || echo STDIN_EMPTY\n\
        exit 3\n";
    let req = request(101, script, &a.work);
    let (mut r, pid) = start_ok(&a, &req).await;
    assert!(pid > 1);

    // A second client can wait on the socket too.
    let mut conn = stepd_client::wait_connection(&r.dir).await.ok();
    let st = r.done().await;
    assert_eq!(st.exit_code, 3);
    assert_eq!(st.signal, 0);
    assert!(!st.launch_failed && !st.timeout);
    assert!(st.end_time > 0);
    if let Some(c) = conn.as_mut() {
        let mut line = String::new();
        let _ = tokio::time::timeout(T, c.read_line(&mut line)).await;
        if !line.is_empty() {
            assert_eq!(JobStatus::parse_done_line(&line).unwrap(), st);
        }
    }
    assert_eq!(JobStatus::read(&r.dir).unwrap(), Some(st));

    let out = std::fs::read_to_string(a.work.join("slurm-101.out")).unwrap();
    assert!(out.contains("ID=101 NAME=e2e NODE=node1\n"), "{out}");
    assert!(out.contains("NODELIST=node1 CPUS=2 TPN=2\n"), "{out}");
    assert!(out.contains("PID_OK=yes\n"), "{out}");
    assert!(
        out.contains("CONF=/etc/drover/test.conf ENVIRONMENT=BATCH SUB=yes\n"),
        "{out}"
    );
    let script_path = r.dir.join("script");
    assert!(
        out.contains(&format!(
            "ARGS=[first arg][second] ARGV0={}\n",
            script_path.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("PWD={}\n", a.work.display())),
        "{out}"
    );
    assert!(
        out.contains("to-stderr\n"),
        "stderr shares the output file: {out}"
    );
    assert!(out.contains("STDIN_EMPTY\n"), "{out}");
}

#[tokio::test]
async fn separate_error_file_append_and_array_pattern() {
    let a = area();
    std::fs::write(a.work.join("slurm-40_3.out"), "previous\n").unwrap();
    let mut req = request(102, "#!/bin/sh\necho out\necho err >&2\n", &a.work);
    {
        let spec = req.spec.as_mut().unwrap();
        spec.std_err = "err-%j.txt".into();
        spec.open_append = true;
        let info = req.info.as_mut().unwrap();
        info.array_job_id = 40;
        info.array_task_id = 3;
        spec.array = "1-5".into();
    }
    let (mut r, _) = start_ok(&a, &req).await;
    assert_eq!(r.done().await.exit_code, 0);
    assert_eq!(
        std::fs::read_to_string(a.work.join("slurm-40_3.out")).unwrap(),
        "previous\nout\n"
    );
    assert_eq!(
        std::fs::read_to_string(a.work.join("err-102.txt")).unwrap(),
        "err\n"
    );
}

#[tokio::test]
async fn signal_reaches_every_process_or_only_the_batch_shell() {
    let a = area();
    // All processes: the trap fires and the script exits 7.
    let script = "#!/bin/bash\ntrap 'echo got-usr1; exit 7' USR1\necho ready > ready\nwhile :; do sleep 0.05; done\n";
    let req = request(103, script, &a.work);
    let (mut r, _) = start_ok(&a, &req).await;
    wait_for_file(&a.work.join("ready")).await;
    let reply = stepd_client::request(
        &r.dir,
        &Request::Signal {
            signal: libc::SIGUSR1,
            batch_only: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(reply, "ok");
    let st = r.done().await;
    assert_eq!((st.exit_code, st.signal), (7, 0));
    let out = std::fs::read_to_string(a.work.join("slurm-103.out")).unwrap();
    assert!(out.contains("got-usr1"), "{out}");

    // Batch only, a signal with default action: the shell dies of it.
    let a = area();
    let req = request(
        104,
        "#!/bin/bash\necho ready > ready\nsleep 1000\n",
        &a.work,
    );
    let (mut r, _) = start_ok(&a, &req).await;
    wait_for_file(&a.work.join("ready")).await;
    let status = stepd_client::request(&r.dir, &Request::Status)
        .await
        .unwrap();
    assert!(status.starts_with("running "), "{status}");
    let reply = stepd_client::request(
        &r.dir,
        &Request::Signal {
            signal: libc::SIGUSR2,
            batch_only: true,
        },
    )
    .await
    .unwrap();
    assert_eq!(reply, "ok");
    let st = r.done().await;
    assert_eq!((st.exit_code, st.signal), (0, libc::SIGUSR2));

    // Garbage on the socket gets an error line, not a crash.
    let a = area();
    let req = request(105, "#!/bin/sh\necho ready > ready\nsleep 1000\n", &a.work);
    let (mut r, _) = start_ok(&a, &req).await;
    wait_for_file(&a.work.join("ready")).await;
    {
        use tokio::io::AsyncWriteExt;
        let s = drover_nodeagent::stepd_socket::connect(&r.dir).unwrap();
        s.set_nonblocking(true).unwrap();
        let mut s = tokio::net::UnixStream::from_std(s).unwrap();
        s.write_all(b"reboot now\nsignal 99\n\xff\xfe\n")
            .await
            .unwrap();
        let mut lines = BufReader::new(s).lines();
        for _ in 0..3 {
            let l = tokio::time::timeout(T, lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            assert!(l.starts_with("error "), "{l}");
        }
    }
    let reply = stepd_client::request(
        &r.dir,
        &Request::Terminate {
            kill_wait: 5,
            timeout: false,
        },
    )
    .await
    .unwrap();
    assert_eq!(reply, "ok");
    assert_eq!(r.done().await.signal, libc::SIGTERM);
}

/// The script double-forks a `sleep` into its own session; after the job is
/// cancelled (or simply ends) that sleep must be gone.
#[tokio::test]
async fn no_process_survives_its_job() {
    let daemon = "( setsid sh -c 'echo $$ > daemon.pid; exec sleep 1000' & )\n";
    for (job_id, tail, cancel) in [(106u32, "sleep 1000\n", true), (107u32, "exit 0\n", false)] {
        let a = area();
        let script =
            format!("#!/bin/bash\n{daemon}while [ ! -s daemon.pid ]; do sleep 0.01; done\n{tail}");
        let req = request(job_id, &script, &a.work);
        let (mut r, script_pid) = start_ok(&a, &req).await;
        let dpid: i32 = wait_for_file(&a.work.join("daemon.pid"))
            .await
            .trim()
            .parse()
            .unwrap();
        if cancel {
            assert!(alive(dpid), "daemon {dpid} running");
            let sid = |pid: i32| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|t| drover_nodeagent::proctree::parse_stat(&t))
                    .map(|p| p.session)
            };
            assert_ne!(sid(dpid), sid(script_pid), "daemon is in its own session");
            let reply = stepd_client::request(
                &r.dir,
                &Request::Terminate {
                    kill_wait: 10,
                    timeout: true,
                },
            )
            .await
            .unwrap();
            assert_eq!(reply, "ok");
        }
        let st = r.done().await;
        if cancel {
            assert_eq!(st.signal, libc::SIGTERM);
            assert!(st.timeout);
        } else {
            assert_eq!((st.exit_code, st.signal), (0, 0));
        }
        assert!(
            !alive(dpid),
            "double-forked daemon {dpid} survived job {job_id}"
        );
        assert!(!alive(script_pid));
    }
}

#[tokio::test]
async fn kill_wait_escalates_to_sigkill() {
    let a = area();
    let script = "#!/bin/bash\ntrap '' TERM\necho ready > ready\nsleep 1000\n";
    let req = request(108, script, &a.work);
    let (mut r, _) = start_ok(&a, &req).await;
    wait_for_file(&a.work.join("ready")).await;
    let t0 = std::time::Instant::now();
    stepd_client::request(
        &r.dir,
        &Request::Terminate {
            kill_wait: 1,
            timeout: false,
        },
    )
    .await
    .unwrap();
    let st = r.done().await;
    assert_eq!(st.signal, libc::SIGKILL);
    assert!(!st.timeout);
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(10),
        "{waited:?}"
    );
}

#[tokio::test]
async fn launch_failures_are_reported() {
    // Missing work dir: the default output file lives there, so the launch fails.
    let a = area();
    let missing = a.work.join("nope");
    let req = request(109, "#!/bin/sh\necho hi\n", &missing);
    let mut r = start(&a, &req).await;
    let first = r.next_line().await;
    let expect = format!("chdir({}): No such file or directory", missing.display());
    assert_eq!(first, format!("failed {expect}"));
    let st = r.done().await;
    assert!(st.launch_failed);
    assert_eq!(st.exit_code, 1);
    assert_eq!(st.failure, expect);
    assert_eq!(JobStatus::read(&r.dir).unwrap(), Some(st));

    // Missing work dir but output elsewhere: runs in /tmp, error line in stderr.
    let a = area();
    let mut req = request(110, "#!/bin/sh\npwd\n", &a.work.join("gone"));
    req.spec.as_mut().unwrap().std_out = a.work.join("o.txt").to_string_lossy().into_owned();
    let (mut r, _) = start_ok(&a, &req).await;
    assert_eq!(r.done().await.exit_code, 0);
    let out = std::fs::read_to_string(a.work.join("o.txt")).unwrap();
    assert!(out.contains("couldn't chdir to"), "{out}");
    assert!(out.ends_with("/tmp\n"), "{out}");

    // Output directory that does not exist (it is never created).
    let a = area();
    let mut req = request(111, "#!/bin/sh\necho hi\n", &a.work);
    req.spec.as_mut().unwrap().std_out = "missing-dir/out-%j".into();
    let mut r = start(&a, &req).await;
    let first = r.next_line().await;
    assert_eq!(
        first,
        format!(
            "failed Could not open stdout file {}/missing-dir/out-111: No such file or directory",
            a.work.display()
        )
    );
    assert!(r.done().await.launch_failed);
    assert!(!a.work.join("missing-dir").exists());

    // /dev/null output works; a script without "#!" runs with /bin/sh.
    let a = area();
    let mut req = request(112, "echo plain > plain.txt\n", &a.work);
    req.spec.as_mut().unwrap().std_out = "/dev/null".into();
    let (mut r, _) = start_ok(&a, &req).await;
    assert_eq!(r.done().await.exit_code, 0);
    assert_eq!(
        std::fs::read_to_string(a.work.join("plain.txt")).unwrap(),
        "plain\n"
    );
}

#[tokio::test]
async fn runs_as_the_submitting_user() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let a = area();
    let script = "#!/bin/sh\necho \"uid=$(id -u) gid=$(id -g) user=$SLURM_JOB_USER\"\n";
    let mut req = request(113, script, &a.work);
    req.uid = 65534;
    req.gid = 65534;
    req.groups = vec![65534];
    req.user_name = "nobody".into();
    let (mut r, _) = start_ok(&a, &req).await;
    let st = r.done().await;
    assert_eq!(st.exit_code, 0, "{st:?}");
    let out_path = a.work.join("slurm-113.out");
    let meta = std::fs::metadata(&out_path).unwrap();
    assert_eq!(meta.uid(), 65534, "output file owned by the user");
    let out = std::fs::read_to_string(&out_path).unwrap();
    assert_eq!(out, "uid=65534 gid=65534 user=nobody\n");
    assert_eq!(
        std::fs::metadata(r.dir.join("script")).unwrap().uid(),
        65534
    );

    // The user cannot write where it has no permission: a launch failure.
    let a = area();
    let locked = a.work.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut req = request(114, "#!/bin/sh\necho hi\n", &locked);
    req.uid = 65534;
    req.gid = 65534;
    let mut r = start(&a, &req).await;
    let first = r.next_line().await;
    assert_eq!(
        first,
        format!(
            "failed Could not open stdout file {}/slurm-114.out: Permission denied",
            locked.display()
        )
    );
    assert!(r.done().await.launch_failed);
}

#[tokio::test]
async fn unreadable_launch_record_is_a_launch_failure() {
    let a = area();
    let dir = a.spool.join("job115");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("launch.pb"), b"\xff\xff\xff garbage").unwrap();
    let started = spawn_stepd(&exe(), &dir, Path::new("/x.conf"), false).unwrap();
    let mut lines = BufReader::new(started.notify).lines();
    let first = tokio::time::timeout(T, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(first.starts_with("failed bad launch record"), "{first}");
    let st = JobStatus::read(&dir).unwrap().unwrap();
    assert!(st.launch_failed);
}
