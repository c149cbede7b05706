//! Making the cluster CA and host certificates (rcgen, ECDSA P-256): PEM
//! text in and out, no files.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

/// A certificate and its private key, both PEM.
pub struct Pair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// Clocks of the hosts may differ a little: certificates start to be valid
/// this much before they are made.
const BACKDATE: Duration = Duration::hours(1);

/// The CA's subject and settings. The name is derived from the key, so
/// [`issuer`] can rebuild exactly what [`new_ca`] signed with from the key
/// alone (the subject and key identifier a host certificate points to).
fn ca_params(key: &KeyPair, days: i64) -> CertificateParams {
    let mut p = CertificateParams::default();
    let id = p.key_identifier(key);
    let hex: String = id.iter().take(4).map(|b| format!("{b:02x}")).collect();
    p.distinguished_name
        .push(DnType::CommonName, format!("Drover cluster CA {hex}"));
    p.distinguished_name
        .push(DnType::OrganizationName, "Drover");
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = OffsetDateTime::now_utc();
    p.not_before = now - BACKDATE;
    p.not_after = now + Duration::days(days);
    p
}

/// A new self-signed cluster CA valid for `days`.
pub fn new_ca(days: i64) -> Result<Pair, String> {
    let key = KeyPair::generate().map_err(|e| format!("cannot make a key: {e}"))?;
    let cert = ca_params(&key, days)
        .self_signed(&key)
        .map_err(|e| format!("cannot make the CA certificate: {e}"))?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The signer for CA key `key_pem`.
fn issuer(key_pem: &str) -> Result<Issuer<'static, KeyPair>, String> {
    let key = KeyPair::from_pem(key_pem).map_err(|e| format!("not a CA key: {e}"))?;
    Ok(Issuer::new(ca_params(&key, 1), key))
}

/// What goes in a host certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The host's name (its certificate's common name and first DNS name).
    pub name: String,
    /// More DNS names and addresses it answers on.
    pub alt: Vec<String>,
    /// Valid for this many days (0: already expired, for tests of refusal).
    pub days: i64,
}

/// A host certificate (server and client use) signed by the CA whose key
/// is `ca_key_pem`.
pub fn new_host(ca_key_pem: &str, host: &HostSpec) -> Result<Pair, String> {
    let issuer = issuer(ca_key_pem)?;
    let key = KeyPair::generate().map_err(|e| format!("cannot make a key: {e}"))?;
    let mut p = CertificateParams::default();
    p.distinguished_name
        .push(DnType::CommonName, host.name.clone());
    let mut sans = Vec::new();
    for n in std::iter::once(&host.name).chain(&host.alt) {
        let san = match n.parse::<IpAddr>() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName(
                n.clone()
                    .try_into()
                    .map_err(|e| format!("'{n}' is not a host name: {e}"))?,
            ),
        };
        if !sans.contains(&san) {
            sans.push(san);
        }
    }
    p.subject_alt_names = sans;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    p.use_authority_key_identifier_extension = true;
    let now = OffsetDateTime::now_utc();
    p.not_before = now - BACKDATE;
    p.not_after = if host.days <= 0 {
        now - Duration::minutes(1)
    } else {
        now + Duration::days(host.days)
    };
    let cert = p
        .signed_by(&key, &issuer)
        .map_err(|e| format!("cannot sign the certificate of {}: {e}", host.name))?;
    Ok(Pair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_certificate_names_the_host_and_its_addresses() {
        let ca = new_ca(30).unwrap();
        let host = HostSpec {
            name: "node1".into(),
            alt: vec!["10.1.0.2".into(), "node1".into()],
            days: 30,
        };
        let h = new_host(&ca.key_pem, &host).unwrap();
        assert!(h.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(h.key_pem.contains("PRIVATE KEY"));
        let bad = HostSpec {
            name: "no spaces allowed".into(),
            alt: vec![],
            days: 1,
        };
        // rcgen accepts most IA5 strings; either way no panic.
        let _ = new_host(&ca.key_pem, &bad);
        assert!(new_host("not a key", &host).is_err());
    }
}
