//! Several hosts on one machine, for multi-host tests: one network namespace
//! per host (with its own hostname and its own `run/` directory, where the
//! host's auth socket lives), joined by a bridge in a namespace of its own.
//! Every address (10.X.0.0/24) exists only inside namespaces this test
//! made; nothing is added to the machine's own network, and everything is
//! removed when the [`Net`] is dropped.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// One simulated host.
pub struct Host {
    pub name: String,
    pub addr: String,
    ns: String,
    /// The switch-side end of the host's cable (`ip link set ... down` cuts it).
    port: String,
    netns: OwnedFd,
    /// This host's own directory, bind-mounted over the shared `run/`.
    run_dir: PathBuf,
}

/// The hosts and the bridge between them.
pub struct Net {
    pub hosts: Vec<Host>,
    switch: String,
    /// The path every host sees as its own `run/` directory.
    run_path: PathBuf,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Net {
    /// Why multi-host tests cannot run here, if they cannot (not root, no
    /// `ip`, namespaces forbidden). Tests print it and skip, visibly.
    pub fn unavailable() -> Option<String> {
        if crate::sys::geteuid() != 0 {
            return Some("multi-host tests need root (network namespaces)".into());
        }
        let probe = format!(
            "drover-probe-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        match ip(&["netns", "add", &probe]) {
            Ok(()) => {
                let _ = ip(&["netns", "del", &probe]);
                None
            }
            Err(e) => Some(format!("cannot create network namespaces: {e}")),
        }
    }

    /// Make hosts named `names` (addresses 10.X.0.1, .2, ... in that
    /// order), each with its own `run/` under `root/hosts/NAME/run`, seen
    /// by its processes at `root/run`.
    pub fn new(root: &Path, names: &[&str]) -> Result<Net, String> {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let id = format!("dv{}x{n}", std::process::id());
        // A subnet per Net, though namespaces already keep tests apart.
        let subnet = 1 + (std::process::id() as usize * 7 + n as usize) % 250;
        let switch = format!("{id}-sw");
        let run_path = root.join("run");
        std::fs::create_dir_all(&run_path).map_err(|e| e.to_string())?;
        ip(&["netns", "add", &switch])?;
        let mut net = Net {
            hosts: Vec::new(),
            switch: switch.clone(),
            run_path,
        };
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &switch, "link", "set", "br0", "up"])?;
        for (i, name) in names.iter().enumerate() {
            let ns = format!("{id}-{i}");
            let port = format!("p{i}");
            let addr = format!("10.{subnet}.0.{}", i + 1);
            ip(&["netns", "add", &ns])?;
            let netns: OwnedFd = std::fs::File::open(format!("/run/netns/{ns}"))
                .map_err(|e| format!("/run/netns/{ns}: {e}"))?
                .into();
            let run_dir = root.join("hosts").join(name).join("run");
            std::fs::create_dir_all(&run_dir).map_err(|e| e.to_string())?;
            net.hosts.push(Host {
                name: name.to_string(),
                addr: addr.clone(),
                ns: ns.clone(),
                port: port.clone(),
                netns,
                run_dir,
            });
            ip(&[
                "-n", &switch, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ])?;
            ip(&["-n", &switch, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(net)
    }

    pub fn host(&self, name: &str) -> &Host {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name}"))
    }

    /// `prog` as a process of host `name`: in its network namespace, with
    /// its hostname, and its own `run/` directory.
    pub fn command(&self, name: &str, prog: impl AsRef<std::ffi::OsStr>) -> Command {
        let h = self.host(name);
        let mut cmd = Command::new(prog);
        let netns = h.netns.as_raw_fd();
        let hostname = h.name.clone().into_bytes();
        let src = CString::new(h.run_dir.to_string_lossy().as_bytes()).expect("no NUL");
        let dst = CString::new(self.run_path.to_string_lossy().as_bytes()).expect("no NUL");
        crate::sys::enter_host_in_child(&mut cmd, netns, hostname, src, dst);
        cmd
    }

    /// Run `f` on a thread of this process inside host `name`'s network
    /// namespace (threads it starts are there too): a test's own server or
    /// relay on that host. The namespace of the thread only is changed.
    pub fn spawn_in<T: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let fd = self
            .host(name)
            .netns
            .try_clone()
            .expect("duplicate the namespace fd");
        std::thread::spawn(move || {
            // The calling thread's network namespace only.
            crate::sys::setns_net(&fd).expect("setns");
            f()
        })
    }

    /// Unplug (`false`) or plug back (`true`) host `name`'s cable: its
    /// processes go on, but nothing reaches it.
    pub fn set_link(&self, name: &str, up: bool) {
        let h = self.host(name);
        ip(&[
            "-n",
            &self.switch,
            "link",
            "set",
            &h.port,
            if up { "up" } else { "down" },
        ])
        .expect("set link");
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for h in &self.hosts {
            let _ = ip(&["netns", "del", &h.ns]);
        }
        let _ = ip(&["netns", "del", &self.switch]);
    }
}
