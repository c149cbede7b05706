//! A kill, once begun, is finished: the job's supervisor carries out
//! TERM, KillWait, KILL on its own whether or not the node agent is still
//! there, and an agent stopped before it passed the kill on finishes it
//! when it comes back.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

/// A job whose script ignores SIGTERM (so only the KILL after KillWait
/// ends it) and runs a `sleep` that does not (it started before the trap):
/// the sleep's death shows that the supervisor has begun the kill. Both
/// pids are written to files in the cluster directory.
fn start_stubborn_job(c: &Cluster) -> (u32, i32, i32) {
    let dir = c.path().display().to_string();
    let id = c.sbatch(
        &["-o", "/dev/null"],
        &format!(
            "#!/bin/sh\nsleep 300 &\necho $! > {dir}/sleep.pid\ntrap '' TERM\necho $$ > {dir}/script.pid\nwhile :; do sleep 0.2; done\n"
        ),
    );
    let pid = |f: &str| {
        c.wait_file(&c.path().join(f), |t| t.trim().parse::<i32>().is_ok())
            .trim()
            .parse::<i32>()
            .expect("a pid")
    };
    (id, pid("script.pid"), pid("sleep.pid"))
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for this purpose: it only waits to be reaped.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Wait (on the condition) until none of `pids` is alive.
fn wait_all_dead(pids: &[i32], within: Duration, what: &str) {
    let deadline = Instant::now() + within;
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "{what}: still alive after {within:?}: {:?}",
            pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_kill_begun_is_finished_with_the_agent_stopped() {
    let mut c = Cluster::start(Spec::default());
    let (id, script, sleep) = start_stubborn_job(&c);
    c.ok("scancel", &[&id.to_string()]);
    // The supervisor has begun the kill (SIGTERM ended the sleep) ...
    wait_all_dead(&[sleep], Duration::from_secs(10), "the sleep after SIGTERM");
    // ... and the agent goes away before KillWait (2 s) is over.
    c.stop_agent();
    assert!(alive(script), "the script ignores SIGTERM");
    // The KILL after KillWait comes without the agent.
    wait_all_dead(&[script], Duration::from_secs(10), "the script");
}

#[test]
fn a_kill_the_agent_never_passed_on_is_finished_after_its_restart() {
    let mut c = Cluster::start(Spec::default());
    let (id, script, sleep) = start_stubborn_job(&c);
    let ids = id.to_string();
    // The agent cannot hear the kill: it is frozen (SIGSTOP) when the
    // controller sends it, then killed.
    c.pause_agent(true);
    c.ok("scancel", &[&ids]);
    assert_eq!(c.job_field(&ids, "JobState").as_deref(), Some("COMPLETING"));
    c.kill_agent();
    assert!(alive(script) && alive(sleep), "nobody told the supervisor");
    // The agent re-attaches the job and the controller kills it again.
    c.start_agent().expect("agent restarts");
    wait_all_dead(
        &[script, sleep],
        Duration::from_secs(15),
        "job processes after the agent's restart",
    );
    c.wait_state(&ids, &["CANCELLED"], Duration::from_secs(20));
}
