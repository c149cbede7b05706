//! `sbcast [-f] [-p] [-C[LIB]] [-F N] [-j JOBID] [-s SIZE] SOURCE DEST`:
//! copy a file to every node of a running job. Each node's agent receives
//! the file in bounded chunks and writes it as the job's user (the caller's
//! own rights, never root's); it refuses to replace a file without `-f`.
//! A relative DEST is taken from the directory sbcast runs in.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use drover_proto::{BcastChunk, GetJobsRequest, JobFilter, JobState};
use tokio_stream::wrappers::ReceiverStream;

use crate::conn;
use crate::opts::{self, opt, Arg, OptDef};

pub const TABLE: &[OptDef] = &[
    opt("compress", Some('C'), Arg::Optional, "compress"),
    opt("exclude", None, Arg::Required, "exclude"),
    opt("fanout", Some('F'), Arg::Required, "fanout"),
    opt("force", Some('f'), Arg::No, "force"),
    opt("jobid", Some('j'), Arg::Required, "jobid"),
    opt("preserve", Some('p'), Arg::No, "preserve"),
    opt("send-libs", None, Arg::Optional, "send-libs"),
    opt("size", Some('s'), Arg::Required, "size"),
    opt("timeout", Some('t'), Arg::Required, "timeout"),
    opt("verbose", Some('v'), Arg::No, "verbose"),
    opt("version", Some('V'), Arg::No, "version"),
    opt("help", Some('h'), Arg::No, "help"),
    opt("usage", None, Arg::No, "usage"),
];

const USAGE: &str = "Usage: sbcast [-CfFjpstvV] SOURCE DEST\n";

/// Default chunk: 1 MiB; `--size` is kept between 64 KiB and 8 MiB.
const DEFAULT_CHUNK: usize = 1 << 20;
const MIN_CHUNK: usize = 64 << 10;
const MAX_CHUNK: usize = 8 << 20;

/// What to do, from the command line and the environment. Pure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub job_id: u32,
    pub source: PathBuf,
    pub dest: PathBuf,
    pub force: bool,
    pub preserve: bool,
    pub chunk: usize,
    pub fanout: usize,
}

/// `--size`: bytes, or with a `k`/`m` suffix; clamped to the bounds.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1usize << 10),
        Some('m') => (&t[..t.len() - 1], 1usize << 20),
        _ => (t, 1),
    };
    let n: usize = num
        .parse()
        .map_err(|_| format!("Invalid size specification: {s}"))?;
    Ok(n.saturating_mul(mult).clamp(MIN_CHUNK, MAX_CHUNK))
}

/// The job id of `JOBID[.STEP]`.
fn parse_job(s: &str) -> Option<u32> {
    s.split('.').next()?.trim().parse().ok().filter(|j| *j > 0)
}

pub fn build(p: &opts::Parsed, env_job: Option<&str>, cwd: &Path) -> Result<Request, String> {
    if p.positional.len() != 2 {
        return Err(format!(
            "Need two file names, have {} names",
            p.positional.len()
        ));
    }
    let job = p
        .value("jobid")
        .or(env_job)
        .ok_or_else(|| "Need a job id".to_string())?;
    let job_id = parse_job(job).ok_or_else(|| format!("Invalid job id {job}"))?;
    let fanout = match p.value("fanout") {
        None => 8,
        Some(f) => f
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("Invalid fanout value: {f}"))?,
    };
    if let Some(lib) = p.value("compress") {
        if !matches!(lib, "lz4" | "none") {
            return Err(format!("Invalid compression library: {lib}"));
        }
    }
    let chunk = match p.value("size") {
        Some(s) => parse_size(s)?,
        None => DEFAULT_CHUNK,
    };
    let dest = PathBuf::from(&p.positional[1]);
    Ok(Request {
        job_id,
        source: PathBuf::from(&p.positional[0]),
        dest: if dest.is_absolute() {
            dest
        } else {
            cwd.join(dest)
        },
        force: p.has("force"),
        preserve: p.has("preserve"),
        chunk,
        fanout,
    })
}

