//! Accounting in the harness: droverdbd with a fresh database per test
//! (SQLite file, or a uniquely named database on the PostgreSQL / MariaDB
//! test servers, dropped afterwards), and a TCP proxy that can cut the
//! daemon off its database to simulate an outage.

use std::fs;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{bin_dir, free_port, tail, unique, Cluster};

/// The backends the accounting suite runs on, with their server URLs
/// (`DROVER_TEST_PG_URL`, `DROVER_TEST_MYSQL_URL`; defaults: the local
/// test servers).
pub fn backend_url(backend: &str) -> String {
    let env = |k: &str, d: &str| {
        std::env::var(k)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| d.to_string())
    };
    match backend {
        "postgres" => env(
            "DROVER_TEST_PG_URL",
            "postgres://postgres@127.0.0.1:5432/test",
        ),
        "mysql" => env("DROVER_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
        other => other.to_string(),
    }
}

/// What [`prepare`] set up.
pub struct Prepared {
    pub conf: PathBuf,
    pub port: u16,
    pub proxy: Option<Proxy>,
}

/// `scheme://auth@host:port/db?params` -> (prefix up to '@' inclusive, host:port, params).
fn split_url(url: &str) -> Option<(String, String, String)> {
    let s = url.find("://")? + 3;
    let rest = &url[s..];
    let at = rest.find('@').map(|i| i + 1).unwrap_or(0);
    let hostport_end = rest[at..].find('/').map(|i| i + at).unwrap_or(rest.len());
    let params = url
        .find('?')
        .map(|q| url[q..].to_string())
        .unwrap_or_default();
    Some((
        url[..s + at].to_string(),
        rest[at..hostport_end].to_string(),
        params,
    ))
}

/// Write droverdbd.conf (and a direct one for clean-up) for `backend`.
pub fn prepare(dir: &Path, backend: &str, proxy: bool) -> Result<Prepared, String> {
    let port = free_port();
    let base = backend_url(backend);
    let (url, direct, proxy) = if base == "sqlite" {
        let u = format!("sqlite://{}/dbd/acct.db?mode=rwc", dir.display());
        (u.clone(), u, None)
    } else {
        let (prefix, hostport, params) =
            split_url(&base).ok_or_else(|| format!("bad database URL {base}"))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let db = format!("drover_it_{}_{}_{nanos}", std::process::id(), unique());
        let direct = format!("{prefix}{hostport}/{db}{params}");
        if proxy {
            let target = hostport.replace("localhost", "127.0.0.1");
            let p = Proxy::start(&target)?;
            let u = format!("{prefix}127.0.0.1:{}/{db}{params}", p.port);
            (u, direct, Some(p))
        } else {
            (direct.clone(), direct, None)
        }
    };
    let d = dir.display();
    let common = format!(
        "DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={port}\nSlurmUser=root\n\
         AuthKeyFile={d}/drover.key\nStateSaveLocation={d}/dbd\n"
    );
    let conf = dir.join("droverdbd.conf");
    fs::write(&conf, format!("{common}StorageURL={url}\n")).map_err(|e| e.to_string())?;
    fs::write(
        dir.join("droverdbd-direct.conf"),
        format!("{common}StorageURL={direct}\n"),
    )
    .map_err(|e| e.to_string())?;
    Ok(Prepared { conf, port, proxy })
}

/// A TCP forwarder whose connections can be cut and refused for a while.
pub struct Proxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16384];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

impl Proxy {
    pub fn start(target: &str) -> Result<Proxy, String> {
        let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = l.local_addr().map_err(|e| e.to_string())?.port();
        let up = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (u, cs, target) = (up.clone(), conns.clone(), target.to_string());
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                if !u.load(Ordering::SeqCst) {
                    let _ = s.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(t) = TcpStream::connect(&target) else {
                    continue;
                };
                if let (Ok(a), Ok(b)) = (s.try_clone(), t.try_clone()) {
                    let mut g = cs.lock().unwrap_or_else(|p| p.into_inner());
                    g.push(a);
                    g.push(b);
                }
                let (s2, t2) = match (s.try_clone(), t.try_clone()) {
                    (Ok(a), Ok(b)) => (a, b),
                    _ => continue,
                };
                std::thread::spawn(move || pipe(s, t));
                std::thread::spawn(move || pipe(t2, s2));
            }
        });
        Ok(Proxy { port, up, conns })
    }

    /// The database "goes down": every connection is cut, new ones refused.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        for c in self
            .conns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}

impl Cluster {
    pub fn start_dbd(&mut self) -> Result<(), String> {
        let conf = self
            .dbd_conf
            .clone()
            .ok_or("accounting is not configured")?;
        let child = self
            .daemon("droverdbd")
            .arg("-f")
            .arg(&conf)
            .env("RUST_LOG", "info,sqlx=warn")
            .stdin(Stdio::null())
            .stdout(self.log("droverdbd"))
            .stderr(self.log("droverdbd"))
            .spawn()
            .map_err(|e| format!("droverdbd: {e}"))?;
        self.dbd = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", self.dbd_port)).is_err() {
            if let Some(c) = self.dbd.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return Err(format!(
                        "droverdbd exited {st}: {}",
                        self.log_text("droverdbd")
                    ));
                }
            }
            if Instant::now() > deadline {
                return Err(format!("droverdbd not up: {}", self.log_text("droverdbd")));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// `kill -9` droverdbd.
    pub fn kill_dbd(&mut self) {
        Cluster::kill(&mut self.dbd, libc::SIGKILL);
    }

    /// Cut droverdbd off its database (needs `Spec::db_proxy`).
    pub fn db_outage(&self) {
        self.proxy.as_ref().expect("Spec::db_proxy").cut();
    }

    pub fn db_restore(&self) {
        self.proxy.as_ref().expect("Spec::db_proxy").restore();
    }

    pub(crate) fn drop_accounting_db(&mut self) {
        if self.dbd_conf.is_none() {
            return;
        }
        if let Some(p) = &self.proxy {
            p.restore();
        }
        let _ = Command::new(bin_dir().join("droverdbd"))
            .arg("-f")
            .arg(self.path().join("droverdbd-direct.conf"))
            .arg("--drop-database")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Run `sacct ARGS` until its stdout satisfies `pred` (records arrive
    /// asynchronously); panics with diagnostics after `timeout`.
    pub fn wait_sacct(
        &self,
        args: &[&str],
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.run("sacct", args);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() && pred(&text) {
                return text;
            }
            if Instant::now() > deadline {
                let last = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
                panic!(
                    "sacct {args:?} never matched; last:\n{last}\n--- ctld\n{}\n--- dbd\n{}",
                    tail(&self.log_text("droverctld")),
                    tail(&self.log_text("droverdbd"))
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
