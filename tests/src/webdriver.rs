//! A headless Chromium driven through chromedriver: the few WebDriver
//! commands the dashboard tests need, over the harness's own HTTP client
//! (no WebDriver crate). Debian's `chromium` and `chromium-driver`
//! packages provide the two programs (`.ci/run` installs them).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::free_port;
use crate::rest::{connect_tcp, Conn};

/// The W3C name of an element reference in answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// chromedriver and the browser, or why not (for a SKIPPED line).
pub fn programs() -> Result<(PathBuf, PathBuf), String> {
    let driver = on_path(&["chromedriver"]).ok_or("chromedriver is not installed")?;
    let browser = on_path(&["chromium", "chromium-browser", "google-chrome"])
        .ok_or("chromium is not installed")?;
    Ok((driver, browser))
}

/// One browser session (closed, and chromedriver stopped, when dropped).
pub struct Browser {
    driver: Child,
    http: Conn<TcpStream>,
    session: String,
    _profile: tempfile::TempDir,
    log: PathBuf,
}

impl Browser {
    /// A headless browser `width` x `height` CSS pixels; None (after a
    /// `SKIPPED (what): ...` line) where chromium or chromedriver is absent.
    pub fn start(what: &str, width: u32, height: u32) -> Option<Browser> {
        let (driver_bin, browser_bin) = match programs() {
            Ok(p) => p,
            Err(why) => {
                eprintln!("SKIPPED ({what}): {why} (apt-get install chromium chromium-driver)");
                return None;
            }
        };
        let profile = tempfile::tempdir().expect("browser profile dir");
        let port = free_port();
        let log = profile.path().join("chromedriver.log");
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let http = connect_tcp(&addr);
        let mut b = Browser {
            driver,
            http,
            session: String::new(),
            _profile: profile,
            log,
        };
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": browser_bin,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", b._profile.path().join("data").display()),
                ],
            },
        }}});
        let v = b.call("POST", "/session", &caps);
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        b.resize(width, height);
        Some(b)
    }

    /// One WebDriver command: its `value`, or the WebDriver error.
    fn try_call(&mut self, method: &str, path: &str, body: &Value) -> Result<Value, Value> {
        let bytes = if method == "POST" {
            body.to_string().into_bytes()
        } else {
            Vec::new()
        };
        let r = self.http.request(method, path, &[], &bytes);
        let v: Value = serde_json::from_str(&r.body)
            .unwrap_or_else(|e| panic!("chromedriver answered {} ({e}): {}", r.status, r.body));
        if r.status != 200 {
            return Err(v["value"].clone());
        }
        Ok(v["value"].clone())
    }

    /// One WebDriver command; its `value`. Panics on a WebDriver error.
    fn call(&mut self, method: &str, path: &str, body: &Value) -> Value {
        self.try_call(method, path, body).unwrap_or_else(|e| {
            panic!(
                "WebDriver {method} {path}: {}\n{}",
                e,
                std::fs::read_to_string(&self.log)
                    .map(|l| l.lines().rev().take(20).collect::<Vec<_>>().join("\n"))
                    .unwrap_or_default()
            )
        })
    }

    fn s(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// The viewport is this size (the window a little larger).
    pub fn resize(&mut self, width: u32, height: u32) {
        let p = self.s("/window/rect");
        self.call("POST", &p, &json!({"width": width, "height": height}));
        // Headless windows have no chrome, but make the inner width exact.
        let inner = self.js("return [window.innerWidth, window.innerHeight]", json!([]));
        let (iw, ih) = (
            inner[0].as_i64().unwrap_or(0),
            inner[1].as_i64().unwrap_or(0),
        );
        if iw > 0 && (iw != i64::from(width) || ih != i64::from(height)) {
            let w = i64::from(width) * 2 - iw;
            let h = i64::from(height) * 2 - ih;
            self.call("POST", &p, &json!({"width": w, "height": h}));
        }
    }

    pub fn goto(&mut self, url: &str) {
        let p = self.s("/url");
        self.call("POST", &p, &json!({ "url": url }));
    }

    /// Run `script` (a function body; `arguments` are `args`); its result.
    pub fn js(&mut self, script: &str, args: Value) -> Value {
        let p = self.s("/execute/sync");
        self.call("POST", &p, &json!({"script": script, "args": args}))
    }

    /// Wait until `expr` (an expression) is truthy; its value. Panics with
    /// `what` and the page's notice after `timeout`.
    pub fn wait(&mut self, what: &str, expr: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        let script = format!("try {{ return ({expr}); }} catch (e) {{ return null; }}");
        loop {
            let v = self.js(&script, json!([]));
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Object(_) => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let notice = self.js(
                    "return document.querySelector('#notice') ? document.querySelector('#notice').innerText : ''",
                    json!([]),
                );
                panic!("timed out waiting for {what} ({expr}); page notice: {notice}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The element `css` selects (the first), as a WebDriver reference.
    pub fn find(&mut self, css: &str) -> String {
        let p = self.s("/element");
        let v = self.call("POST", &p, &json!({"using": "css selector", "value": css}));
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// A real click on `css` (scrolled into view by the driver).
    /// The page may redraw the element between finding and clicking it
    /// (a live update): then it is found again.
    pub fn click(&mut self, css: &str) {
        for _ in 0..5 {
            let e = self.find(css);
            let p = self.s(&format!("/element/{e}/click"));
            match self.try_call("POST", &p, &json!({})) {
                Ok(_) => return,
                Err(v) if v["error"] == "stale element reference" => continue,
                Err(v) => panic!("click {css}: {v}"),
            }
        }
        panic!("click {css}: the element kept going stale");
    }

    /// Type `text` into the field `css` (after clearing it).
    pub fn type_into(&mut self, css: &str, text: &str) {
        let e = self.find(css);
        let p = self.s(&format!("/element/{e}/clear"));
        self.call("POST", &p, &json!({}));
        let p = self.s(&format!("/element/{e}/value"));
        self.call("POST", &p, &json!({ "text": text }));
    }

    /// A PNG of the viewport, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        let p = self.s("/screenshot");
        let v = self.call("GET", &p, &Value::Null);
        let png = base64_decode(v.as_str().expect("screenshot data"));
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let p = self.s("");
            self.http.request("DELETE", &p, &[], b"");
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (with padding, whitespace ignored).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let Some(v) = val(c) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64() {
        assert_eq!(super::base64_decode("aGVsbG8gd29ybGQ="), b"hello world");
        assert_eq!(super::base64_decode("YQ=="), b"a");
        assert_eq!(super::base64_decode(""), b"");
    }
}
