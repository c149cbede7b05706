//! How this process may ask the name service (NSS: users, groups, hosts).
//!
//! The daemons are linked dynamically and call the C library, which loads
//! whatever modules `/etc/nsswitch.conf` names (sss, ldap, systemd, ...).
//! The `drover` command is linked statically (it starts in half the time:
//! see cli/build.rs), and a static C library must not load those modules:
//! they bring the system's shared C library into a process that already
//! has its own copy (a `libnss_systemd` look-up crashed it). Its built-in
//! sources, `files` and `dns`, load nothing. So a static process:
//!
//! * asks the C library where every source of the database is built in;
//! * else, where the first source is `files` (the usual `files sss`,
//!   `files systemd`, `files ldap`), reads the file itself first (the C
//!   library's own file readers, `fgetpwent_r`/`fgetgrent_r`), and only
//!   for what it does not find there
//! * runs `getent`, the system's dynamically linked look-up command, which
//!   answers with every source; its answers are kept for the process.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, OnceLock};

/// A name service database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Db {
    Passwd = 0,
    Group = 1,
    Hosts = 2,
}

impl Db {
    fn name(self) -> &'static str {
        match self {
            Db::Passwd => "passwd",
            Db::Group => "group",
            Db::Hosts => "hosts",
        }
    }
}

/// How a look-up in one database is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The C library (a dynamic process, or only built-in sources).
    Libc,
    /// The database's file first, then `getent` for what it lacks.
    FilesThenGetent,
    /// `getent` only.
    Getent,
}

/// Sources the C library has built in (glibc 2.34 and later): they load
/// no module.
const BUILT_IN: [&str; 2] = ["files", "dns"];

/// The sources `nsswitch.conf` text lists for `db`, in order, without
/// their `[STATUS=action]` items; `None` without a line for it (the C
/// library then uses `files`, built in).
pub fn sources(conf: &str, db: &str) -> Option<Vec<String>> {
    let mut found = None;
    for line in conf.lines() {
        let line = line.split('#').next().unwrap_or_default();
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        if key.trim() != db {
            continue;
        }
        let mut out = Vec::new();
        let mut in_action = false;
        for word in rest.split_whitespace() {
            // Actions may be written `[NOTFOUND=return]` or spread over
            // several words: `[ NOTFOUND = return ]`.
            if word.starts_with('[') {
                in_action = true;
            }
            if !in_action {
                out.push(word.to_string());
            }
            if word.ends_with(']') {
                in_action = false;
            }
        }
        // The last line for a database wins, as in the C library.
        found = Some(out);
    }
    found
}

/// The route for a database whose sources are `sources` (see [`sources`])
/// in a process linked statically (`statically_linked`) or not.
pub fn route_for(statically_linked: bool, sources: Option<&[String]>) -> Route {
    let Some(sources) = sources else {
        return Route::Libc;
    };
    if !statically_linked || sources.iter().all(|s| BUILT_IN.contains(&s.as_str())) {
        return Route::Libc;
    }
    if sources.first().is_some_and(|s| s == "files") {
        Route::FilesThenGetent
    } else {
        Route::Getent
    }
}

/// Whether this process was linked statically: it has no program
/// interpreter (the dynamic loader's base address is 0).
pub fn statically_linked() -> bool {
    static STATIC: OnceLock<bool> = OnceLock::new();
    // SAFETY: getauxval reads the process's auxiliary vector; no
    // preconditions.
    *STATIC.get_or_init(|| unsafe { libc::getauxval(libc::AT_BASE) } == 0)
}

/// The route for `db` in this process (`/etc/nsswitch.conf` read and
/// judged once, and only by a static process).
pub fn route(db: Db) -> Route {
    if !statically_linked() {
        return Route::Libc;
    }
    static ROUTES: OnceLock<[Route; 3]> = OnceLock::new();
    let routes = ROUTES.get_or_init(|| {
        let conf = std::fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
        [Db::Passwd, Db::Group, Db::Hosts]
            .map(|d| route_for(true, sources(&conf, d.name()).as_deref()))
    });
    routes[db as usize]
}

/// `getent`'s answers so far, by database and key.
type Answers = HashMap<(String, String), Vec<u8>>;

/// `getent DB KEY`'s output (empty when it found nothing or could not
/// run), asked once per process for each database and key.
pub fn getent(db: &str, key: &str) -> Vec<u8> {
    static ANSWERS: OnceLock<Mutex<Answers>> = OnceLock::new();
    let answers = ANSWERS.get_or_init(Default::default);
    let k = (db.to_string(), key.to_string());
    if let Some(a) = answers.lock().unwrap_or_else(|p| p.into_inner()).get(&k) {
        return a.clone();
    }
    // A key starting with '-' would be read as an option.
    let out = if key.is_empty() || key.starts_with('-') {
        Vec::new()
    } else {
        // On PATH, else where glibc installs it (a cron job's PATH may
        // lack it).
        let run = |prog: &str| {
            std::process::Command::new(prog)
                .args([db, key])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
        };
        run("getent")
            .or_else(|_| run("/usr/bin/getent"))
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
            .unwrap_or_default()
    };
    answers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(k, out.clone());
    out
}

