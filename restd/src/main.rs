//! droverrestd [-f CONFIG] [LISTEN ...]: serve Slurm's REST API.
//! LISTEN is `HOST:PORT` (JWT authentication) or `unix:PATH` (the peer's
//! kernel identity); default `127.0.0.1:6820`, like slurmrestd's port.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::Arc;

use drover_proto::auth::ClusterKey;
use drover_proto::jwt::JwtKey;
use drover_restd::auth::Peer;
use drover_restd::{router, App, DEFAULT_MAX_BODY};

const USAGE: &str =
    "Usage: droverrestd [-f CONFIG] [--max-body BYTES] [HOST:PORT | unix:PATH ...]\n";

struct Args {
    conf: PathBuf,
    listen: Vec<String>,
    max_body: usize,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut conf = drover_cli::conn::config_path();
    let mut listen = Vec::new();
    let mut max_body = DEFAULT_MAX_BODY;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-f" => conf = PathBuf::from(it.next().ok_or("-f needs a file")?),
            "--max-body" => {
                let v = it.next().ok_or("--max-body needs a number of bytes")?;
                max_body = v
                    .parse()
                    .ok()
                    .filter(|n: &usize| *n >= 1024)
                    .ok_or(format!("--max-body: expected bytes >= 1024, got '{v}'"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            "--openapi" => return Err("--openapi".into()),
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            s => listen.push(s.to_string()),
        }
    }
    if listen.is_empty() {
        listen.push("127.0.0.1:6820".into());
    }
    Ok(Args {
        conf,
        listen,
        max_body,
    })
}

fn main() {
    drover_proto::logging::init(0, "");
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) if e == "--openapi" => {
            print!("{}", drover_restd::openapi::text());
            return;
        }
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("droverrestd: error: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("droverrestd: error: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(args)) {
        tracing::error!("{e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), String> {
    let (cfg, warnings) = drover_conf::slurmconf::load(&args.conf).map_err(|e| e.to_string())?;
    for w in warnings {
        tracing::warn!("{w}");
    }
    tracing::info!("read {}", args.conf.display());
    let key = ClusterKey::load(std::path::Path::new(&cfg.auth_key_file))?;
    let jwt = match cfg.jwt_key_path() {
        Some(p) => {
            let k = JwtKey::load(std::path::Path::new(&p))?;
            tracing::info!("JWT key {p} (AuthAltParameters=jwt_key)");
            Some(k)
        }
        None => {
            tracing::warn!(
                "AuthAltParameters=jwt_key is not set: TCP requests will be refused (401), \
                 only unix: listeners serve"
            );
            None
        }
    };
    let dbd = cfg
        .accounting_storage_type
        .contains("slurmdbd")
        .then(|| cfg.dbd_addr());
    let ctl = drover_restd::ctl::Ctl::new(key, &cfg, dbd.as_deref())?;
    tracing::info!(
        "controller {}, accounting {}",
        cfg.controller_addrs(),
        dbd.as_deref().unwrap_or("off")
    );
    let app = Arc::new(App {
        ctl,
        jwt,
        cluster: cfg.cluster_name.clone(),
        slurm_user: cfg.slurm_user.clone(),
        host: drover_proto::auth::hostname(),
        ctld_host: drover_cli::conn::controller_name(&cfg),
        max_body: args.max_body,
        private_data: !cfg.private_data.is_empty(),
        callers: Default::default(),
        jobs: Default::default(),
        conf: cfg.clone(),
    });
    let mut tasks = tokio::task::JoinSet::new();
    for l in &args.listen {
        let svc = router(app.clone());
        if let Some(path) = l.strip_prefix("unix:") {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::remove_file(path);
            let listener = tokio::net::UnixListener::bind(path)
                .map_err(|e| format!("cannot listen on {l}: {e}"))?;
            // Any local user may connect: the kernel tells who they are.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
                .map_err(|e| format!("cannot chmod {path}: {e}"))?;
            tracing::info!("listening on {l} (peer credentials)");
            let make = svc.into_make_service_with_connect_info::<Peer>();
            tasks.spawn(async move { axum::serve(listener, make).await });
        } else {
            let listener = tokio::net::TcpListener::bind(l)
                .await
                .map_err(|e| format!("cannot listen on {l}: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            tracing::info!("listening on http://{addr} (JWT)");
            let make = svc.into_make_service_with_connect_info::<Peer>();
            tasks.spawn(async move { axum::serve(listener, make).await });
        }
    }
    tokio::select! {
        r = tasks.join_next() => match r {
            Some(Ok(Err(e))) => Err(format!("server failed: {e}")),
            _ => Ok(()),
        },
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("interrupted, stopping");
            Ok(())
        }
    }
}
