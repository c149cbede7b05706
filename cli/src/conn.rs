//! Finding the configuration and talking to the controller.

use std::path::{Path, PathBuf};

use drover_conf::Config;
use drover_proto::client::{Controller, Credential, Signed};
use drover_proto::standby::NOT_ACTIVE;

/// Where the configuration lives unless `$DROVER_CONF`/`$SLURM_CONF` say otherwise.
pub const DEFAULT_CONF: &str = drover_conf::locate::DEFAULT_CONF;

/// Slurm's wording for a controller that cannot be reached.
pub const CONNECT_FAILURE: &str = "Unable to contact slurm controller (connect failure)";

/// The configuration file: `$DROVER_CONF`, then `$SLURM_CONF`, then the
/// default, then a configless host's cached copy.
pub fn config_path() -> PathBuf {
    drover_conf::locate::config_path()
}

/// Load the configuration; on error print `<cmd>: error: <problem>`.
pub fn load_config(cmd: &str) -> Result<Config, i32> {
    let path = config_path();
    match drover_conf::slurmconf::load(&path) {
        Ok((cfg, _warnings)) => {
            drover_proto::tls::set_client_from(&cfg, &path, false);
            Ok(cfg)
        }
        Err(e) => {
            eprintln!("{cmd}: error: {e}");
            Err(1)
        }
    }
}

/// The config and a runtime: what every command that talks to the
/// controller needs first.
pub fn setup(cmd: &str) -> Result<(Config, tokio::runtime::Runtime), i32> {
    let cfg = load_config(cmd)?;
    Ok((cfg, runtime()?))
}

/// A single-threaded runtime: the commands do one thing at a time and must
/// start fast.
pub fn runtime() -> Result<tokio::runtime::Runtime, i32> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("drover: error: cannot start the runtime: {e}");
            1
        })
}

/// Name of the primary controller host (for `scontrol ping`).
pub fn controller_name(cfg: &Config) -> String {
    cfg.slurmctld_host
        .first()
        .map(|h| h.name.clone())
        .unwrap_or_else(|| "localhost".to_string())
}

/// A controller's local socket on this host, when the configuration has
/// one and a controller answers there: then calls go there, without a
/// credential (the kernel says who the caller is); else over TCP with
/// credentials from the auth socket.
type Local = Option<(std::path::PathBuf, std::os::unix::net::UnixStream)>;

/// Connect to the controller (lazily: the first call reports a failure),
/// through its local socket on its own host. Must be called inside the
/// runtime.
pub fn client_for(cmd: &str, cfg: &Config) -> Result<Controller, i32> {
    signed_for(cmd, cfg).map(drover_proto::client::controller_of)
}

/// [`client_for`]'s connection itself, for calls made without the
/// generated client (`drover_proto::joblist`).
pub fn signed_for(cmd: &str, cfg: &Config) -> Result<Signed, i32> {
    if let Some(local) = drover_proto::client::local_controller(cfg) {
        return signed_via(cmd, cfg, Some(local));
    }
    let probe = drover_proto::auth::probe_socket(Path::new(&cfg.auth_socket()));
    probe.map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        eprintln!("{cmd}: error: {CONNECT_FAILURE}");
        1
    })?;
    signed_via(cmd, cfg, None)
}

/// [`client_for`], trying again for up to `patience` while the
/// authentication socket does not answer (the daemon serving it restarts).
pub async fn client_waiting(
    cmd: &str,
    cfg: &Config,
    patience: std::time::Duration,
) -> Result<Controller, i32> {
    let deadline = std::time::Instant::now() + patience;
    let sock = cfg.auth_socket();
    loop {
        if let Some(local) = drover_proto::client::local_controller(cfg) {
            return controller_via(cmd, cfg, Some(local));
        }
        let probe = drover_proto::auth::probe_socket(Path::new(&sock));
        if probe.is_ok() || std::time::Instant::now() >= deadline {
            return controller_with(cmd, cfg, probe);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn controller_with(cmd: &str, cfg: &Config, probe: Result<(), String>) -> Result<Controller, i32> {
    probe.map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        eprintln!("{cmd}: error: {CONNECT_FAILURE}");
        1
    })?;
    controller_via(cmd, cfg, None)
}

fn controller_via(cmd: &str, cfg: &Config, local: Local) -> Result<Controller, i32> {
    signed_via(cmd, cfg, local).map(drover_proto::client::controller_of)
}

fn signed_via(cmd: &str, cfg: &Config, local: Local) -> Result<Signed, i32> {
    let cred = Credential::user(cfg.auth_socket().into());
    let targets = drover_proto::client::targets_via(cfg, local).map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        1
    })?;
    Ok(Signed::new(targets, cred))
}

/// The Scheduler service (sprio, sshare, reservations) on the controller's
/// port, with the caller's credential; errors printed as `<cmd>: error: ...`.
pub fn scheduler_for(cmd: &str, cfg: &Config) -> Result<drover_proto::client::Scheduler, i32> {
    let socket = cfg.auth_socket();
    let local = drover_proto::client::local_controller(cfg);
    if local.is_none() {
        drover_proto::auth::probe_socket(Path::new(&socket)).map_err(|e| {
            eprintln!("{cmd}: error: {e}");
            1
        })?;
    }
    let targets = drover_proto::client::targets_via(cfg, local).map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        1
    })?;
    drover_proto::client::scheduler_over(targets, Credential::user(socket.into())).map_err(|e| {
        eprintln!("{cmd}: error: {e}");
        1
    })
}

