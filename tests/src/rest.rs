//! The REST daemon in a test cluster, and a small HTTP/1.1 client (no
//! HTTP library: a request line, headers, a body; a keep-alive connection).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::{bin_dir, free_port, Cluster};

/// One answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): status {} body {}", self.status, self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A keep-alive HTTP/1.1 connection.
pub struct Conn<S: Read + Write> {
    rd: BufReader<S>,
    host: String,
}

pub fn connect_tcp(addr: &str) -> Conn<TcpStream> {
    let s = TcpStream::connect(addr).expect("connect to droverrestd");
    s.set_nodelay(true).ok();
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    Conn {
        rd: BufReader::new(s),
        host: addr.to_string(),
    }
}

pub fn connect_unix(path: &std::path::Path) -> Conn<UnixStream> {
    let s = UnixStream::connect(path).expect("connect to droverrestd's socket");
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    Conn {
        rd: BufReader::new(s),
        host: "localhost".into(),
    }
}

impl<S: Read + Write> Conn<S> {
    /// Send one request and read its answer.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        let w = self.rd.get_mut();
        w.write_all(head.as_bytes()).expect("send request");
        w.write_all(body).expect("send body");
        w.flush().expect("flush");
        self.read_reply()
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.rd.read_line(&mut l).expect("read answer");
        l.trim_end_matches(['\r', '\n']).to_string()
    }

    fn read_reply(&mut self) -> Reply {
        let status_line = self.line();
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line '{status_line}'"));
        let mut headers = Vec::new();
        loop {
            let l = self.line();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let find = |n: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(n))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if let Some(len) = find("content-length") {
            let len: usize = len.parse().expect("content-length");
            body.resize(len, 0);
            self.rd.read_exact(&mut body).expect("read body");
        } else if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
            loop {
                let size = usize::from_str_radix(self.line().trim(), 16).expect("chunk size");
                let mut chunk = vec![0; size];
                self.rd.read_exact(&mut chunk).expect("read chunk");
                self.line();
                if size == 0 {
                    break;
                }
                body.extend(chunk);
            }
        }
        Reply {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }
}

/// A running droverrestd (stopped when dropped).
pub struct RestD {
    child: Child,
    pub addr: String,
    pub socket: PathBuf,
    log: PathBuf,
}

impl RestD {
    /// Start droverrestd for `c` on a loopback port and a Unix socket in the
    /// cluster directory; returns once it answers.
    pub fn start(c: &Cluster, extra: &[&str]) -> RestD {
        let addr = format!("127.0.0.1:{}", free_port());
        let socket = c.path().join("rest.sock");
        let log = c.path().join("droverrestd.log");
        let f = std::fs::File::create(&log).expect("log");
        let child = std::process::Command::new(bin_dir().join("droverrestd"))
            .arg("-f")
            .arg(&c.conf)
            .args(extra)
            .arg(&addr)
            .arg(format!("unix:{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(f.try_clone().expect("log"))
            .stderr(f)
            .spawn()
            .expect("start droverrestd (built by cargo build --workspace --bins)");
        let mut r = RestD {
            child,
            addr,
            socket,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        // Up once both listeners accept (a socket file exists from its
        // bind, a moment before it listens: a connection is refused then).
        while TcpStream::connect(&r.addr).is_err() || UnixStream::connect(&r.socket).is_err() {
            if let Ok(Some(st)) = r.child.try_wait() {
                panic!("droverrestd exited {st}: {}", r.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "droverrestd not up: {}",
                r.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        r
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn tcp(&self) -> Conn<TcpStream> {
        connect_tcp(&self.addr)
    }

    pub fn unix(&self) -> Conn<UnixStream> {
        connect_unix(&self.socket)
    }
}

impl Drop for RestD {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- droverrestd log ---\n{}", self.log_text());
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A token from `scontrol token` run by root (`username=` another user).
pub fn token(c: &Cluster, args: &[&str]) -> String {
    let out = c.ok("scontrol", &[&["token"], args].concat());
    out.trim()
        .strip_prefix("SLURM_JWT=")
        .unwrap_or_else(|| panic!("scontrol token printed '{out}'"))
        .to_string()
}

/// The cluster spec lines and key file a REST test needs (the key is
/// chmod 600 by [`jwt_key_ready`]).
pub const JWT_KEY: &str = "rest-test-jwt-key-0123456789abcdef";

pub fn jwt_conf() -> String {
    "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={DIR}/jwt.key".to_string()
}

/// A cluster spec with JWT authentication on (the key file included).
pub fn jwt_spec() -> crate::Spec {
    crate::Spec {
        extra: vec![jwt_conf()],
        files: vec![("jwt.key".into(), JWT_KEY.into())],
        ..crate::Spec::default()
    }
}

/// Make the key file private, as the daemons demand.
pub fn jwt_key_ready(c: &Cluster) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = c.path().join("jwt.key");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod jwt key");
    p
}

/// Is `python3` here? (The OpenAPI and exposition checks use real Python
/// parsers; `.ci/run` installs them. Without Python the checks say SKIPPED.)
pub fn python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run a Python program with `input` on its standard input; its stdout, or
/// a panic with its stderr.
pub fn run_python(program: &str, input: &str) -> String {
    let mut child = std::process::Command::new("python3")
        .arg("-c")
        .arg(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write to python3");
    let out = child.wait_with_output().expect("python3 output");
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Parse a Prometheus text exposition with `prometheus_client.parser`;
/// samples as `name{k="v",...}` (labels sorted) -> value, and each
/// family's type.
pub fn parse_exposition(
    text: &str,
) -> (
    std::collections::BTreeMap<String, f64>,
    std::collections::BTreeMap<String, String>,
) {
    const PROG: &str = r#"
import sys, json
from prometheus_client.parser import text_string_to_metric_families
samples, types = {}, {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    types[fam.name] = fam.type
    for s in fam.samples:
        labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
        samples[s.name + ("{" + labels + "}" if labels else "")] = s.value
print(json.dumps({"samples": samples, "types": types}))
"#;
    let v: serde_json::Value =
        serde_json::from_str(&run_python(PROG, text)).expect("parser output");
    let samples = v["samples"]
        .as_object()
        .expect("samples")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap_or(f64::NAN)))
        .collect();
    let types = v["types"]
        .as_object()
        .expect("types")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    (samples, types)
}
