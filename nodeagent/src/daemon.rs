//! Process setup: standard descriptors, detaching, pid file, logging.

use std::path::Path;

/// Make sure fds 0, 1 and 2 are open (on /dev/null if they were closed), so
/// no file or socket the agent opens later lands on them.
pub fn ensure_std_fds() {
    for fd in 0..3 {
        if !crate::sys::fd_is_open(fd) {
            if let Ok(f) = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")
            {
                let _ = crate::sys::dup2(&f, fd);
            }
        }
    }
}

/// Detach from the terminal (fork, setsid); the parent exits 0. Standard
/// output and error go to `log` (appended) or /dev/null. Must be called
/// before any thread is started.
pub fn detach(log: Option<&Path>) -> Result<(), String> {
    let out = match log {
        Some(p) => drover_proto::private::append(p)
            .map_err(|e| format!("cannot open log file {}: {e}", p.display()))?,
        None => std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .map_err(|e| format!("cannot open /dev/null: {e}"))?,
    };
    let null =
        std::fs::File::open("/dev/null").map_err(|e| format!("cannot open /dev/null: {e}"))?;
    crate::sys::detach_process(&null, &out)?;
    let _ = std::env::set_current_dir("/");
    Ok(())
}

pub fn write_pid_file(path: &Path) -> Result<(), String> {
    std::fs::write(path, format!("{}\n", std::process::id()))
        .map_err(|e| format!("cannot write pid file {}: {e}", path.display()))
}
