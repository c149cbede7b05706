//! `scontrol ping` (every controller, as Slurm prints them) and
//! `scontrol takeover [INDEX]` (a backup takes control now).

use std::path::Path;
use std::time::Duration;

use drover_conf::Config;
use drover_proto::client::Credential;
use drover_proto::{PingRequest, PingResponse, TakeoverRequest};

use crate::conn;

/// `primary`, `backup`, `backupN` (Slurm's words).
fn mode(index: usize, count: usize) -> String {
    match index {
        0 => "primary".into(),
        1 if count == 2 => "backup".into(),
        i => format!("backup{i}"),
    }
}

/// (name, host:port) of each controller, primary first.
fn controllers(cfg: &Config) -> Vec<(String, String)> {
    let addrs = cfg.controller_addrs();
    let names = cfg
        .slurmctld_host
        .iter()
        .map(|h| h.name.clone())
        .chain(std::iter::once(conn::controller_name(cfg)));
    names.zip(addrs.split(',').map(str::to_string)).collect()
}

async fn ping_one(addr: &str, socket: &str) -> Option<PingResponse> {
    let mut c = drover_proto::client::controller(addr, Credential::user(socket.into())).ok()?;
    let mut req = tonic::Request::new(PingRequest {});
    req.set_timeout(Duration::from_secs(5));
    c.ping(req).await.ok().map(|r| r.into_inner())
}

/// One line per controller, `Slurmctld(primary) at HOST is UP|DOWN`; a
/// controller in standby answers, so it is UP. Exit 0 when one is in
/// control.
pub async fn ping(cfg: &Config) -> i32 {
    let socket = cfg.auth_socket();
    if let Err(e) = drover_proto::auth::probe_socket(Path::new(&socket)) {
        eprintln!("scontrol: error: {e}");
    }
    let all = controllers(cfg);
    let mut in_control = false;
    for (i, (name, addr)) in all.iter().enumerate() {
        let answer = ping_one(addr, &socket).await;
        in_control |= answer.as_ref().is_some_and(|p| !p.standby);
        println!(
            "Slurmctld({}) at {name} is {}",
            mode(i, all.len()),
            if answer.is_some() { "UP" } else { "DOWN" }
        );
    }
    if in_control {
        0
    } else {
        1
    }
}

/// Ask backup `index` (1 unless given) to take control now.
pub async fn takeover(cfg: &Config, index: usize) -> i32 {
    let all = controllers(cfg);
    let Some((name, addr)) = all.get(index).filter(|_| index > 0 && all.len() > 1) else {
        eprintln!(
            "scontrol: error: takeover: no backup controller {index} (SlurmctldHost lists {})",
            cfg.slurmctld_host.len()
        );
        return 1;
    };
    let socket = cfg.auth_socket();
    if let Err(e) = drover_proto::auth::probe_socket(Path::new(&socket)) {
        eprintln!("scontrol: error: {e}");
        return 1;
    }
    let mut c = match drover_proto::client::controller(addr, Credential::user(socket.into())) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("scontrol: error: {e}");
            return 1;
        }
    };
    match c.takeover(TakeoverRequest {}).await {
        Ok(_) => 0,
        Err(st) => {
            conn::report("scontrol", &format!("slurm_takeover error ({name}): "), &st);
            1
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn modes_as_slurm_names_them() {
        assert_eq!(super::mode(0, 1), "primary");
        assert_eq!(super::mode(1, 2), "backup");
        assert_eq!(super::mode(1, 3), "backup1");
    }
}