/// An I/O error as the C library's strerror words it (Slurm's `%m`),
/// without Rust's ` (os error N)`.
pub fn os_error_text(e: &std::io::Error) -> String {
    let t = e.to_string();
    t.split(" (os error").next().unwrap_or_default().to_string()
}

/// Phase timings on stderr when `DROVER_TIMING` is set (for benchmarks).
pub struct Timer {
    start: std::time::Instant,
    on: bool,
}

impl Timer {
    pub fn new() -> Timer {
        Timer {
            start: std::time::Instant::now(),
            on: std::env::var_os("DROVER_TIMING").is_some(),
        }
    }

    pub fn mark(&self, what: &str) {
        if self.on {
            eprintln!("timing: {what}: {:?}", self.start.elapsed());
        }
    }
}

impl Default for Timer {
    fn default() -> Self {
        Timer::new()
    }
}

/// What went wrong with a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcError {
    /// The controller could not be reached.
    Connect,
    /// The controller answered with an error; its message is Slurm's text.
    Status(String),
}

impl RpcError {
    pub fn message(&self) -> String {
        match self {
            RpcError::Connect => CONNECT_FAILURE.to_string(),
            RpcError::Status(m) => m.clone(),
        }
    }
}

pub fn classify(st: &tonic::Status) -> RpcError {
    use tonic::Code;
    // A TLS refusal is a connect failure whose reason the admin needs.
    if let Some(why) = drover_proto::tls::failure_reason(st) {
        return RpcError::Status(format!("{CONNECT_FAILURE}: {why}"));
    }
    match st.code() {
        // A standby controller says so (it was the only one configured, or
        // none took control within the wait).
        Code::Unavailable if st.message() == drover_proto::standby::NOT_ACTIVE => {
            RpcError::Status(format!("{CONNECT_FAILURE}: {NOT_ACTIVE}"))
        }
        Code::Unavailable => RpcError::Connect,
        // The connection closed under the call (a controller that shuts
        // new connections at once: its per-peer limit; or one that died).
        Code::Cancelled => RpcError::Connect,
        Code::Unknown | Code::Internal
            if st.message().contains("transport error")
                || st.message().contains("connection")
                || st.message().contains("connect") =>
        {
            RpcError::Connect
        }
        Code::PermissionDenied if st.message().is_empty() => {
            RpcError::Status("Access/permission denied".to_string())
        }
        Code::NotFound if st.message().is_empty() => {
            RpcError::Status("Invalid job id specified".to_string())
        }
        _ => {
            let m = st.message();
            RpcError::Status(if m.is_empty() {
                format!("{:?}", st.code())
            } else {
                m.to_string()
            })
        }
    }
}

/// Print a failed call: connect failures as `<cmd>: error: Unable to contact
/// slurm controller (connect failure)`, others as `<prefix>: <message>`.
pub fn report(cmd: &str, prefix: &str, st: &tonic::Status) {
    match classify(st) {
        RpcError::Connect => eprintln!("{cmd}: error: {CONNECT_FAILURE}"),
        RpcError::Status(m) => eprintln!("{prefix}{m}"),
    }
}

/// The line slurmctld's error message adds before a refused submission for
/// an unknown partition (`invalid partition specified: NAME`, NAME the
/// first requested one the config lacks); None for other refusals.
pub fn partition_note(st: &tonic::Status, requested: &str, cfg: &Config) -> Option<String> {
    if !st.message().starts_with("Invalid partition name specified") {
        return None;
    }
    let names: Vec<&str> = requested.split(',').filter(|p| !p.is_empty()).collect();
    let bad = names
        .iter()
        .find(|n| !cfg.partitions.iter().any(|p| p.name == **n))
        .or(names.first())?;
    Some(format!("invalid partition specified: {bad}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_statuses() {
        assert_eq!(
            classify(&tonic::Status::unavailable("tcp connect error")),
            RpcError::Connect
        );
        assert_eq!(
            classify(&tonic::Status::unknown("transport error")),
            RpcError::Connect
        );
        assert_eq!(
            classify(&tonic::Status::cancelled("operation was canceled")),
            RpcError::Connect
        );
        assert_eq!(
            classify(&tonic::Status::unavailable(NOT_ACTIVE)).message(),
            format!("{CONNECT_FAILURE}: not the active controller (standby, or taking control)")
        );
        assert_eq!(
            classify(&tonic::Status::permission_denied(
                "Access/permission denied"
            )),
            RpcError::Status("Access/permission denied".into())
        );
        assert_eq!(
            classify(&tonic::Status::not_found("")),
            RpcError::Status("Invalid job id specified".into())
        );
        assert_eq!(
            classify(&tonic::Status::invalid_argument(
                "Invalid partition name specified"
            ))
            .message(),
            "Invalid partition name specified"
        );
    }
}
