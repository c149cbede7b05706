//! Allocations end when their salloc goes: salloc gives its allocation
//! back on SIGHUP/SIGTERM (after ending its command), and the controller
//! ends an allocation whose salloc was not heard of for InactiveLimit
//! seconds (salloc killed with -9), also across a controller restart.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(30);

struct Salloc {
    child: Child,
    err: PathBuf,
    /// The command's pid (it writes it before it execs `sleep`).
    cmd_pid: i32,
    job: String,
}

fn salloc(c: &Cluster, name: &str) -> Salloc {
    let err = c.path().join(format!("{name}.err"));
    let pid_file = c.path().join(format!("{name}.pid"));
    let child = c
        .cmd("salloc")
        .args([
            "-N1",
            "sh",
            "-c",
            &format!("echo $$ > {}; exec sleep 300", pid_file.display()),
        ])
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    // The whole line: stderr is unbuffered, so the id may come in a write
    // of its own after the words.
    let granted = |t: &str| -> Option<String> {
        t.split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'))
            .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
            .map(str::to_string)
    };
    let text = c.wait_file(&err, |t| granted(t).is_some());
    let job = granted(&text).unwrap();
    let cmd_pid = c
        .wait_file(&pid_file, |t| t.trim().parse::<i32>().is_ok())
        .trim()
        .parse()
        .unwrap();
    Salloc {
        child,
        err,
        cmd_pid,
        job,
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

fn signal(pid: u32, sig: i32) {
    let _ = drover_proto::sys::kill(pid as i32, sig);
}

/// Wait for salloc to exit (on the condition, with a limit).
fn wait_exit(s: &mut Salloc, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "salloc did not exit: {}",
            std::fs::read_to_string(&s.err).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ended_states() -> [&'static str; 4] {
    ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"]
}

#[test]
fn salloc_relinquishes_on_sighup_and_sigterm() {
    // The default InactiveLimit (300 s): only salloc itself can end these
    // allocations within the test's time.
    let c = Cluster::start(Spec::default());
    for (name, sig) in [("hup", libc::SIGHUP), ("term", libc::SIGTERM)] {
        let mut s = salloc(&c, name);
        assert!(alive(s.cmd_pid));
        signal(s.child.id(), sig);
        wait_exit(&mut s, WAIT);
        let err = std::fs::read_to_string(&s.err).unwrap();
        assert!(
            err.contains(&format!("salloc: Relinquishing job allocation {}", s.job)),
            "{name}: {err}"
        );
        assert!(!alive(s.cmd_pid), "{name}: the command outlived salloc");
        c.wait_state(&s.job, &ended_states(), Duration::from_secs(10));
    }
}

fn kill_leftover(pid: i32) {
    if alive(pid) {
        let _ = drover_proto::sys::kill(pid, libc::SIGKILL);
    }
}

#[test]
fn an_allocation_whose_salloc_is_gone_ends_after_inactive_limit() {
    let mut c = Cluster::start(Spec {
        extra: vec!["InactiveLimit=3".into()],
        ..Default::default()
    });
    let mut live = salloc(&c, "live");
    let mut dead = salloc(&c, "dead");
    // kill -9: nothing is released; the controller must notice. And it
    // restarts meanwhile: the live salloc must get through that.
    signal(dead.child.id(), libc::SIGKILL);
    let _ = dead.child.wait();
    c.kill_ctld();
    c.start_ctld().expect("controller restarts");
    let state = c.wait_state(&dead.job, &ended_states(), WAIT);
    kill_leftover(dead.cmd_pid);
    assert_eq!(state, "TIMEOUT");
    assert_eq!(
        c.job_field(&dead.job, "Reason").as_deref(),
        Some("InactiveLimit")
    );
    // The live salloc kept its allocation through the restart.
    assert_eq!(
        c.job_field(&live.job, "JobState").as_deref(),
        Some("RUNNING"),
        "{}",
        std::fs::read_to_string(&live.err).unwrap_or_default()
    );
    assert!(live.child.try_wait().unwrap().is_none());
    signal(live.child.id(), libc::SIGHUP);
    wait_exit(&mut live, WAIT);
    c.wait_state(&live.job, &ended_states(), Duration::from_secs(10));
    assert!(Path::new(&live.err).exists());
}
