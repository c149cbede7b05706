//! The controller's local socket (`SlurmctldParameters=drover_local_socket`,
//! default `ctld.sock` beside the auth socket): commands on its host talk
//! to it there and the kernel says who they are. With the auth socket out
//! of the way, only the local socket can carry a command, so what the
//! commands can do then is what the local socket lets them do.

use std::path::{Path, PathBuf};

use drover_proto::auth::{request_token, Binding, METADATA_KEY};
use drover_proto::controller_client::ControllerClient;
use drover_proto::PingRequest;
use drover_tests::{users, Cluster, Spec};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Moves the auth socket away while alive, back when dropped.
struct AuthAway {
    path: PathBuf,
    away: PathBuf,
}

impl AuthAway {
    fn new(c: &Cluster) -> AuthAway {
        let path = c.path().join("auth.sock");
        let away = c.path().join("auth.sock.away");
        std::fs::rename(&path, &away).unwrap();
        AuthAway { path, away }
    }
}

impl Drop for AuthAway {
    fn drop(&mut self) {
        let _ = std::fs::rename(&self.away, &self.path);
    }
}

#[test]
fn commands_on_the_local_socket_act_as_their_caller_and_no_one_else() {
    let c = Cluster::start(Spec::default());
    let sock = c.path().join("ctld.sock");
    assert!(sock.exists(), "{}", c.log_text("droverctld"));
    assert!(c
        .log_text("droverctld")
        .contains(&format!("local socket {}", sock.display())));
    let home = users::nobody_home(&c);
    let root_job = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let _away = AuthAway::new(&c);
    // Root over the local socket is root (the admin).
    let o = c.run("scontrol", &["show", "node", "node1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Everyone else is who the kernel says: nobody, with nobody's powers.
    users::nobody_touches_only_their_jobs(&c, &home, root_job);
}

#[test]
fn commands_fall_back_to_tcp_without_the_local_socket() {
    let c = Cluster::start(Spec::default());
    let sock = c.path().join("ctld.sock");
    std::fs::remove_file(&sock).unwrap();
    // Over TCP, with a credential from the auth socket.
    let o = c.run_as(
        65534,
        "sbatch",
        &["--parsable", "-o", "/dev/null", "--wrap", "true"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let id = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(c.job_field(&id, "UserId").as_deref(), Some("nobody(65534)"));
    // Neither socket: the command says what it could not reach.
    let away = AuthAway::new(&c);
    let o = c.run("squeue", &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot reach the authentication socket"),
        "{}",
        stderr(&o)
    );
    drop(away);
    // A file that is not a socket is not a controller either.
    std::fs::write(&sock, "not a socket").unwrap();
    let o = c.run("squeue", &["-h"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_local_socket_turned_off_is_not_served() {
    let c = Cluster::start(Spec {
        extra: vec!["SlurmctldParameters=drover_local_socket=none".into()],
        ..Spec::default()
    });
    assert!(!c.path().join("ctld.sock").exists());
    let _away = AuthAway::new(&c);
    let o = c.run("squeue", &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("cannot reach the authentication socket"),
        "{}",
        stderr(&o)
    );
}

/// Local calls on the Unix socket at `path` (as the commands make them).
fn local_channel(path: &Path) -> drover_proto::localcall::LocalCalls {
    let first = drover_proto::localsock::connect(path).expect("the local socket answers");
    drover_proto::localcall::LocalCalls::new(path.to_path_buf(), first)
}

/// Read what the controller sends on `s` until it closes the connection
/// (a read timeout fails the test instead of hanging it).
fn read_to_close(mut s: std::os::unix::net::UnixStream) -> Vec<u8> {
    use std::io::Read;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        // Closed with bytes of ours unread: the same to the caller.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => got,
        r => {
            r.expect("closed, not timed out");
            got
        }
    }
}

#[test]
fn broken_local_calls_are_closed_and_the_socket_serves_on() {
    use std::io::Write;
    let c = Cluster::start(Spec::default());
    let sock = c.path().join("ctld.sock");
    let frame = |kind: u8, payload: &[u8]| {
        let mut f = vec![kind];
        f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        f.extend_from_slice(payload);
        f
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "an unknown frame kind",
            [&b"DLC1"[..], &frame(9, b"")].concat(),
        ),
        (
            "a head claiming 4 GiB",
            [&b"DLC1"[..], &[1, 255, 255, 255, 255][..]].concat(),
        ),
        (
            "a head that does not parse",
            [&b"DLC1"[..], &frame(1, b"\xff\xff")].concat(),
        ),
        (
            "data before the head",
            [&b"DLC1"[..], &frame(2, b"x")].concat(),
        ),
        (
            "neither a local call nor HTTP/2",
            b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        let mut s = drover_proto::localsock::connect(&sock).unwrap();
        s.write_all(&bytes).unwrap();
        let got = read_to_close(s);
        // A broken local call is closed unanswered; the HTTP/2 server
        // may say why before it closes.
        assert!(
            got.is_empty() || what.contains("HTTP/2"),
            "{what}: answered {got:?}"
        );
    }
    // A call whose caller goes before sending its body is dropped.
    let mut s = drover_proto::localsock::connect(&sock).unwrap();
    let mut head = Vec::new();
    let path = b"/drover.Controller/Ping";
    head.extend_from_slice(&(path.len() as u16).to_le_bytes());
    head.extend_from_slice(path);
    head.extend_from_slice(&0u16.to_le_bytes());
    s.write_all(&[&b"DLC1"[..], &frame(1, &head)].concat())
        .unwrap();
    drop(s);
    // And the socket still serves, local calls and commands alike.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut cl = ControllerClient::new(local_channel(&sock));
        cl.ping(PingRequest {}).await.expect("a local call passes");
        // Headers the controller would not take are refused before sending.
        let mut req = tonic::Request::new(PingRequest {});
        req.metadata_mut()
            .insert("x-big", "a".repeat(40_000).parse().unwrap());
        let e = cl.ping(req).await.expect_err("too large");
        assert!(e.message().contains("headers take"), "{e:?}");
        cl.ping(PingRequest {}).await.expect("a local call passes");
    });
    let o = c.run("squeue", &[]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn the_local_socket_still_speaks_http2() {
    let c = Cluster::start(Spec::default());
    let sock = c.path().join("ctld.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // A plain gRPC client over the Unix socket (as grpcurl -unix is).
        let chan = tonic::transport::Endpoint::from_static("http://localhost")
            .connect_with_connector(tower::service_fn(move |_: http::Uri| {
                let sock = sock.clone();
                async move {
                    let s = tokio::net::UnixStream::connect(sock).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(s))
                }
            }))
            .await
            .expect("an HTTP/2 connection");
        let mut cl = ControllerClient::new(chan);
        cl.ping(PingRequest {})
            .await
            .expect("a call over HTTP/2 passes");
    });
}

#[test]
fn a_credential_on_the_local_socket_is_checked_as_on_tcp() {
    let c = Cluster::start(Spec::default());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let sock = c.path().join("ctld.sock");
        // No credential: the kernel's identity serves.
        let mut cl = ControllerClient::new(local_channel(&sock));
        cl.ping(PingRequest {}).await.expect("a local call passes");
        // A credential used once already is refused here as over TCP, and
        // one that is not the cluster's too: a credential is never
        // overruled by the connection's identity.
        let bind = Binding::new("/drover.Controller/Ping", &[0, 0, 0, 0, 0]);
        let tok = request_token(&c.path().join("auth.sock"), &bind)
            .await
            .unwrap();
        for (tok, words) in [
            (tok.clone(), None),
            (tok, Some("replayed")),
            ("v2:u:0:0::1:2:00:h:/a:00:00".to_string(), Some("")),
        ] {
            let mut req = tonic::Request::new(PingRequest {});
            req.metadata_mut()
                .insert(METADATA_KEY, tok.parse().expect("ASCII"));
            let r = cl.ping(req).await;
            match words {
                None => {
                    r.expect("a fresh credential passes");
                }
                Some(w) => {
                    let e = r.expect_err("refused");
                    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
                    assert!(e.message().contains(w), "{e:?}");
                }
            }
        }
    });
}

#[test]
fn sbatch_prints_its_phases_with_drover_timing() {
    let c = Cluster::start(Spec::default());
    let o = c
        .cmd("sbatch")
        .env("DROVER_TIMING", "1")
        .args(["--parsable", "-H", "-o", "/dev/null", "--wrap", "true"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    let phases: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("timing: "))
        .map(|l| l.split(':').next().unwrap_or_default())
        .collect();
    assert_eq!(
        phases,
        [
            "options and script",
            "configuration and runtime",
            "answered"
        ],
        "{err}"
    );
    // Without the variable, nothing but the job id.
    let o = c.run(
        "sbatch",
        &["--parsable", "-H", "-o", "/dev/null", "--wrap", "true"],
    );
    assert!(o.status.success() && o.stderr.is_empty(), "{}", stderr(&o));
}

/// Connections the controller holds on its local socket at `path` (its
/// ends of them: connected sockets bound to the path, in /proc/net/unix).
fn local_connections(path: &Path) -> usize {
    let path = path.to_string_lossy();
    std::fs::read_to_string("/proc/net/unix")
        .unwrap()
        .lines()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() == 8 && f[5] == "03" && f[7] == path
        })
        .count()
}

#[test]
fn local_calls_one_after_another_share_a_connection_and_a_restart_is_survived() {
    let mut c = Cluster::start(Spec::default());
    let sock = c.path().join("ctld.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cl = ControllerClient::new(local_channel(&sock));
    rt.block_on(async {
        for _ in 0..20 {
            cl.ping(PingRequest {}).await.expect("a local call passes");
        }
    });
    // (Connections of commands the harness ran at start may take a moment
    // to be closed on the controller's side.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while local_connections(&sock) != 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(local_connections(&sock), 1, "twenty calls, one connection");
    // Calls at once each have one, at most 256 (more wait for one), and
    // are kept for the next.
    rt.block_on(async {
        let calls: Vec<_> = (0..300)
            .map(|_| {
                let mut cl = cl.clone();
                tokio::spawn(async move { cl.ping(PingRequest {}).await.map(|_| ()) })
            })
            .collect();
        for t in calls {
            t.await.unwrap().expect("a local call passes");
        }
    });
    let at_once = local_connections(&sock);
    assert!((1..=256).contains(&at_once), "{at_once}");
    // The controller restarted: its side of the kept connections closed;
    // the next call takes a new one instead of failing.
    c.kill_ctld();
    c.start_ctld().unwrap();
    rt.block_on(async {
        cl.ping(PingRequest {})
            .await
            .expect("a call after the restart passes");
    });
}
