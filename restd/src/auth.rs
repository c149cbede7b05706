//! Who is asking. Over TCP: the `X-SLURM-USER-TOKEN` JWT (HS256, the key
//! of `AuthAltParameters=jwt_key`), with `X-SLURM-USER-NAME` naming the
//! same user (or, for a token of root/SlurmUser, the user acted for, as
//! Slurm allows). Over the local Unix socket: the kernel's word for the
//! peer (`SO_PEERCRED`), no token. A request without a good identity gets
//! 401 and nothing else.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::connect_info::Connected;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use drover_proto::client::UserIds;
use drover_proto::sysdb::{passwd_by_name, passwd_by_uid};

use crate::reply::Failure;
use crate::App;

pub const TOKEN_HEADER: &str = "x-slurm-user-token";
pub const NAME_HEADER: &str = "x-slurm-user-name";

/// The connection a request came on.
#[derive(Debug, Clone)]
pub enum Peer {
    Tcp(SocketAddr),
    /// A local socket client, as the kernel reports it.
    Unix {
        uid: u32,
        gid: u32,
        pid: Option<i32>,
    },
}

impl Connected<IncomingStream<'_, tokio::net::TcpListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Peer {
        Peer::Tcp(*stream.remote_addr())
    }
}

impl Connected<IncomingStream<'_, tokio::net::UnixListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, tokio::net::UnixListener>) -> Peer {
        match stream.io().peer_cred() {
            Ok(c) => Peer::Unix {
                uid: c.uid(),
                gid: c.gid(),
                pid: c.pid(),
            },
            // No credentials: an identity nobody has, refused below.
            Err(_) => Peer::Unix {
                uid: u32::MAX,
                gid: u32::MAX,
                pid: None,
            },
        }
    }
}

/// The user a request acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub ids: UserIds,
    /// Home directory (a job's default working directory).
    pub home: String,
}

/// Supplementary groups of `name` (primary `gid` included), from the
/// system's group database.
pub fn user_groups(name: &str, gid: u32) -> Vec<u32> {
    drover_proto::sys::grouplist(name, gid)
}

fn lookup(name: &str) -> Option<Caller> {
    let pw = passwd_by_name(name)?;
    Some(Caller {
        name: pw.name.clone(),
        ids: UserIds {
            uid: pw.uid,
            gid: pw.gid,
            groups: user_groups(&pw.name, pw.gid),
        },
        home: pw.dir,
    })
}

/// How long a user's ids and groups are reused before the system's
/// databases are asked again.
const CALLER_TTL: std::time::Duration = std::time::Duration::from_secs(30);

/// Users looked up recently (a portal sends many requests as few users).
#[derive(Default)]
pub struct CallerCache {
    map: std::sync::Mutex<std::collections::HashMap<String, (std::time::Instant, Caller)>>,
}

impl CallerCache {
    fn get(&self, name: &str) -> Option<Caller> {
        let now = std::time::Instant::now();
        {
            let m = self.map.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, c)) = m.get(name) {
                if now.duration_since(*at) < CALLER_TTL {
                    return Some(c.clone());
                }
            }
        }
        let c = lookup(name)?;
        let mut m = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if m.len() > 10_000 {
            m.clear();
        }
        m.insert(name.to_string(), (now, c.clone()));
        Some(c)
    }
}

/// Decide who a TCP request speaks for, from its two headers.
pub fn from_token(
    app: &App,
    token: Option<&str>,
    user_name: Option<&str>,
    now: i64,
) -> Result<Caller, Failure> {
    let Some(key) = &app.jwt else {
        return Err(Failure::unauthorized(
            "JWT authentication is not configured (AuthAltParameters=jwt_key)",
        ));
    };
    let token = token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Failure::unauthorized("missing X-SLURM-USER-TOKEN"))?;
    let sun = key.verify(token, now).map_err(Failure::unauthorized)?;
    let acting = match user_name.filter(|n| !n.is_empty()) {
        None => sun.clone(),
        Some(n) if n == sun => sun.clone(),
        // Root and SlurmUser may act for another user (Slurm's rule).
        Some(n) if sun == "root" || sun == app.slurm_user => n.to_string(),
        Some(n) => {
            return Err(Failure::unauthorized(format!(
                "X-SLURM-USER-NAME {} does not match the token's user",
                drover_proto::text::printable(n)
            )))
        }
    };
    app.callers.get(&acting).ok_or_else(|| {
        Failure::unauthorized(format!(
            "unknown user {}",
            drover_proto::text::printable(&acting)
        ))
    })
}

/// Decide who a local-socket request speaks for: the peer's uid.
pub fn from_peer(app: &App, uid: u32) -> Result<Caller, Failure> {
    let pw = passwd_by_uid(uid)
        .ok_or_else(|| Failure::unauthorized(format!("unknown local user id {uid}")))?;
    app.callers
        .get(&pw.name)
        .ok_or_else(|| Failure::unauthorized("unknown local user"))
}

fn header<'r>(req: &'r Request, name: &str) -> Option<&'r str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Middleware: put the [`Caller`] in the request's extensions, or answer 401.
pub async fn authenticate(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    mut req: Request,
    next: Next,
) -> Response {
    let caller = match &peer {
        Peer::Unix { uid, .. } => from_peer(&app, *uid),
        Peer::Tcp(addr) => from_token(
            &app,
            header(&req, TOKEN_HEADER),
            header(&req, NAME_HEADER),
            drover_proto::auth::now_secs(),
        )
        .inspect_err(|f| {
            drover_proto::authlog::refused(Some(*addr), "jwt", &f.description);
        }),
    };
    match caller {
        Ok(c) => {
            req.extensions_mut().insert(c);
            next.run(req).await
        }
        Err(f) => f.into_response(),
    }
}
