//! Fuzz targets for the controller's parsers of outside input: dependency
//! and `--array` expressions, job selectors, every gRPC request message as
//! raw bytes, and recovery from an arbitrary state log. Each must not panic
//! or hang. They run under the coverage-guided fuzzer (`fuzz/`,
//! `bench/fuzz.sh`) and, over the saved inputs, in `cargo test`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use drover_conf::Config;
use drover_proto::auth::ClusterKey;
use prost::Message;

use crate::{array, control, deps, fieldlimits, reservation, submit};

fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// `--dependency` values: what parses has at least one condition.
pub fn dependency(data: &[u8]) {
    if let Ok(Some(d)) = deps::parse(&text(data)) {
        assert!(!d.conds.is_empty());
    }
}

/// `--array` values (under the default `MaxArraySize` and Slurm's largest)
/// and job selectors (`12_[1-3]`, scancel/scontrol): the task list prints
/// as ranges that parse back to it.
pub fn array_expr(data: &[u8]) {
    let t = text(data);
    for max in [1001, array::MAX_ARRAY_SIZE_LIMIT] {
        if let Ok(spec) = array::parse(&t, max) {
            assert!(spec.tasks.iter().all(|&i| i < max));
            let shown = array::ranges(&spec.tasks);
            assert_eq!(
                array::parse_ranges(&shown),
                spec.tasks,
                "{t:?} as {shown:?}"
            );
        }
    }
    let _ = control::parse_selector(&t);
}

macro_rules! decode_one {
    ($which:expr, $body:expr, $($ty:ty),+ $(,)?) => {{
        let types: &[fn(&[u8])] = &[$(|b| { let _ = <$ty>::decode(b); }),+];
        types[$which % types.len()]($body);
    }};
}

/// Every request message of the four services, decoded from raw bytes (the
/// first byte picks the type); submissions, job updates and reservations
/// then go through the handlers' pure checks.
pub fn grpc_request(data: &[u8]) {
    use drover_proto::acct as a;
    use drover_proto::*;
    let Some((&which, body)) = data.split_first() else {
        return;
    };
    match which {
        0 => {
            let Ok(req) = SubmitRequest::decode(body) else {
                return;
            };
            let spec = req.spec.unwrap_or_default();
            let _ = submit::check_bounds(&spec);
            let _ = fieldlimits::check_sizes(&spec, 4 << 20);
            let _ = deps::parse(&spec.dependency);
            let _ = array::parse(&spec.array, 1001);
            let _ = drover_conf::hostlist::expand(&spec.nodelist);
            let _ = drover_conf::hostlist::expand(&spec.exclude);
        }
        1 => {
            let Ok(req) = ReservationRequest::decode(body) else {
                return;
            };
            let _ = reservation::parse_args(&req.args);
        }
        2 => {
            let Ok(req) = UpdateJobRequest::decode(body) else {
                return;
            };
            for id in &req.job_ids {
                let _ = control::parse_selector(id);
            }
        }
        n => decode_one!(
            usize::from(n - 3),
            body,
            GetJobsRequest,
            CancelRequest,
            WaitJobRequest,
            GetNodesRequest,
            UpdateNodeRequest,
            GetPartitionsRequest,
            PingRequest,
            ConfigRequest,
            ReconfigureRequest,
            ShutdownRequest,
            RegisterRequest,
            HeartbeatRequest,
            JobEndedRequest,
            JobStatsRequest,
            StepRequest,
            StepEndedRequest,
            CompleteAllocationRequest,
            AllocationAliveRequest,
            JobScriptRequest,
            DiagRequest,
            LaunchRequest,
            SignalJobRequest,
            AgentPingRequest,
            StepLaunchRequest,
            SuspendJobRequest,
            ListPidsRequest,
            BcastChunk,
            AttachInput,
            GetPrioritiesRequest,
            GetSharesRequest,
            DeleteReservationRequest,
            GetReservationsRequest,
            a::RecordJobsRequest,
            a::RegisterClusterRequest,
            a::JobQuery,
            a::GetAssocsRequest,
            a::ModifyRequest,
            a::UsageRequest,
            a::DbdPingRequest,
        ),
    }
}

