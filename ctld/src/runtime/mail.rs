//! Sending job mail: `MailProg -s SUBJECT RECIPIENT`, the body on its
//! standard input, the environment Slurm gives it and nothing else.
//!
//! The core logs a mail as due and asks for it (`Effect::Mail`); once that
//! record is durable the mail goes on a bounded queue ([`QUEUE`] mails) to
//! one thread, `mail-sender`, which runs MailProg for one mail at a time,
//! kills it (its whole process group) after [`TIMEOUT`], logs a failure
//! with its exit status and output, and tells the owner task the mail is
//! done (`Ctld::mail_sent`, logged so it is not sent again). Nothing here
//! waits on the owner task or holds it up; a job never waits on its mail.
//! MailProg dies with the controller (`PR_SET_PDEATHSIG`): a mail cut off
//! that way is still due and is sent after the restart.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use drover_proto::state::MailRecord;

use crate::ctld::{Ctld, Op};

/// Mails waiting for MailProg at most; more are dropped (and logged).
pub const QUEUE: usize = 1000;
/// How long MailProg may take (Slurm's `MAIL_PROG_TIMEOUT`).
pub const TIMEOUT: Duration = Duration::from_secs(120);
/// MailProg's output kept for the log.
const OUTPUT_KEPT: usize = 4096;

/// How a MailProg run went.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Exit status 0 (its output, if any).
    Sent(String),
    /// A non-zero exit status, or killed by a signal.
    Failed {
        code: Option<i32>,
        signal: Option<i32>,
        output: String,
    },
    /// Still running after the timeout: killed.
    TimedOut(String),
    /// Could not be started at all.
    NotStarted(String),
}

struct Outgoing {
    prog: String,
    mail: MailRecord,
}

/// The queue to the sender thread (cheap to clone).
#[derive(Clone)]
pub struct MailSender {
    tx: mpsc::SyncSender<Outgoing>,
    owner: tokio::sync::mpsc::Sender<Op>,
}

impl MailSender {
    /// Start the sender thread; it reports to the owner task through `owner`.
    pub fn start(owner: tokio::sync::mpsc::Sender<Op>) -> Result<MailSender, String> {
        let (tx, rx) = mpsc::sync_channel::<Outgoing>(QUEUE);
        let report = owner.clone();
        std::thread::Builder::new()
            .name("mail-sender".into())
            .spawn(move || {
                while let Ok(o) = rx.recv() {
                    let id = o.mail.id;
                    let outcome = run_mail_prog(&o.prog, &o.mail, TIMEOUT);
                    log_outcome(&o.prog, &o.mail, &outcome);
                    // The owner is gone only when the controller stops: the
                    // mail then stays due and is sent after the restart.
                    let _ = report.blocking_send(Box::new(move |c: &mut Ctld| c.mail_sent(id)));
                }
            })
            .map_err(|e| format!("cannot start the mail sender: {e}"))?;
        Ok(MailSender { tx, owner })
    }

    /// Hand a mail to the sender. Never blocks: with the queue full the
    /// mail is dropped, logged, and not sent again.
    pub fn enqueue(&self, prog: String, mail: MailRecord) {
        let (id, job) = (mail.id, mail.job_id);
        match self.tx.try_send(Outgoing { prog, mail }) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(o)) => {
                tracing::error!(
                    "job {job}: mail queue full ({QUEUE} mails waiting for MailProg): mail to {} dropped: {}",
                    o.mail.recipient,
                    o.mail.subject
                );
                let _ = self
                    .owner
                    .try_send(Box::new(move |c: &mut Ctld| c.mail_sent(id)));
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                tracing::error!("job {job}: the mail sender is gone; mail {id} stays due");
            }
        }
    }
}

fn log_outcome(prog: &str, m: &MailRecord, outcome: &Outcome) {
    let job = m.job_id;
    match outcome {
        Outcome::Sent(out) if !out.is_empty() => {
            tracing::debug!("job {job}: MailProg output was '{out}'")
        }
        Outcome::Sent(_) => tracing::debug!("job {job}: mail to {} sent: {}", m.recipient, m.subject),
        Outcome::Failed {
            code,
            signal,
            output,
        } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "an unknown status".into(),
            };
            tracing::error!(
                "job {job}: MailProg {prog} failed ({how}) sending '{}' to {}; its output was '{}'",
                m.subject,
                m.recipient,
                output.trim_end()
            );
        }
        Outcome::TimedOut(output) => tracing::error!(
            "job {job}: MailProg {prog} still running after {} s sending '{}' to {}: killed; its output was '{}'",
            TIMEOUT.as_secs(),
            m.subject,
            m.recipient,
            output.trim_end()
        ),
        Outcome::NotStarted(e) => {
            tracing::error!("job {job}: cannot run MailProg {prog}: {e}; mail '{}' not sent", m.subject)
        }
    }
}

