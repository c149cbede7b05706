//! The supervisor's line protocol on its control socket (Unix stream, see `stepd_socket`).
//!
//! Requests, one per line:
//! - `signal SIG BATCHONLY` — deliver signal number SIG (names like `TERM`
//!   or `SIGTERM` are accepted) to every process of the job (BATCHONLY=0) or
//!   only to the batch script (1). Reply `ok` or `error MESSAGE`.
//! - `terminate KILLWAIT TIMEOUT` — SIGCONT+SIGTERM to every process, SIGKILL
//!   after KILLWAIT seconds; TIMEOUT=1 records that the time limit was the
//!   cause. Reply `ok`.
//! - `wait` — no immediate reply; when the job has ended and every process
//!   is gone: `done EXIT SIGNAL TIMEOUT CPU_USEC MAXRSS_KB END_TIME LAUNCH_FAILED [FAILURE]`.
//! - `status` — reply `running PID` (the script's pid).
//!
//! The agent also gets, on the supervisor's notify pipe (fd given by
//! `DROVER_STEPD_NOTIFY_FD`), `started PID` or `failed REASON`, then the
//! same `done ...` line.

/// A parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Signal { signal: i32, batch_only: bool },
    Terminate { kill_wait: u32, timeout: bool },
    Wait,
    Status,
}

fn parse_bool(s: Option<&str>) -> Result<bool, String> {
    match s {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(format!("expected 0 or 1, got {other:?}")),
    }
}

/// Signal names the protocol accepts besides numbers.
pub fn signal_number(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (0..=64).contains(&n).then_some(n);
    }
    let up = s.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    Some(match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "ABRT" => libc::SIGABRT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "PIPE" => libc::SIGPIPE,
        "ALRM" => libc::SIGALRM,
        "TERM" => libc::SIGTERM,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "TSTP" => libc::SIGTSTP,
        "URG" => libc::SIGURG,
        "XCPU" => libc::SIGXCPU,
        "WINCH" => libc::SIGWINCH,
        _ => return None,
    })
}

impl Request {
    pub fn parse(line: &str) -> Result<Request, String> {
        let mut words = line.split_ascii_whitespace();
        let cmd = words.next().ok_or("empty request")?;
        let req = match cmd {
            "signal" => {
                let sig = words.next().ok_or("signal: missing signal")?;
                let signal =
                    signal_number(sig).ok_or_else(|| format!("signal: invalid signal {sig:?}"))?;
                let batch_only = parse_bool(words.next())?;
                Request::Signal { signal, batch_only }
            }
            "terminate" => {
                let kill_wait = match words.next() {
                    None => 30,
                    Some(w) => w
                        .parse::<u32>()
                        .map_err(|_| format!("terminate: bad kill wait {w:?}"))?,
                };
                let timeout = parse_bool(words.next())?;
                Request::Terminate { kill_wait, timeout }
            }
            "wait" => Request::Wait,
            "status" => Request::Status,
            other => return Err(format!("unknown request {other:?}")),
        };
        if words.next().is_some() {
            return Err(format!("{cmd}: too many arguments"));
        }
        Ok(req)
    }

    pub fn to_line(&self) -> String {
        match self {
            Request::Signal { signal, batch_only } => {
                format!("signal {signal} {}\n", u8::from(*batch_only))
            }
            Request::Terminate { kill_wait, timeout } => {
                format!("terminate {kill_wait} {}\n", u8::from(*timeout))
            }
            Request::Wait => "wait\n".into(),
            Request::Status => "status\n".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests() {
        assert_eq!(
            Request::parse("signal 10 1").unwrap(),
            Request::Signal {
                signal: 10,
                batch_only: true
            }
        );
        assert_eq!(
            Request::parse("signal SIGUSR1").unwrap(),
            Request::Signal {
                signal: libc::SIGUSR1,
                batch_only: false
            }
        );
        assert_eq!(
            Request::parse("terminate 5 1").unwrap(),
            Request::Terminate {
                kill_wait: 5,
                timeout: true
            }
        );
        assert_eq!(
            Request::parse("terminate").unwrap(),
            Request::Terminate {
                kill_wait: 30,
                timeout: false
            }
        );
        assert_eq!(Request::parse("wait").unwrap(), Request::Wait);
        assert_eq!(Request::parse(" status \n").unwrap(), Request::Status);
        for bad in [
            "",
            "signal",
            "signal 99",
            "signal -1",
            "signal FOO",
            "signal 9 2",
            "terminate x",
            "wait now",
            "reboot",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn round_trips() {
        for r in [
            Request::Signal {
                signal: 15,
                batch_only: false,
            },
            Request::Terminate {
                kill_wait: 0,
                timeout: true,
            },
            Request::Wait,
            Request::Status,
        ] {
            assert_eq!(Request::parse(&r.to_line()).unwrap(), r);
        }
    }
}
