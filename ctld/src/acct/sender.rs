//! Tasks talking to droverdbd: delivering the outbox in order, and keeping
//! the association cache current (long poll on its version).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use drover_proto::acct::{GetAssocsRequest, JobRecord, RegisterClusterRequest};
use drover_proto::client::Accounting;
use drover_proto::signing::Signed;
use prost::Message;
use tokio::sync::mpsc;

use super::outbox::{self, Pos, Shared};
use crate::ctld::{Ctld, Op};

/// Records per RecordJobs call (bytes).
const BATCH_BYTES: usize = 2 * 1024 * 1024;

/// One RecordJobs call at most this often: a record after a quiet spell
/// goes at once, records that follow each other closely (a shell loop of
/// `sbatch`, a drain) go together, one call and one database transaction
/// for several instead of one each. At 10 ms a drain of 1,000 short jobs
/// made ~200 calls and droverdbd took a tenth of the machine; at 50 ms a
/// quarter less (docs/benchmarks.md), and `sacct` sees a job at most
/// 50 ms later.
const PACE: Duration = Duration::from_millis(50);

/// Deliver durable records in order; on failure keep them and retry with
/// back-off, for as long as it takes.
pub async fn deliver(dir: PathBuf, shared: Arc<Shared>, svc: Signed) {
    let mut ack = outbox::read_ack(&dir);
    outbox::drop_acked(&dir, ack);
    let mut ack_file: Option<outbox::AckFile> = None;
    // Remember `to` as acknowledged (the file opened again after a failure
    // to open it); segments wholly before it go.
    let mut acknowledge = |from: Pos, to: Pos| {
        if ack_file.is_none() {
            ack_file = outbox::AckFile::open(&dir)
                .map_err(|e| tracing::warn!("cannot open the outbox position file: {e}"))
                .ok();
        }
        if let Some(Err(e)) = ack_file.as_ref().map(|f| f.store(to)) {
            tracing::warn!("cannot save the outbox position: {e}");
        }
        if to.seg > from.seg {
            outbox::drop_acked(&dir, to);
        }
    };
    let mut delay = Duration::from_millis(200);
    let mut failing_since: Option<std::time::Instant> = None;
    let mut last_call: Option<tokio::time::Instant> = None;
    loop {
        if let Some(t) = last_call {
            tokio::time::sleep_until(t + PACE).await;
        }
        let durable = *shared.durable.lock().unwrap_or_else(|p| p.into_inner());
        let d = dir.clone();
        let from = ack;
        let read = tokio::task::spawn_blocking(move || {
            outbox::read_pending(&d, from, durable, BATCH_BYTES)
        })
        .await;
        let (recs, next): (Vec<Vec<u8>>, Pos) = match read {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                tracing::error!("accounting outbox read failed: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if recs.is_empty() {
            if next != ack {
                acknowledge(ack, next);
                ack = next;
            }
            // Wait for the writer (with a timeout, in case a wake-up was missed).
            let _ = tokio::time::timeout(Duration::from_secs(1), shared.notify.notified()).await;
            continue;
        }
        // Sent as stored (`acctbatch`), not encoded again. Each is still
        // read as the daemon will read it (into one reused record): one
        // that does not decode would fail the whole batch there, for
        // ever, so it is left out, as before.
        let total = recs.len();
        let mut scratch = JobRecord::default();
        let jobs: Vec<Vec<u8>> = recs
            .into_iter()
            .filter(|b| {
                scratch.clear();
                scratch.merge(&b[..]).is_ok()
            })
            .collect();
        if jobs.len() < total {
            tracing::warn!(
                "accounting outbox: {} malformed job records left out",
                total - jobs.len()
            );
        }
        let n = jobs.len();
        last_call = Some(tokio::time::Instant::now());
        match drover_proto::acctbatch::record_jobs_encoded(svc.clone(), jobs).await {
            Ok(_) => {
                if let Some(t) = failing_since.take() {
                    tracing::info!(
                        "accounting daemon reachable again after {:?}; delivering held records",
                        t.elapsed()
                    );
                }
                tracing::debug!("delivered {n} job records");
                // Records from before a restart were not counted: never below 0.
                let _ = drover_proto::metrics::ACCT_QUEUED.fetch_update(
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                    |v| Some((v - n as i64).max(0)),
                );
                acknowledge(ack, next);
                ack = next;
                delay = Duration::from_millis(200);
            }
            Err(e) => {
                if failing_since.is_none() {
                    tracing::warn!(
                        "cannot deliver job records to the accounting daemon: {}; keeping them \
                         on disk and retrying",
                        e.message()
                    );
                    failing_since = Some(std::time::Instant::now());
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// How long the accounting daemon may hold an association poll.
const ASSOC_POLL_MS: u32 = 30_000;
/// The longest pause between polls that came back early.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Register the cluster, then follow the association set's version.
pub async fn watch_assocs(
    mut client: Accounting,
    cluster: drover_proto::acct::Cluster,
    tx: mpsc::Sender<Op>,
    cache: PathBuf,
    mut known: u64,
) {
    let name = cluster.name.clone();
    let mut registered = false;
    let mut early_backoff = Duration::ZERO;
    loop {
        if !registered {
            match client
                .register_cluster(RegisterClusterRequest {
                    cluster: Some(cluster.clone()),
                })
                .await
            {
                Ok(r) => {
                    registered = true;
                    let max = r.into_inner().max_job_id;
                    let op: Op = Box::new(move |c: &mut Ctld| {
                        if max > 0
                            && max.saturating_add(1) > c.next_job_id
                            && max < c.cfg.max_job_id
                        {
                            tracing::info!(
                                "job ids continue above {max}, the highest in accounting"
                            );
                            c.next_job_id = max + 1;
                        }
                    });
                    let _ = tx.send(op).await;
                }
                Err(e) => {
                    tracing::debug!("register with the accounting daemon: {}", e.message());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        let asked = std::time::Instant::now();
        match client
            .get_assocs(GetAssocsRequest {
                known_version: known,
                wait_ms: ASSOC_POLL_MS,
            })
            .await
        {
            Ok(r) => {
                let r = r.into_inner();
                let unchanged = r.set.as_ref().is_none_or(|s| s.version == known);
                if unchanged {
                    // A long poll that came back early with nothing new
                    // (a daemon that does not wait) must not become a busy loop.
                    if asked.elapsed() < Duration::from_millis(u64::from(ASSOC_POLL_MS) / 2) {
                        early_backoff =
                            (early_backoff * 2).clamp(Duration::from_secs(1), MAX_BACKOFF);
                        tracing::debug!(
                            "association poll answered early; next in {early_backoff:?}"
                        );
                        tokio::time::sleep(early_backoff).await;
                    } else {
                        early_backoff = Duration::ZERO;
                    }
                    continue;
                }
                early_backoff = Duration::ZERO;
                let Some(set) = r.set else { continue };
                known = set.version;
                let bytes = set.encode_to_vec();
                let tmp = cache.with_extension("tmp");
                if drover_proto::private::write(&tmp, &bytes)
                    .and_then(|_| std::fs::rename(&tmp, &cache))
                    .is_err()
                {
                    tracing::warn!("cannot save the association cache {}", cache.display());
                }
                let c = super::convert::to_cache(&set, &name);
                tracing::info!(
                    "associations updated: {} (version {})",
                    c.assocs.len(),
                    c.version
                );
                let op: Op = Box::new(move |ctld: &mut Ctld| ctld.assoc = c);
                let _ = tx.send(op).await;
            }
            Err(e) => {
                tracing::debug!("association watch: {}", e.message());
                // The daemon may have restarted with an empty database.
                registered = false;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
