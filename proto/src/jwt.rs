//! JSON Web Tokens for the REST API, as Slurm's `auth/jwt` makes them:
//! HS256 over the key file named by `AuthAltParameters=jwt_key=PATH`, with
//! the claims `iat`, `exp` and `sun` (the user name). The controller mints
//! them (`scontrol token`); the REST daemon verifies them. The signing is
//! the `jsonwebtoken` crate's, its HMAC from `ring` (a small provider below,
//! so no second crypto library is built).

use std::path::Path;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

/// `scontrol token` without `lifespan=`: Slurm's default, 30 minutes.
pub const DEFAULT_LIFESPAN: i64 = 1800;

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Claims {
    pub iat: i64,
    pub exp: i64,
    /// Slurm's claim for the user name.
    pub sun: String,
}

/// The HS256 key, loaded once.
#[derive(Clone)]
pub struct JwtKey {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKey(..)")
    }
}

struct RingHs256(ring::hmac::Key);

impl signature::Signer<Vec<u8>> for RingHs256 {
    fn try_sign(&self, msg: &[u8]) -> Result<Vec<u8>, signature::Error> {
        Ok(ring::hmac::sign(&self.0, msg).as_ref().to_vec())
    }
}

impl JwtSigner for RingHs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

impl signature::Verifier<Vec<u8>> for RingHs256 {
    fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> Result<(), signature::Error> {
        ring::hmac::verify(&self.0, msg, sig).map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingHs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::HS256
    }
}

fn unsupported() -> jsonwebtoken::errors::Error {
    jsonwebtoken::errors::ErrorKind::InvalidAlgorithm.into()
}

fn signer(alg: &Algorithm, key: &EncodingKey) -> jsonwebtoken::errors::Result<Box<dyn JwtSigner>> {
    if *alg != Algorithm::HS256 {
        return Err(unsupported());
    }
    let secret = key.as_bytes();
    Ok(Box::new(RingHs256(ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        secret,
    ))))
}

fn verifier(
    alg: &Algorithm,
    key: &DecodingKey,
) -> jsonwebtoken::errors::Result<Box<dyn JwtVerifier>> {
    if *alg != Algorithm::HS256 {
        return Err(unsupported());
    }
    let secret = key.try_get_as_bytes()?;
    Ok(Box::new(RingHs256(ring::hmac::Key::new(
        ring::hmac::HMAC_SHA256,
        secret,
    ))))
}

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: jsonwebtoken::crypto::KeyUtils::new_unimplemented(),
};

fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only if another provider was installed first: then that one serves.
        let _ = PROVIDER.install_default();
    });
}

impl JwtKey {
    pub fn from_bytes(bytes: &[u8]) -> JwtKey {
        JwtKey {
            bytes: bytes.to_vec(),
        }
    }

    /// Read the key file (its bytes as they are, like Slurm); refuses one
    /// that group or others can read, or one shorter than 16 bytes.
    pub fn load(path: &Path) -> Result<JwtKey, String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("cannot read jwt_key {}: {e}", path.display()))?;
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "jwt_key {} is readable by group or others (mode {:o}): chmod 600 it",
                path.display(),
                meta.mode() & 0o777
            ));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| format!("cannot read jwt_key {}: {e}", path.display()))?;
        if bytes.len() < 16 {
            return Err(format!(
                "jwt_key {} is too short (need at least 16 bytes)",
                path.display()
            ));
        }
        Ok(JwtKey { bytes })
    }

    /// A token for `user`, issued at `now`, valid `lifespan` seconds.
    pub fn mint(&self, user: &str, now: i64, lifespan: i64) -> Result<String, String> {
        self.sign(&Claims {
            iat: now,
            exp: now.saturating_add(lifespan),
            sun: user.to_string(),
        })
    }

    /// Sign any claims (tests make expired tokens with it).
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        install();
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(&self.bytes),
        )
        .map_err(|e| format!("cannot sign token: {e}"))
    }

    /// The user a token speaks for, if it is signed with this key, names a
    /// user and has not expired at `now` (no leeway).
    pub fn verify(&self, token: &str, now: i64) -> Result<String, String> {
        install();
        let mut v = Validation::new(Algorithm::HS256);
        v.leeway = 0;
        v.validate_exp = false; // checked below against the caller's clock
        v.set_required_spec_claims(&["exp"]);
        let data =
            jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_secret(&self.bytes), &v)
                .map_err(|e| format!("invalid token: {e}"))?;
        let c = data.claims;
        if c.exp <= now {
            return Err("token expired".into());
        }
        if c.sun.is_empty() {
            return Err("token names no user".into());
        }
        Ok(c.sun)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> JwtKey {
        JwtKey::from_bytes(b"0123456789abcdef0123456789abcdef")
    }

    #[test]
    fn round_trip() {
        let t = key().mint("alice", 1_000, 60).unwrap();
        assert_eq!(t.split('.').count(), 3);
        assert_eq!(key().verify(&t, 1_000).unwrap(), "alice");
        assert_eq!(key().verify(&t, 1_059).unwrap(), "alice");
    }

    #[test]
    fn expired_forged_and_garbage_refused() {
        let t = key().mint("alice", 1_000, 60).unwrap();
        assert!(key().verify(&t, 1_060).unwrap_err().contains("expired"));
        let other = JwtKey::from_bytes(b"another key, sixteen bytes+");
        assert!(other.verify(&t, 1_000).is_err());
        // Swap the claims for another user's, keep the signature.
        let bob = key().mint("bob", 1_000, 60).unwrap();
        let parts: Vec<&str> = t.split('.').collect();
        let bob_parts: Vec<&str> = bob.split('.').collect();
        let forged = format!("{}.{}.{}", parts[0], bob_parts[1], parts[2]);
        assert!(key().verify(&forged, 1_000).is_err());
        for bad in ["", "a.b.c", "garbage", "..."] {
            assert!(key().verify(bad, 1_000).is_err(), "{bad}");
        }
        let nobody = key()
            .sign(&Claims {
                iat: 1_000,
                exp: 2_000,
                sun: String::new(),
            })
            .unwrap();
        assert!(key().verify(&nobody, 1_000).is_err());
    }

    #[test]
    fn alg_none_refused() {
        // {"alg":"none"} header with valid claims and no signature.
        let t = key().mint("alice", 1_000, 60).unwrap();
        let claims = t.split('.').nth(1).unwrap();
        let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{claims}.");
        assert!(key().verify(&none, 1_000).is_err());
    }
}