/// The configuration the recovery target starts from.
fn base_config() -> &'static Config {
    static CFG: OnceLock<Config> = OnceLock::new();
    CFG.get_or_init(|| {
        let text = "ClusterName=fuzz\nSlurmUser=root\n\
                    NodeName=n[1-4] CPUs=4 RealMemory=4096\n\
                    PartitionName=p Nodes=n[1-4] Default=YES\n";
        let mut no_include = |p: &str| Err(format!("no Include here: {p}"));
        drover_conf::slurmconf::parse_str(text, "fuzz.conf", &mut no_include)
            .expect("the fuzz configuration parses")
            .0
    })
}

/// A fresh private directory for one recovery (removed when dropped).
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> ScratchDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "drover-fuzz-wal-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Frames in `log` (`len u32 LE`, `crc u32 LE`, body) get the right CRC,
/// so the fuzzer reaches the record decoder and the replay behind it.
fn fix_crcs(log: &mut [u8]) {
    let mut pos = 0usize;
    while pos + 8 <= log.len() {
        let len = u32::from_le_bytes([log[pos], log[pos + 1], log[pos + 2], log[pos + 3]]) as usize;
        let Some(end) = pos.checked_add(8 + len).filter(|&e| e <= log.len()) else {
            return;
        };
        let crc = crc32fast::hash(&log[pos + 8..end]);
        log[pos + 4..pos + 8].copy_from_slice(&crc.to_le_bytes());
        pos = end;
    }
}

/// Controller recovery from arbitrary bytes: the first byte holds flags
/// (bit 0: the next two bytes give the length of a snapshot file that
/// follows; bit 1: the CRCs of the log's frames are made right), the rest
/// is written as the state log `wal.0`, and the controller recovers from
/// the directory as at start-up. It must come up or refuse with an error
/// naming the file.
pub fn wal_recovery(data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let mut snapshot = None;
    if flags & 1 != 0 && rest.len() >= 2 {
        let n = usize::from(u16::from_le_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        snapshot = Some(&rest[2..2 + n]);
        rest = &rest[2 + n..];
    }
    let mut log = rest.to_vec();
    if flags & 2 != 0 {
        fix_crcs(&mut log);
    }
    let dir = ScratchDir::new();
    drover_proto::private::ensure_dir(&dir.0).expect("scratch directory");
    if let Some(s) = snapshot {
        std::fs::write(dir.0.join("snapshot"), s).expect("write snapshot");
    }
    std::fs::write(dir.0.join("wal.0"), &log).expect("write log");
    let mut cfg = base_config().clone();
    cfg.state_save_location = dir.0.display().to_string();
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let key = ClusterKey::from_bytes(b"fuzz");
    let agents = crate::runtime::AgentPool::new(drover_proto::client::Credential::daemon(
        key,
        "fuzz".into(),
    ));
    match crate::runtime::Runtime::recover(cfg, dir.0.join("fuzz.conf"), agents, tx, None) {
        Ok(mut rt) => {
            // Let the writer finish the snapshot before the directory goes.
            rt.sync();
        }
        Err(e) => assert!(e.contains(&dir.0.display().to_string()), "{e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_conf::fuzz::replay;

    #[test]
    fn saved_inputs_replay() {
        let targets: [(&str, drover_conf::fuzz::Target); 4] = [
            ("dependency", dependency),
            ("array_expr", array_expr),
            ("grpc_request", grpc_request),
            ("wal_recovery", wal_recovery),
        ];
        for (name, f) in targets {
            assert!(replay(name, f) > 0, "no saved inputs for {name}");
        }
    }
}
