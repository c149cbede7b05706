//! `drover ca`: the cluster CA and the host certificates TLS uses (see
//! `drover_proto::tls`; the steps are in docs/admin-guide.md, "TLS").
//!
//! Files, in `DIR` (default: `tls/` beside the configuration file, or the
//! directory of `TLSParameters=ca_cert_file=`):
//! `ca.crt` (the certificates every host trusts, 0644), `ca.key` (0600),
//! `HOST.crt` (0644) and `HOST.key` (0600) for each host.

pub mod certs;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use certs::HostSpec;

const USAGE: &str = "Usage: drover ca init   [--dir DIR] [--days N]\n\
\x20      drover ca issue  [HOST...] [--san NAME|ADDR]... [--dir DIR] [--days N]\n\
\x20      drover ca rotate [--dir DIR] [--days N]\n\
\x20      drover ca retire [--dir DIR]\n\
\n\
init    make the cluster CA (ca.crt, ca.key); refuses to overwrite one\n\
issue   certificate and key for each HOST (default: every host the\n\
\x20       configuration names), with its addresses from the configuration\n\
\x20       and each --san as alternative names\n\
rotate  make a new CA; ca.crt then holds the new and the old, both trusted\n\
retire  drop every CA but the newest from ca.crt (after re-issuing)\n\
Defaults: DIR = tls/ beside drover.conf; --days 3650 for a CA, 825 for hosts.\n";

/// Parsed command line.
struct Args {
    verb: String,
    hosts: Vec<String>,
    sans: Vec<String>,
    dir: Option<PathBuf>,
    days: Option<i64>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    let verb = it.next().cloned().unwrap_or_default();
    let mut a = Args {
        verb,
        hosts: Vec::new(),
        sans: Vec::new(),
        dir: None,
        days: None,
    };
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag {
            "--dir" => a.dir = Some(PathBuf::from(value()?)),
            "--san" => a.sans.push(value()?),
            "--days" => {
                let v = value()?;
                a.days = Some(
                    v.parse::<i64>()
                        .ok()
                        .filter(|d| *d >= 0)
                        .ok_or_else(|| format!("--days: '{v}' is not a number of days"))?,
                )
            }
            f if f.starts_with('-') => return Err(format!("unknown option {f}")),
            host => a.hosts.push(host.to_string()),
        }
    }
    Ok(a)
}

pub fn run(args: &[String]) -> i32 {
    if args.is_empty() || args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{USAGE}");
        return i32::from(args.is_empty());
    }
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("drover ca: error: {e}");
            eprint!("{USAGE}");
            return 1;
        }
    };
    let r = match a.verb.as_str() {
        "init" => no_hosts(&a).and_then(|_| init(&dir(&a)?, a.days.unwrap_or(3650))),
        "rotate" => no_hosts(&a).and_then(|_| rotate(&dir(&a)?, a.days.unwrap_or(3650))),
        "retire" => no_hosts(&a).and_then(|_| retire(&dir(&a)?)),
        "issue" => issue(&a),
        v => Err(format!(
            "unknown command '{v}' (init, issue, rotate, retire)"
        )),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("drover ca {}: error: {e}", a.verb);
            1
        }
    }
}

fn no_hosts(a: &Args) -> Result<(), String> {
    match a.hosts.first() {
        Some(h) => Err(format!("unexpected argument '{h}'")),
        None => Ok(()),
    }
}

/// The configuration, if there is one.
fn config() -> Result<(drover_conf::Config, PathBuf), String> {
    let path = crate::conn::config_path();
    drover_conf::slurmconf::load(&path)
        .map(|(c, _)| (c, path))
        .map_err(|e| e.to_string())
}

fn dir(a: &Args) -> Result<PathBuf, String> {
    if let Some(d) = &a.dir {
        return Ok(d.clone());
    }
    let (cfg, path) = config().map_err(|e| format!("{e} (or give --dir)"))?;
    let files = drover_proto::tls::files_for(&cfg.tls, &path);
    Ok(files
        .ca_cert
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf))
}

/// Write a public file (0644), replacing any old one whole.
fn write_public(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("new");
    fs::write(&tmp, text)
        .and_then(|_| fs::set_permissions(&tmp, fs::Permissions::from_mode(0o644)))
        .and_then(|_| fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Write a private key (0600), replacing any old one whole.
fn write_key(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("new");
    drover_proto::private::write(&tmp, text.as_bytes())
        .and_then(|_| fs::rename(&tmp, path))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn make_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))
}

