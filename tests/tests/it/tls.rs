//! TLS between hosts (network namespaces, see drover_tests::hosts): on by
//! default when daemons listen on the hosts' own addresses, with the
//! certificates the harness makes through `drover ca`. The wire is
//! encrypted (a relay sees no job script), refusals (another CA, a name
//! that does not match, an expired certificate, plaintext) are clear on
//! both sides, and `TLSType=tls/none` works in clear with a warning.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_tests::{bin_dir, unique, Cluster, Spec};

fn hosts(nodes: u32, extra: &[&str]) -> Option<Cluster> {
    Cluster::start_hosts(Spec {
        nodes,
        cpus: 2,
        slurmd_timeout: 4,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

/// A relay on host `host` in front of `upstream`: returns its port and
/// everything clients sent through it.
fn relay(c: &Cluster, host: &str, upstream: String) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = std::sync::mpsc::channel();
    let keep = seen.clone();
    let addr = c.net.as_ref().unwrap().host(host).addr.clone();
    c.net.as_ref().unwrap().spawn_in(host, move || {
        let l = TcpListener::bind((addr.as_str(), 0)).expect("relay bind");
        tx.send(l.local_addr().unwrap().port()).unwrap();
        for client in l.incoming() {
            let Ok(mut client) = client else { return };
            let Ok(mut server) = TcpStream::connect(&upstream) else {
                return;
            };
            let mut client2 = client.try_clone().unwrap();
            let mut server2 = server.try_clone().unwrap();
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = client.read(&mut buf) {
                    if n == 0 || server.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    keep.lock().unwrap().extend_from_slice(&buf[..n]);
                }
                let _ = server.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut server2, &mut client2);
                let _ = client2.shutdown(std::net::Shutdown::Write);
            });
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("relay port");
    (port, seen)
}

/// A copy of the cluster's config with `line` replacing the line starting
/// with its key (or added).
fn conf_with(c: &Cluster, name: &str, line: &str) -> PathBuf {
    let text = std::fs::read_to_string(&c.conf).unwrap();
    let key = line.split('=').next().unwrap();
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| !l.starts_with(&format!("{key}=")))
        .map(str::to_string)
        .collect();
    out.insert(1, line.to_string());
    // Over TCP: the client under test dials the address (the controller's
    // local socket on its host would bypass TCP and TLS).
    match out
        .iter_mut()
        .find(|l| l.starts_with("SlurmctldParameters="))
    {
        Some(l) => l.push_str(",drover_local_socket=none"),
        None => out.insert(1, "SlurmctldParameters=drover_local_socket=none".into()),
    }
    let p = c.path().join(name);
    std::fs::write(&p, out.join("\n") + "\n").unwrap();
    p
}

/// sbatch on the controller's host with another config.
fn sbatch_with(c: &Cluster, conf: &Path, script: &Path) -> Output {
    c.cmd("sbatch")
        .env("DROVER_CONF", conf)
        .args(["-o", "/dev/null", script.to_str().unwrap()])
        .output()
        .unwrap()
}

/// Wait until `name`'s log has a line containing every one of `words`.
fn wait_log(c: &Cluster, name: &str, words: &[&str]) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = c.log_text(name);
        if let Some(l) = log.lines().find(|l| words.iter().all(|w| l.contains(w))) {
            return l.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "no line with {words:?} in {name}.log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn marker_script(c: &Cluster) -> (String, PathBuf) {
    let marker = format!("secret-marker-{}", unique());
    let script = c.script(
        &format!("{marker}.sh"),
        &format!("#!/bin/sh\nexport TOKEN={marker}\ntrue\n"),
    );
    (marker, script)
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The job script crosses the network encrypted by default: a relay
/// between sbatch and the controller sees a TLS handshake and never the
/// script's marker; the job runs.
#[test]
fn job_scripts_cross_the_network_encrypted_by_default() {
    let Some(c) = hosts(1, &[]) else { return };
    wait_log(&c, "droverctld", &["TLS 1.3 on", "ctl.crt"]);
    let ctl = c.net.as_ref().unwrap().host("ctl").addr.clone();
    let (port, seen) = relay(&c, "ctl", format!("{ctl}:{}", c.ctld_port));
    let conf = conf_with(&c, "relay.conf", &format!("SlurmctldPort={port}"));
    let (marker, script) = marker_script(&c);
    let out = sbatch_with(&c, &conf, &script);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = seen.lock().unwrap().clone();
    assert!(bytes.len() > 100, "the relay saw {} bytes", bytes.len());
    assert_eq!(bytes[0], 0x16, "not a TLS handshake");
    assert!(!contains(&bytes, &marker), "the script crossed in clear");
    let id: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    c.expect_end(id, "COMPLETED");
}

/// `TLSType=tls/none`: everything works in clear, each daemon warns at
/// startup, and the relay does see the script.
#[test]
fn tls_off_works_in_clear_and_warns() {
    let Some(c) = hosts(1, &["TLSType=tls/none"]) else {
        return;
    };
    wait_log(&c, "droverctld", &["WARN", "TLS is off", "in clear"]);
    wait_log(&c, "droverd-node1", &["WARN", "TLS is off", "in clear"]);
    let ctl = c.net.as_ref().unwrap().host("ctl").addr.clone();
    let (port, seen) = relay(&c, "ctl", format!("{ctl}:{}", c.ctld_port));
    let conf = conf_with(&c, "relay.conf", &format!("SlurmctldPort={port}"));
    let (marker, script) = marker_script(&c);
    let out = sbatch_with(&c, &conf, &script);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(contains(&seen.lock().unwrap(), &marker));
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
}

/// A client that dials the controller by a name its certificate does not
/// carry is refused, saying so; one that trusts another CA is refused,
/// saying so; a plaintext client is refused and the controller logs who.
#[test]
fn clients_refuse_wrong_names_and_other_cas_and_servers_refuse_plaintext() {
    let Some(c) = hosts(1, &[]) else { return };
    let ctl = c.net.as_ref().unwrap().host("ctl").addr.clone();
    let (_, script) = marker_script(&c);

    let wrong = conf_with(&c, "wrong.conf", &format!("SlurmctldHost=ctl2({ctl})"));
    let out = sbatch_with(&c, &wrong, &script);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("certificate is not for host 'ctl2'") && err.contains(&ctl),
        "{err}"
    );

    let other = c.path().join("other-ca");
    drover(&c, &["ca", "init", "--dir", other.to_str().unwrap()]);
    let foreign = conf_with(
        &c,
        "foreign.conf",
        &format!("TLSParameters=ca_cert_file={}/ca.crt", other.display()),
    );
    let out = sbatch_with(&c, &foreign, &script);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("not signed by a CA this host trusts"), "{err}");
    // The controller saw the client give up, and logged it with its address.
    wait_log(
        &c,
        "droverctld",
        &["TLS: refused connection from", &ctl, "gave up"],
    );

    let plain = conf_with(&c, "plain.conf", "TLSType=tls/none");
    let out = sbatch_with(&c, &plain, &script);
    assert!(!out.status.success());
    wait_log(
        &c,
        "droverctld",
        &["TLS: refused connection from", &ctl, "plaintext client"],
    );
    // The controller still serves everyone else.
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
}

