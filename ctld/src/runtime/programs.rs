//! Runs the power-saving programs (SuspendProgram, ResumeProgram,
//! ResumeFailProgram) for the runtime: the nodes' hostlist as the one
//! argument, stdin and stdout closed, stderr kept (the first 4 KiB) for the
//! log, killed (with its process group) once `timeout` has passed. The
//! controller never waits on it: the caller awaits this on a task of its own.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

const STDERR_KEPT: usize = 4096;

/// Ok when it exited 0; else why not, in words for the log and the
/// node's reason.
pub async fn run(
    kind: &str,
    path: &str,
    nodes: &[String],
    timeout: Duration,
) -> Result<(), String> {
    let hostlist = drover_conf::hostlist::compress(nodes);
    let mut cmd = tokio::process::Command::new(path);
    cmd.arg(&hostlist)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {path}: {e}"))?;
    let pid = child.id();
    tracing::info!(
        "{kind} {path} {hostlist} started (pid {})",
        pid.unwrap_or(0)
    );
    // Read stderr beside the wait: a program that leaves a daemon holding
    // the pipe must not keep us waiting for its end of file.
    let mut stderr = child.stderr.take();
    let reader = tokio::spawn(async move {
        let mut kept = Vec::new();
        let mut buf = [0u8; 1024];
        if let Some(s) = stderr.as_mut() {
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if kept.len() < STDERR_KEPT {
                    kept.extend_from_slice(&buf[..n.min(STDERR_KEPT - kept.len())]);
                }
            }
        }
        kept
    });
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(s)) => Some(s),
        Ok(Err(e)) => return Err(format!("waiting for {path}: {e}")),
        Err(_) => {
            if let Some(pid) = pid {
                // The program's own process group.
                let _ = drover_proto::sys::kill(-(pid as i32), libc::SIGKILL);
            }
            let _ = child.kill().await;
            None
        }
    };
    let err = tokio::time::timeout(Duration::from_millis(500), reader)
        .await
        .ok()
        .and_then(|r| r.ok())
        .unwrap_or_default();
    let err = String::from_utf8_lossy(&err).trim().to_string();
    let tail = if err.is_empty() {
        String::new()
    } else {
        format!(": {}", err.lines().last().unwrap_or_default())
    };
    match status {
        None => {
            tracing::error!("{kind} {path} {hostlist}: killed after {timeout:?}; stderr: {err:?}");
            Err(format!("timed out after {}s{tail}", timeout.as_secs()))
        }
        Some(s) if s.success() => {
            if !err.is_empty() {
                tracing::info!("{kind} {path} {hostlist}: exit 0; stderr: {err:?}");
            }
            Ok(())
        }
        Some(s) => {
            let how = match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => "failed".to_string(),
            };
            tracing::error!("{kind} {path} {hostlist}: {how}; stderr: {err:?}");
            Err(format!("{how}{tail}"))
        }
    }
}
