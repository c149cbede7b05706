//! Talking to the accounting daemon (sacct, sacctmgr, sreport, seff).

use std::path::Path;

use drover_conf::Config;
use drover_proto::client::{Accounting, Credential};

/// Slurm's wording when accounting is off.
pub const DISABLED: &str = "Slurm accounting storage is disabled";

/// Is accounting storage switched off (`AccountingStorageType` none/unset)?
pub fn accounting_disabled(storage_type: &str) -> bool {
    let t = storage_type.trim().to_ascii_lowercase();
    t.is_empty() || t == "none" || t == "accounting_storage/none"
}

/// A client for the daemon, or the exit code after printing why not.
/// Must be called inside the runtime.
pub fn client(cmd: &str, cfg: &Config) -> Result<Accounting, i32> {
    if accounting_disabled(&cfg.accounting_storage_type) {
        eprintln!("{cmd}: error: {DISABLED}");
        return Err(1);
    }
    let socket = cfg.auth_socket();
    if let Err(e) = drover_proto::auth::probe_socket(Path::new(&socket)) {
        eprintln!("{cmd}: error: {e}");
        return Err(1);
    }
    drover_proto::client::accounting(&cfg.dbd_addr(), Credential::user(socket.into())).map_err(
        |e| {
            eprintln!("{cmd}: error: {e}");
            1
        },
    )
}

/// Print a failed call the way Slurm's tools do.
pub fn report(cmd: &str, st: &tonic::Status) {
    use tonic::Code;
    let m = st.message();
    match st.code() {
        Code::Unavailable if !m.starts_with("Problem talking") => {
            eprintln!("{cmd}: error: Problem talking to the database: Connection refused")
        }
        Code::Unknown | Code::Internal if m.contains("transport") || m.contains("connect") => {
            eprintln!("{cmd}: error: Problem talking to the database: Connection refused")
        }
        _ => eprintln!("{cmd}: error: {m}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_types() {
        assert!(accounting_disabled(""));
        assert!(accounting_disabled("accounting_storage/none"));
        assert!(accounting_disabled("NONE"));
        assert!(!accounting_disabled("accounting_storage/slurmdbd"));
    }
}