/// The addresses of `host` (a name or an address, IPv6 without
/// brackets) with `port`, by the route of this process.
pub fn host_addrs(host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    if route(Db::Hosts) == Route::Libc {
        return (host, port).to_socket_addrs().map(Iterator::collect);
    }
    let addrs = ahosts(&String::from_utf8_lossy(&getent("ahosts", host)), port);
    if addrs.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("failed to look up address information for {host}"),
        ));
    }
    Ok(addrs)
}

/// `host:port` (IPv6 in brackets) as [`host_addrs`] resolves it.
pub fn socket_addrs(addr: &str) -> std::io::Result<Vec<SocketAddr>> {
    let bad = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("not host:port: {addr}"),
        )
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port = port.parse().map_err(|_| bad())?;
    host_addrs(host.trim_start_matches('[').trim_end_matches(']'), port)
}

/// The stream addresses of `getent ahosts` lines (`ADDR STREAM name`), in
/// its order, each once.
fn ahosts(out: &str, port: u16) -> Vec<SocketAddr> {
    let mut addrs = Vec::new();
    for line in out.lines() {
        let mut words = line.split_whitespace();
        let (Some(ip), Some("STREAM")) = (words.next(), words.next()) else {
            continue;
        };
        if let Ok(ip) = ip.parse::<IpAddr>() {
            let a = SocketAddr::new(ip, port);
            if !addrs.contains(&a) {
                addrs.push(a);
            }
        }
    }
    addrs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn sources_skip_comments_and_actions() {
        let conf =
            "# passwd: ldap\npasswd:  files systemd\ngroup: sss [NOTFOUND=return] files # x\n\
                    hosts: files [ NOTFOUND = return ] dns myhostname\nhosts:files dns\n";
        assert_eq!(sources(conf, "passwd"), Some(v(&["files", "systemd"])));
        assert_eq!(sources(conf, "group"), Some(v(&["sss", "files"])));
        // The last line for a database counts.
        assert_eq!(sources(conf, "hosts"), Some(v(&["files", "dns"])));
        assert_eq!(sources(conf, "shadow"), None);
        assert_eq!(sources("", "passwd"), None);
    }

    #[test]
    fn only_a_static_process_with_loadable_sources_avoids_the_c_library() {
        let files_sss = v(&["files", "sss"]);
        let sss_files = v(&["sss", "files"]);
        let built_in = v(&["files", "dns"]);
        assert_eq!(route_for(false, Some(&sss_files)), Route::Libc);
        assert_eq!(route_for(true, None), Route::Libc);
        assert_eq!(route_for(true, Some(&built_in)), Route::Libc);
        assert_eq!(route_for(true, Some(&files_sss)), Route::FilesThenGetent);
        assert_eq!(route_for(true, Some(&sss_files)), Route::Getent);
        assert_eq!(route_for(true, Some(&v(&["compat"]))), Route::Getent);
    }

    #[test]
    fn addresses_come_from_numbers_names_and_getent_lines() {
        let out = "10.0.0.2        STREAM node1\n10.0.0.2        DGRAM\n\
                   fd00::2         STREAM\n10.0.0.2        STREAM\n";
        assert_eq!(
            ahosts(out, 6817),
            vec![
                "10.0.0.2:6817".parse::<SocketAddr>().unwrap(),
                "[fd00::2]:6817".parse().unwrap()
            ]
        );
        assert_eq!(
            socket_addrs("[::1]:5").unwrap(),
            vec!["[::1]:5".parse::<SocketAddr>().unwrap()]
        );
        assert!(socket_addrs("localhost:6817")
            .unwrap()
            .iter()
            .all(|a| a.ip().is_loopback() && a.port() == 6817));
        assert!(socket_addrs("no-port").is_err());
        assert_eq!(
            ahosts(&String::from_utf8_lossy(&getent("ahosts", "localhost")), 1)
                .first()
                .map(|a| a.ip().is_loopback()),
            Some(true)
        );
    }

    #[test]
    fn getent_answers_and_refuses_options_as_keys() {
        let root = getent("passwd", "0");
        assert!(
            root.starts_with(b"root:"),
            "{}",
            String::from_utf8_lossy(&root)
        );
        assert!(getent("passwd", "--help").is_empty());
        assert!(getent("passwd", "no-such-user-here").is_empty());
    }
}
