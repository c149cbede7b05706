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

/// A gRPC channel over the Unix socket at `path`.
fn local_channel(path: &Path) -> tonic::transport::Channel {
    let first = drover_proto::localsock::connect(path).expect("the local socket answers");
    drover_proto::localsock::channel(path, first)
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