/// Run `prog -s SUBJECT RECIPIENT` for `m` (environment `m.env` only, the
/// body on standard input, in its own process group, killed with the
/// controller), waiting at most `timeout`.
pub fn run_mail_prog(prog: &str, m: &MailRecord, timeout: Duration) -> Outcome {
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return Outcome::NotStarted(format!("pipe: {e}")),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return Outcome::NotStarted(format!("pipe: {e}")),
    };
    let mut cmd = Command::new(prog);
    cmd.arg("-s")
        .arg(&m.subject)
        .arg(&m.recipient)
        .env_clear()
        .envs(m.env.iter().filter_map(|e| e.split_once('=')))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);
    // The death signal is tied to the mail-sender thread, which lives as
    // long as the controller.
    drover_proto::sys::die_with_parent(&mut cmd, libc::SIGKILL, None);
    let spawned = cmd.spawn();
    // The pipe's write ends held by `cmd` must close, or the output never ends.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Outcome::NotStarted(e.to_string()),
    };
    let pid = child.id() as i32;
    if let Some(mut stdin) = child.stdin.take() {
        let body = m.body.clone();
        // A MailProg that does not read its input must not stop us.
        let _ = std::thread::Builder::new()
            .name("mail-body".into())
            .spawn(move || {
                let _ = stdin.write_all(body.as_bytes());
            });
    }
    let (out_tx, out_rx) = mpsc::channel::<String>();
    let _ = std::thread::Builder::new()
        .name("mail-output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let room = OUTPUT_KEPT.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                }
            }
            let _ = out_tx.send(String::from_utf8_lossy(&kept).into_owned());
        });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => {
                // The process group MailProg leads.
                let _ = drover_proto::sys::kill(-pid, libc::SIGKILL);
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Outcome::NotStarted(format!("wait: {e}")),
        }
    };
    // The output ends when every process holding the pipe has ended; one
    // that left the process group may keep it open: do not wait for it.
    let output = out_rx
        .recv_timeout(Duration::from_secs(1))
        .unwrap_or_default();
    let Some(st) = status else {
        return Outcome::TimedOut(output);
    };
    use std::os::unix::process::ExitStatusExt;
    if st.success() {
        Outcome::Sent(output)
    } else {
        Outcome::Failed {
            code: st.code(),
            signal: st.signal(),
            output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An executable script, written by a child process: written here, a
    /// test forking in another thread meanwhile would hold the file open
    /// for writing and make its exec fail ("Text file busy").
    fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
        let p = dir.join(name);
        let text = format!("#!/bin/sh\n{body}\n");
        let st = std::process::Command::new("sh")
            .args([
                "-c",
                "printf '%s' \"$2\" > \"$1\" && chmod 755 \"$1\"",
                "sh",
            ])
            .arg(&p)
            .arg(&text)
            .status()
            .unwrap();
        assert!(st.success(), "writing {}", p.display());
        p.display().to_string()
    }

    fn mail() -> MailRecord {
        MailRecord {
            id: 1,
            job_id: 42,
            mail_type: "Began".into(),
            recipient: "alice@example.org".into(),
            subject: "Slurm Job_id=42 Name=train Began, Queued time 00:00:01".into(),
            env: vec!["SLURM_JOB_ID=42".into(), "SLURM_JOB_MAIL_TYPE=Began".into()],
            body: "Job ID: 42\n".into(),
        }
    }

    #[test]
    fn arguments_environment_and_body() {
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("out");
        let prog = script(
            d.path(),
            "mail",
            &format!(
                "for a in \"$@\"; do echo \"arg:$a\"; done > {o}; env | sort >> {o}; cat >> {o}",
                o = out.display()
            ),
        );
        assert_eq!(
            run_mail_prog(&prog, &mail(), Duration::from_secs(20)),
            Outcome::Sent(String::new())
        );
        let t = std::fs::read_to_string(&out).unwrap();
        assert!(t.starts_with(
            "arg:-s\narg:Slurm Job_id=42 Name=train Began, Queued time 00:00:01\narg:alice@example.org\n"
        ), "{t}");
        assert!(t.contains("SLURM_JOB_ID=42\n"), "{t}");
        assert!(t.contains("SLURM_JOB_MAIL_TYPE=Began\n"), "{t}");
        assert!(!t.contains("HOME="), "only Slurm's variables: {t}");
        assert!(t.ends_with("Job ID: 42\n"), "{t}");
    }

    #[test]
    fn failure_keeps_the_exit_code_and_output() {
        let d = tempfile::tempdir().unwrap();
        let prog = script(d.path(), "mail", "echo 'no route to mail host' >&2; exit 3");
        match run_mail_prog(&prog, &mail(), Duration::from_secs(20)) {
            Outcome::Failed { code, output, .. } => {
                assert_eq!(code, Some(3));
                assert_eq!(output, "no route to mail host\n");
            }
            other => panic!("{other:?}"),
        }
        let missing = d.path().join("no-such-mail").display().to_string();
        assert!(matches!(
            run_mail_prog(&missing, &mail(), Duration::from_secs(20)),
            Outcome::NotStarted(_)
        ));
    }

    #[test]
    fn a_hung_mail_prog_is_killed_with_its_children() {
        let d = tempfile::tempdir().unwrap();
        let pidfile = d.path().join("pid");
        let prog = script(
            d.path(),
            "mail",
            &format!(
                "echo started; sleep 300 & echo $! > {}; wait",
                pidfile.display()
            ),
        );
        let r = run_mail_prog(&prog, &mail(), Duration::from_millis(500));
        assert_eq!(r, Outcome::TimedOut("started\n".into()));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild got SIGKILL too: gone, or a zombie waiting for init.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            if stat.is_empty() || state.starts_with('Z') {
                break;
            }
            assert!(Instant::now() < deadline, "sleep {pid} still alive: {stat}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