fn init(dir: &Path, days: i64) -> Result<(), String> {
    let key = dir.join("ca.key");
    if key.exists() {
        return Err(format!(
            "{} exists: the cluster already has a CA (use `drover ca rotate` to replace it)",
            key.display()
        ));
    }
    make_dir(dir)?;
    let ca = certs::new_ca(days.max(1))?;
    write_key(&key, &ca.key_pem)?;
    write_public(&dir.join("ca.crt"), &ca.cert_pem)?;
    println!(
        "Wrote the cluster CA to {} (certificate, give it to every host) and {} (key, keep it here)",
        dir.join("ca.crt").display(),
        key.display()
    );
    Ok(())
}

fn rotate(dir: &Path, days: i64) -> Result<(), String> {
    let old = read(&dir.join("ca.crt"))?;
    read(&dir.join("ca.key"))?;
    let ca = certs::new_ca(days.max(1))?;
    // New first: `retire` keeps the first one.
    write_public(&dir.join("ca.crt"), &format!("{}{old}", ca.cert_pem))?;
    write_key(&dir.join("ca.key"), &ca.key_pem)?;
    println!(
        "New CA made; {} now trusts the new and the old. Next: copy it to every host and \
         restart the daemons, then `drover ca issue`, then `drover ca retire`.",
        dir.join("ca.crt").display()
    );
    Ok(())
}

fn retire(dir: &Path) -> Result<(), String> {
    let path = dir.join("ca.crt");
    let text = read(&path)?;
    const END: &str = "-----END CERTIFICATE-----";
    let Some(end) = text.find(END) else {
        return Err(format!("{}: no certificate in it", path.display()));
    };
    let first = format!("{}\n", &text[..end + END.len()]);
    let dropped = text.matches(END).count() - 1;
    write_public(&path, &first)?;
    println!(
        "{}: kept the newest CA, dropped {dropped} older one(s)",
        path.display()
    );
    Ok(())
}

/// The hosts the configuration names, each with its addresses.
fn configured_hosts(cfg: &drover_conf::Config) -> Vec<(String, Vec<String>)> {
    let mut hosts: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: &str, addr: Option<&str>| {
        let i = match hosts.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                hosts.push((name.to_string(), Vec::new()));
                hosts.len() - 1
            }
        };
        if let Some(a) = addr.filter(|a| *a != name) {
            if !hosts[i].1.iter().any(|x| x == a) {
                hosts[i].1.push(a.to_string());
            }
        }
    };
    for h in &cfg.slurmctld_host {
        add(&h.name, h.addr.as_deref());
    }
    for n in &cfg.nodes {
        add(&n.node_hostname, Some(&n.node_addr));
    }
    if let Some(h) = &cfg.accounting_storage_host {
        if h.parse::<std::net::IpAddr>().is_err() {
            add(h, None);
        }
    }
    hosts
}

fn issue(a: &Args) -> Result<(), String> {
    let dir = dir(a)?;
    let ca_key = read(&dir.join("ca.key"))
        .map_err(|e| format!("{e} (make the CA first: `drover ca init`)"))?;
    let cfg = config().ok().map(|(c, _)| c);
    let known = cfg.as_ref().map(configured_hosts).unwrap_or_default();
    let wanted: Vec<(String, Vec<String>)> = if a.hosts.is_empty() {
        if known.is_empty() {
            return Err("no host named, and no configuration naming any".into());
        }
        known
    } else {
        a.hosts
            .iter()
            .map(|h| {
                let addrs = known
                    .iter()
                    .find(|(n, _)| n == h)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_default();
                (h.clone(), addrs)
            })
            .collect()
    };
    for (name, addrs) in wanted {
        let mut alt = addrs;
        alt.extend(a.sans.iter().cloned());
        let spec = HostSpec {
            name: name.clone(),
            alt,
            days: a.days.unwrap_or(825),
        };
        let pair = certs::new_host(&ca_key, &spec)?;
        write_key(&dir.join(format!("{name}.key")), &pair.key_pem)?;
        write_public(&dir.join(format!("{name}.crt")), &pair.cert_pem)?;
        let also = if spec.alt.is_empty() {
            String::new()
        } else {
            format!(" (also {})", spec.alt.join(", "))
        };
        println!(
            "Wrote {} and {} for {name}{also}",
            dir.join(format!("{name}.crt")).display(),
            dir.join(format!("{name}.key")).display()
        );
    }
    Ok(())
}
