//! One logging set-up for every Drover daemon: stderr, no colours;
//! `-v` = debug, `-vv` = trace; `DROVER_LOG` (then `RUST_LOG`) overrides
//! with an env-filter directive. Chatty dependencies stay at warn.

/// `extra`: more `target=level` directives for this daemon (`sqlx=warn`).
pub fn init(verbosity: u8, extra: &str) {
    use tracing_subscriber::EnvFilter;
    let level = match verbosity {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("DROVER_LOG")
        .or_else(|_| EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| {
            let mut d = format!("{level},h2=warn,hyper=warn,hyper_util=warn,tower=warn");
            if !extra.is_empty() && verbosity < 2 {
                d.push(',');
                d.push_str(extra);
            }
            EnvFilter::new(d)
        });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
