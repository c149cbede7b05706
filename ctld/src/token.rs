//! `scontrol token`: JSON Web Tokens for the REST API (droverrestd), signed
//! with `AuthAltParameters=jwt_key=PATH`. A user gets one for themselves;
//! only root and SlurmUser may get one for another user (Slurm's rule).

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::jwt::{JwtKey, DEFAULT_LIFESPAN};
use drover_proto::sysdb::{passwd_by_name, passwd_by_uid};
use drover_proto::{MintTokenRequest, MintTokenResponse};

use crate::submit::msg;

/// Mint a token for the caller (or, for root/SlurmUser, for `username`).
pub fn mint(
    who: &Identity,
    req: &MintTokenRequest,
    key_path: Option<&str>,
    slurm_user: &str,
    now: i64,
) -> Result<MintTokenResponse, Refusal> {
    let Some(path) = key_path else {
        return Err(Refusal::failed_precondition(
            "JWT authentication is not configured (AuthAltParameters=jwt_key=PATH)",
        ));
    };
    let caller = passwd_by_uid(who.uid)
        .map(|p| p.name)
        .ok_or_else(|| Refusal::invalid_argument(format!("Invalid user id: {}", who.uid)))?;
    let username = if req.username.is_empty() {
        caller.clone()
    } else {
        req.username.clone()
    };
    if username != caller {
        let slurm_uid = passwd_by_name(slurm_user).map(|p| p.uid);
        if who.uid != 0 && Some(who.uid) != slurm_uid {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        if passwd_by_name(&username).is_none() {
            return Err(Refusal::invalid_argument(format!(
                "Invalid user: {}",
                drover_proto::text::printable(&username)
            )));
        }
    }
    if req.lifespan < 0 {
        return Err(Refusal::invalid_argument("Invalid lifespan"));
    }
    let lifespan = if req.lifespan == 0 {
        DEFAULT_LIFESPAN
    } else {
        req.lifespan
    };
    let key = JwtKey::load(std::path::Path::new(path)).map_err(|e| {
        tracing::error!("scontrol token: {e}");
        Refusal::internal("JWT key unusable (see the controller's log)")
    })?;
    let token = key
        .mint(&username, now, lifespan)
        .map_err(Refusal::internal)?;
    tracing::info!(
        "token for {username} (lifespan {lifespan} s) minted for uid {}",
        who.uid
    );
    Ok(MintTokenResponse {
        token,
        username,
        expires: now.saturating_add(lifespan),
    })
}
