//! The controller's local socket (`SlurmctldParameters=drover_local_socket=PATH`,
//! Drover's own): the controller serves its gRPC on a Unix socket as well as
//! on TCP, and a command on the controller's host talks to it there; the
//! kernel says who the caller is, so no credential is fetched or sent.
//! Default: `ctld.sock` beside the auth socket (`AuthInfo=socket=`, so
//! `/run/drover/ctld.sock`); `none` turns it off. Pure.

use std::path::{Path, PathBuf};

use crate::slurmconf::Config;

/// The `SlurmctldParameters` key.
pub const KEY: &str = "drover_local_socket";
/// The socket's file name in the auth socket's directory by default.
pub const DEFAULT_NAME: &str = "ctld.sock";

/// The socket's path from a `SlurmctldParameters` value and the auth
/// socket's path; None when turned off (`none` or an empty value).
pub fn path(slurmctld_parameters: Option<&str>, auth_socket: &str) -> Option<PathBuf> {
    let set = slurmctld_parameters
        .unwrap_or("")
        .split(',')
        .filter_map(|w| w.split_once('='))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case(KEY))
        .map(|(_, v)| v.trim())
        .next_back();
    match set {
        Some(v) if v.is_empty() || v.eq_ignore_ascii_case("none") => None,
        Some(v) => Some(PathBuf::from(v)),
        None => Some(
            Path::new(auth_socket)
                .parent()
                .unwrap_or(Path::new(""))
                .join(DEFAULT_NAME),
        ),
    }
}

impl Config {
    /// Where the controller serves its local socket ([`path`]).
    pub fn local_socket(&self) -> Option<PathBuf> {
        path(self.get("SlurmctldParameters"), &self.auth_socket())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beside_the_auth_socket_by_default() {
        assert_eq!(
            path(None, "/run/drover/auth.sock"),
            Some(PathBuf::from("/run/drover/ctld.sock"))
        );
        assert_eq!(
            path(Some("enable_configless,rl_enable"), "/tmp/c/run/auth.sock"),
            Some(PathBuf::from("/tmp/c/run/ctld.sock"))
        );
        assert_eq!(path(None, "auth.sock"), Some(PathBuf::from("ctld.sock")));
    }

    #[test]
    fn set_or_turned_off() {
        assert_eq!(
            path(
                Some("rl_enable, Drover_Local_Socket = /var/run/x.sock"),
                "/run/drover/auth.sock"
            ),
            Some(PathBuf::from("/var/run/x.sock"))
        );
        assert_eq!(path(Some("drover_local_socket=none"), "/a/auth.sock"), None);
        assert_eq!(path(Some("drover_local_socket=NONE"), "/a/auth.sock"), None);
        assert_eq!(path(Some("drover_local_socket="), "/a/auth.sock"), None);
        // The last one wins, as with every repeated key.
        assert_eq!(
            path(
                Some("drover_local_socket=none,drover_local_socket=/b.sock"),
                "/a/auth.sock"
            ),
            Some(PathBuf::from("/b.sock"))
        );
    }
}
