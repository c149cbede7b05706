//! `TLSType` and `TLSParameters` (slurm.conf and droverdbd.conf): whether
//! traffic between hosts is encrypted, and where the certificates are.
//! Pure: values in, typed settings or an error out.

use std::path::{Path, PathBuf};

/// `TLSType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// Not set: TLS wherever a daemon listens on, or a client connects to,
    /// an address that is not loopback.
    #[default]
    Auto,
    /// `tls/rustls` (or Slurm's `tls/s2n`): TLS on every connection,
    /// loopback included.
    On,
    /// `tls/none`: no TLS anywhere (daemons listening beyond loopback warn).
    Off,
}

/// The TLS settings of one configuration file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsConf {
    pub mode: TlsMode,
    /// `ca_cert_file=`: the cluster CA certificate(s) every host trusts.
    pub ca_cert_file: Option<String>,
    /// `cert_file=`: this host's certificate (chain).
    pub cert_file: Option<String>,
    /// `cert_key_file=`: this host's private key.
    pub cert_key_file: Option<String>,
}

/// The directory, under the configuration file's, where `drover ca` keeps
/// the CA and host certificates unless `TLSParameters` says otherwise.
pub const TLS_DIR: &str = "tls";

/// Parse a `TLSType` value.
pub fn parse_type(v: &str) -> Result<TlsMode, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => Ok(TlsMode::Auto),
        "tls/rustls" | "tls/s2n" | "rustls" => Ok(TlsMode::On),
        "tls/none" | "none" => Ok(TlsMode::Off),
        _ => Err(format!(
            "invalid TLSType '{v}' (expected tls/rustls or tls/none)"
        )),
    }
}

/// Parse a `TLSParameters` value (`key=value,...`) into `conf`.
pub fn parse_parameters(v: &str, conf: &mut TlsConf) -> Result<(), String> {
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((k, val)) = item.split_once('=') else {
            return Err(format!("TLSParameters: '{item}' is not key=value"));
        };
        let val = val.trim();
        if val.is_empty() {
            return Err(format!("TLSParameters: {k} has no value"));
        }
        let slot = match k.trim().to_ascii_lowercase().as_str() {
            "ca_cert_file" => &mut conf.ca_cert_file,
            "cert_file" => &mut conf.cert_file,
            "cert_key_file" => &mut conf.cert_key_file,
            _ => {
                return Err(format!(
                "TLSParameters: unknown key '{k}' (known: ca_cert_file, cert_file, cert_key_file)"
            ))
            }
        };
        *slot = Some(val.to_string());
    }
    Ok(())
}

/// Where the files are, for host `host` (short name) whose configuration
/// file is in `conf_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca_cert: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsConf {
    /// The files: the configured ones, else `CONF_DIR/tls/ca.crt`,
    /// `CONF_DIR/tls/HOST.crt` and `CONF_DIR/tls/HOST.key`.
    pub fn files(&self, conf_dir: &Path, host: &str) -> TlsFiles {
        let dir = conf_dir.join(TLS_DIR);
        let pick = |set: &Option<String>, default: String| {
            set.as_ref()
                .map_or_else(|| dir.join(default), PathBuf::from)
        };
        TlsFiles {
            ca_cert: pick(&self.ca_cert_file, "ca.crt".into()),
            cert: pick(&self.cert_file, format!("{host}.crt")),
            key: pick(&self.cert_key_file, format!("{host}.key")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types() {
        assert_eq!(parse_type(""), Ok(TlsMode::Auto));
        assert_eq!(parse_type("tls/rustls"), Ok(TlsMode::On));
        assert_eq!(parse_type("TLS/S2N"), Ok(TlsMode::On));
        assert_eq!(parse_type("tls/none"), Ok(TlsMode::Off));
        assert!(parse_type("tls/openssl")
            .unwrap_err()
            .contains("tls/openssl"));
    }

    #[test]
    fn parameters_and_default_files() {
        let mut c = TlsConf::default();
        parse_parameters("ca_cert_file=/etc/ca.pem, cert_key_file=/k", &mut c).unwrap();
        let f = c.files(Path::new("/etc/drover"), "node1");
        assert_eq!(f.ca_cert, PathBuf::from("/etc/ca.pem"));
        assert_eq!(f.cert, PathBuf::from("/etc/drover/tls/node1.crt"));
        assert_eq!(f.key, PathBuf::from("/k"));
        assert!(parse_parameters("bogus=1", &mut c)
            .unwrap_err()
            .contains("bogus"));
        assert!(parse_parameters("cert_file", &mut c).is_err());
        assert!(parse_parameters("cert_file=", &mut c).is_err());
    }
}