pub fn run(args: &[String]) -> i32 {
    let p = match opts::parse_command("sbcast", USAGE, TABLE, args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let env_job = std::env::var("SLURM_JOB_ID")
        .ok()
        .or_else(|| std::env::var("SLURM_JOBID").ok());
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let req = match build(&p, env_job.as_deref(), &cwd) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sbcast: error: {e}");
            return 1;
        }
    };
    let meta = match std::fs::File::open(&req.source).and_then(|f| f.metadata()) {
        Ok(m) if m.is_file() => m,
        Ok(_) => {
            eprintln!(
                "sbcast: error: Can't open `{}`: Is a directory",
                req.source.display()
            );
            return 1;
        }
        Err(e) => {
            eprintln!(
                "sbcast: error: Can't open `{}`: {}",
                req.source.display(),
                conn::os_error_text(&e)
            );
            return 1;
        }
    };
    let (cfg, rt) = match conn::setup("sbcast") {
        Ok(v) => v,
        Err(rc) => return rc,
    };
    rt.block_on(async move {
        let mut ctl = match conn::client_for("sbcast", &cfg) {
            Ok(c) => c,
            Err(rc) => return rc,
        };
        let lookup = ctl
            .get_jobs(GetJobsRequest {
                filter: Some(JobFilter {
                    job_ids: vec![req.job_id.to_string()],
                    ..Default::default()
                }),
                details: false,
                fields: Vec::new(),
            })
            .await;
        let job = match lookup {
            Ok(r) => r.into_inner().jobs.into_iter().find(|j| j.job_id == req.job_id),
            Err(st) => {
                conn::report(
                    "sbcast",
                    &format!("sbcast: error: Slurm job ID {} lookup error: ", req.job_id),
                    &st,
                );
                return 1;
            }
        };
        let Some(job) = job.filter(|j| j.state == JobState::Running as i32) else {
            eprintln!(
                "sbcast: error: Slurm job ID {} lookup error: Job/step already completing or completed",
                req.job_id
            );
            return 1;
        };
        let nodes = drover_conf::hostlist::expand(&job.nodes).unwrap_or_default();
        let first = BcastChunk {
            job_id: req.job_id,
            node: String::new(),
            dest: req.dest.to_string_lossy().into_owned(),
            force: req.force,
            preserve: req.preserve,
            mode: meta.mode() & 0o7777,
            atime: meta.atime(),
            mtime: meta.mtime(),
            data: Vec::new(),
            last: false,
        };
        let mut rc = 0;
        for group in nodes.chunks(req.fanout) {
            let mut calls = Vec::new();
            for node in group {
                let agent = match crate::agentconn::agent_for("sbcast", &cfg, node) {
                    Ok(a) => a,
                    Err(r) => {
                        rc = r;
                        continue;
                    }
                };
                let mut head = first.clone();
                head.node = node.clone();
                let src = req.source.clone();
                let chunk = req.chunk;
                let node = node.clone();
                calls.push(tokio::spawn(async move {
                    (node, send(agent, head, src, chunk).await)
                }));
            }
            for c in calls {
                let Ok((node, res)) = c.await else {
                    rc = 1;
                    continue;
                };
                if let Err(st) = res {
                    let m = match conn::classify(&st) {
                        conn::RpcError::Connect => "Unable to contact the node agent".to_string(),
                        conn::RpcError::Status(m) => m,
                    };
                    eprintln!("sbcast: error: REQUEST_FILE_BCAST({node}): {m}");
                    rc = 1;
                }
            }
        }
        rc
    })
}

/// Stream the file to one node: a reader thread fills a small queue, so
/// at most a few chunks are in memory.
async fn send(
    mut agent: drover_proto::client::Agent,
    head: BcastChunk,
    src: PathBuf,
    chunk: usize,
) -> Result<(), tonic::Status> {
    let (tx, rx) = tokio::sync::mpsc::channel::<BcastChunk>(4);
    let reader = tokio::task::spawn_blocking(move || -> Result<(), String> {
        let mut f = std::fs::File::open(&src).map_err(|e| {
            format!(
                "Can't open `{}`: {}",
                src.display(),
                conn::os_error_text(&e)
            )
        })?;
        let mut msg = head;
        loop {
            let mut buf = vec![0u8; chunk];
            let mut got = 0;
            while got < chunk {
                match f.read(&mut buf[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(format!(
                            "read `{}`: {}",
                            src.display(),
                            conn::os_error_text(&e)
                        ))
                    }
                }
            }
            buf.truncate(got);
            msg.last = got < chunk;
            msg.data = buf;
            let last = msg.last;
            if tx.blocking_send(msg).is_err() {
                return Ok(()); // the call failed: its status says why
            }
            if last {
                return Ok(());
            }
            msg = BcastChunk::default();
        }
    });
    let res = agent.file_bcast(ReceiverStream::new(rx)).await;
    match reader.await {
        Ok(Err(e)) => return Err(tonic::Status::aborted(e)),
        Err(e) => return Err(tonic::Status::internal(e.to_string())),
        Ok(Ok(())) => {}
    }
    res.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> opts::Parsed {
        let v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        opts::parse(TABLE, &v, false).unwrap()
    }

    #[test]
    fn options_job_and_destination() {
        let cwd = Path::new("/home/u/run");
        let r = build(
            &parsed(&["-f", "-p", "-C", "-F", "2", "a.bin", "b.bin"]),
            Some("12"),
            cwd,
        )
        .unwrap();
        assert_eq!(r.job_id, 12);
        assert_eq!(r.dest, PathBuf::from("/home/u/run/b.bin"));
        assert!(r.force && r.preserve);
        assert_eq!((r.fanout, r.chunk), (2, DEFAULT_CHUNK));
        let r = build(&parsed(&["-j", "7.1", "x", "/tmp/y"]), Some("12"), cwd).unwrap();
        assert_eq!((r.job_id, r.dest.as_path()), (7, Path::new("/tmp/y")));
        assert!(!r.force && !r.preserve);
        assert_eq!(
            build(&parsed(&["x", "/tmp/y"]), None, cwd).unwrap_err(),
            "Need a job id"
        );
        assert_eq!(
            build(&parsed(&["x"]), Some("1"), cwd).unwrap_err(),
            "Need two file names, have 1 names"
        );
        assert!(build(&parsed(&["-F", "0", "x", "y"]), Some("1"), cwd).is_err());
        assert!(build(&parsed(&["--compress=zip", "x", "y"]), Some("1"), cwd).is_err());
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1").unwrap(), MIN_CHUNK);
        assert_eq!(parse_size("100m").unwrap(), MAX_CHUNK);
        assert!(parse_size("lots").is_err());
    }
}
