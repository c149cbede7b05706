//! Overload protection in the controller's gRPC front: Slurm's per-user
//! rate limit (`SlurmctldParameters=rl_enable`). A user flooding the
//! controller with `squeue` is told to back off (Slurm's log line; the
//! commands retry and still succeed, later), while another user, root and
//! the agents' heartbeats go on: nodes keep responding and jobs start.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

/// The flooding user.
const NOBODY: u32 = 65534;
/// Another user, querying at the same time.
const OTHER: u32 = 1;

fn limited(params: &str) -> Cluster {
    Cluster::start(Spec {
        nodes: 2,
        extra: vec![format!("SlurmctldParameters={params}")],
        ..Spec::default()
    })
}

fn wait_log(c: &Cluster, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.log_text("droverctld").contains(what) {
        assert!(
            Instant::now() < deadline,
            "no {what:?} in the controller's log:\n{}",
            c.log_text("droverctld")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn refusals(c: &Cluster, uid: u32) -> usize {
    c.log_text("droverctld")
        .matches(&format!(
            "RPC rate limit exceeded by uid {uid} from the local socket, telling to back off"
        ))
        .count()
}

#[test]
fn a_flooding_user_backs_off_while_others_and_agents_go_on() {
    let c = limited("rl_enable,rl_bucket_size=4,rl_refill_rate=2,rl_refill_period=1");
    c.wait_nodes_idle(Duration::from_secs(30)).unwrap();
    wait_log(
        &c,
        "RPC rate limiting enabled: rl_table_size=8192,rl_bucket_size=4",
    );
    // Twelve squeue at once from one user: four tokens, two more a second.
    let flood: Vec<Child> = (0..12)
        .map(|_| {
            let mut cmd = c.cmd("squeue");
            std::os::unix::process::CommandExt::uid(&mut cmd, NOBODY);
            std::os::unix::process::CommandExt::gid(&mut cmd, NOBODY);
            cmd.stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn squeue")
        })
        .collect();
    wait_log(&c, &format!("RPC rate limit exceeded by uid {NOBODY} from"));

    // Meanwhile: another user's squeue is answered at once (own bucket).
    let o = c.run_as(OTHER, "squeue", &["-h"]);
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Root is exempt: far more calls than any bucket holds.
    for _ in 0..12 {
        c.ok("squeue", &["-h"]);
    }
    // Agents' heartbeats and job traffic are never limited.
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
    let states = c.ok("sinfo", &["-h", "-o", "%T"]);
    assert!(
        !states.contains('*') && !states.contains("down"),
        "nodes stopped responding during the flood: {states}"
    );

    // Every flooding squeue got its answer in the end (retried, as Slurm's).
    for ch in flood {
        let o = ch.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "a rate-limited squeue failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains("JOBID"));
    }
    assert!(refusals(&c, NOBODY) > 0);
    assert_eq!(refusals(&c, OTHER), 0);
    assert_eq!(refusals(&c, 0), 0);
    assert!(!c.log_text("droverctld").contains("exceeded by uid 0 "));
}

#[test]
fn without_rl_enable_nothing_is_refused() {
    let c = limited("rl_bucket_size=1,rl_refill_rate=0");
    for _ in 0..6 {
        let o = c.run_as(NOBODY, "squeue", &["-h"]);
        assert!(o.status.success());
    }
    let log = c.log_text("droverctld");
    assert!(!log.contains("RPC rate limiting enabled"), "{log}");
    assert_eq!(refusals(&c, NOBODY), 0);
}

#[test]
fn a_refused_call_is_retried_after_a_pause_and_a_bad_value_is_named() {
    // rl_refill_rate=0: the bucket never refills; one call passes and the
    // others are refused each time their command tries again (each refusal
    // logged: rl_log_freq=0).
    let c = limited("rl_enable,rl_bucket_size=1,rl_refill_rate=0,rl_log_freq=0");
    // Two commands, at least two calls, one token: at least one command
    // is refused, and refused again when it tries again.
    let mut held: Vec<Child> = (0..2)
        .map(|_| {
            let mut cmd = c.cmd("sinfo");
            std::os::unix::process::CommandExt::uid(&mut cmd, NOBODY);
            std::os::unix::process::CommandExt::gid(&mut cmd, NOBODY);
            cmd.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while refusals(&c, NOBODY) < 3 {
        assert!(
            Instant::now() < deadline,
            "the refused call was not retried"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let waiting = held
        .iter_mut()
        .map(|h| h.try_wait().unwrap().is_none())
        .filter(|w| *w)
        .count();
    assert!(waiting >= 1, "every refused command ended");
    for mut h in held {
        let _ = h.kill();
        let _ = h.wait();
    }
    // Root is still served.
    c.ok("sinfo", &["-h"]);

    // A value that is not a number: the controller names the option.
    let text = std::fs::read_to_string(&c.conf)
        .unwrap()
        .replace("rl_bucket_size=1", "rl_bucket_size=lots");
    let bad = c.path().join("bad.conf");
    std::fs::write(&bad, text).unwrap();
    let o = std::process::Command::new(drover_tests::bin_dir().join("droverctld"))
        .arg("-f")
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("SlurmctldParameters: rl_bucket_size=lots: must be a whole number above 0"),
        "{err}"
    );
}

/// An HTTP/2 client to the controller at `port` that says hello and then
/// nothing (it holds one of this host's places).
fn idle_client(port: &str) -> std::net::TcpStream {
    let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    std::io::Write::write_all(&mut s, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    s
}

#[test]
fn connections_per_peer_are_bounded() {
    // Commands over TCP (their host's local socket would not count).
    let c = limited("drover_conn_per_peer=4,drover_local_socket=none");
    let port = c.ctld_port.to_string();
    // Idle HTTP/2 clients from this host until the controller refuses one
    // more (the agent holds a connection or two of its own, which it may
    // close and open again at any time: so fill up again before each try).
    let refusals = |c: &Cluster| {
        c.log_text("droverctld")
            .matches("connection from 127.0.0.1 refused")
            .count()
    };
    let mut held = Vec::new();
    let mut fill = |c: &Cluster| {
        let before = refusals(c);
        let deadline = Instant::now() + Duration::from_secs(30);
        while refusals(c) == before {
            assert!(Instant::now() < deadline && held.len() < 40, "no refusal");
            held.push(idle_client(&port));
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    fill(&c);
    assert!(c
        .log_text("droverctld")
        .contains("it holds 4 already (SlurmctldParameters=drover_conn_per_peer)"));
    // A command from the same host is refused meanwhile (the controller
    // warns at most once a minute, so a refusal of the command shows in
    // its own error, not in the log).
    let mut refused = false;
    for _ in 0..5 {
        let o = c.run("squeue", &[]);
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("Unable to contact slurm controller"), "{err}");
            refused = true;
            break;
        }
        // An agent connection closed and squeue took its place: fill up.
        held.push(idle_client(&port));
    }
    assert!(refused, "squeue was never refused");
    // Closed, they give their places back.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.run("squeue", &[]).status.success() {
        assert!(Instant::now() < deadline, "places not given back");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The agent's connection was never closed: jobs still run.
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
}

/// Slowloris: clients that send part of the HTTP/2 preface and then
/// nothing are closed 10 s after they connected, with a warning naming
/// the peer, so they cannot hold the controller's connections; others are
/// served meanwhile.
#[test]
fn slow_clients_are_closed() {
    let c = limited("drover_conn_per_peer=64");
    let port = c.ctld_port.to_string();
    let started = Instant::now();
    let slow: Vec<std::net::TcpStream> = (0..20)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
            std::io::Write::write_all(&mut s, b"PRI * HT").unwrap();
            s
        })
        .collect();
    c.ok("squeue", &[]);
    for mut s in slow {
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 64];
        // Closed by the controller: end of stream (or a reset), not the
        // read timeout.
        match std::io::Read::read(&mut s, &mut buf) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("a slow client was not closed: {other:?}"),
        }
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(25),
        "closed after {took:?}"
    );
    wait_log(&c, "TLS: refused connection from 127.0.0.1");
    assert!(c
        .log_text("droverctld")
        .contains("HTTP/2 preface not complete in 10 s (a slowloris client?); closed"));
    c.ok("squeue", &[]);
}