/// `drover ARGS` (the admin command) with the cluster's config.
fn drover(c: &Cluster, args: &[&str]) {
    let o = std::process::Command::new(bin_dir().join("drover"))
        .args(args)
        .env("DROVER_CONF", &c.conf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// An agent whose certificate comes from another CA, or has expired, is
/// refused by the controller, which names the peer and the reason; the
/// node stays unregistered until it has a good one.
#[test]
fn agents_with_foreign_or_expired_certificates_are_refused() {
    let Some(mut c) = hosts(2, &[]) else { return };
    c.wait_nodes_idle(Duration::from_secs(30)).unwrap();
    let node2 = c.net.as_ref().unwrap().host("node2").addr.clone();
    let tls = c.path().join("tls");
    // Another CA's certificate for node2.
    let other = c.path().join("other-ca");
    let other_s = other.to_str().unwrap().to_string();
    drover(&c, &["ca", "init", "--dir", &other_s]);
    drover(&c, &["ca", "issue", "node2", "--dir", &other_s]);
    c.signal_host_agent("node2", libc::SIGKILL);
    for ext in ["crt", "key"] {
        std::fs::copy(
            other.join(format!("node2.{ext}")),
            tls.join(format!("node2.{ext}")),
        )
        .unwrap();
    }
    c.start_host_agent("node2").unwrap();
    let line = wait_log(&c, "droverctld", &["TLS: refused connection from", &node2]);
    assert!(
        line.contains("client certificate was refused: not signed by this cluster's CA"),
        "{line}"
    );
    assert!(line.contains("UnknownIssuer"), "{line}");

    // An expired one from the right CA.
    c.signal_host_agent("node2", libc::SIGKILL);
    drover(&c, &["ca", "issue", "node2", "--days", "0"]);
    c.start_host_agent("node2").unwrap();
    wait_log(
        &c,
        "droverctld",
        &["TLS: refused connection from", &node2, "Expired"],
    );

    // A good one: node2 comes back.
    c.signal_host_agent("node2", libc::SIGKILL);
    drover(&c, &["ca", "issue", "node2"]);
    c.start_host_agent("node2").unwrap();
    let id = c.sbatch(&["-w", "node2", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
}

/// `drover ca rotate`, `issue`, `retire`: during the switch certificates
/// from the old and the new CA are both accepted; after `retire` (and a
/// restart) one from the old CA is refused.
#[test]
fn the_ca_rotates_without_stopping_the_cluster() {
    let Some(mut c) = hosts(1, &[]) else { return };
    c.wait_nodes_idle(Duration::from_secs(30)).unwrap();
    let node1 = c.net.as_ref().unwrap().host("node1").addr.clone();
    let tls = c.path().join("tls");
    let old_cert = std::fs::read(tls.join("node1.crt")).unwrap();
    let old_key = std::fs::read(tls.join("node1.key")).unwrap();

    // 1. A new CA beside the old one; the controller reloads both.
    drover(&c, &["ca", "rotate"]);
    let bundle = std::fs::read_to_string(tls.join("ca.crt")).unwrap();
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 2);
    c.stop_ctld();
    c.start_ctld().unwrap();
    // 2. node1 gets a certificate from the new CA; the controller (still
    // on an old-CA certificate) and node1 (new) work together.
    c.signal_host_agent("node1", libc::SIGKILL);
    drover(&c, &["ca", "issue", "node1"]);
    assert_ne!(std::fs::read(tls.join("node1.crt")).unwrap(), old_cert);
    c.start_host_agent("node1").unwrap();
    let id = c.sbatch(&["-w", "node1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");

    // 3. Every host on the new CA, the old one retired.
    drover(&c, &["ca", "issue"]);
    drover(&c, &["ca", "retire"]);
    let bundle = std::fs::read_to_string(tls.join("ca.crt")).unwrap();
    assert_eq!(bundle.matches("BEGIN CERTIFICATE").count(), 1);
    c.stop_ctld();
    c.start_ctld().unwrap();
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");

    // An old-CA certificate is now refused.
    c.signal_host_agent("node1", libc::SIGKILL);
    std::fs::write(tls.join("node1.crt"), old_cert).unwrap();
    std::fs::write(tls.join("node1.key"), old_key).unwrap();
    c.start_host_agent("node1").unwrap();
    wait_log(
        &c,
        "droverctld",
        &[
            "TLS: refused connection from",
            &node1,
            "not signed by this cluster's CA",
        ],
    );
}

/// `TLSType=tls/rustls` forces TLS on loopback too (the benchmark's set-up):
/// jobs and steps run, and a plaintext client is refused.
#[test]
fn forced_tls_on_loopback_runs_jobs_and_steps_and_refuses_plaintext() {
    let c = Cluster::start(Spec {
        extra: vec!["TLSType=tls/rustls".into()],
        ..Default::default()
    });
    wait_log(&c, "droverctld", &["TLS 1.3 on 127.0.0.1", "TLS required"]);
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
    let out = c.run("srun", &["-N2", "-n2", "-l", "echo", "over-tls"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("0: over-tls") && text.contains("1: over-tls"),
        "{text}"
    );
    let plain = conf_with(&c, "plain.conf", "TLSType=tls/none");
    let (_, script) = marker_script(&c);
    assert!(!sbatch_with(&c, &plain, &script).status.success());
    wait_log(
        &c,
        "droverctld",
        &["TLS: refused connection from 127.0.0.1", "plaintext client"],
    );
}

/// `drover ca` refuses what it cannot do, saying why.
#[test]
fn drover_ca_explains_what_it_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let ca = |args: &[&str]| {
        std::process::Command::new(bin_dir().join("drover"))
            .arg("ca")
            .args(args)
            .env("DROVER_CONF", dir.path().join("missing.conf"))
            .output()
            .unwrap()
    };
    let err = |o: &Output| String::from_utf8_lossy(&o.stderr).to_string();
    let o = ca(&["issue", "node1", "--dir", d]);
    assert!(!o.status.success());
    assert!(err(&o).contains("drover ca init"), "{}", err(&o));
    assert!(ca(&["init", "--dir", d]).status.success());
    let o = ca(&["init", "--dir", d]);
    assert!(!o.status.success());
    assert!(err(&o).contains("already has a CA"), "{}", err(&o));
    let o = ca(&["issue", "--dir", d]);
    assert!(err(&o).contains("no host named"), "{}", err(&o));
    let o = ca(&["issue", "node1", "--days", "soon", "--dir", d]);
    assert!(err(&o).contains("--days: 'soon'"), "{}", err(&o));
    let o = ca(&["frobnicate"]);
    assert!(
        err(&o).contains("unknown command 'frobnicate'"),
        "{}",
        err(&o)
    );
    assert!(ca(&["issue", "node1", "--san", "10.0.0.5", "--dir", d])
        .status
        .success());
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &str| {
        std::fs::metadata(dir.path().join(f))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("ca.key"), 0o600);
    assert_eq!(mode("node1.key"), 0o600);
    assert_eq!(mode("ca.crt"), 0o644);
    assert_eq!(mode("node1.crt"), 0o644);
}
