//! Accounting on the controller side: every job transition becomes a record
//! in a durable outbox (StateSaveLocation/acct/) that a sender task delivers
//! in order to droverdbd; associations come back the other way and are
//! cached in [`Ctld::assoc`]. The owner task only encodes and queues: it
//! never waits for the daemon.

pub mod convert;
pub mod enforce;
pub mod outbox;
pub mod record;
mod sender;

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use drover_conf::slurmconf::Config;
use drover_proto::auth::Identity;
use drover_proto::JobSpec;
use prost::Message;
use tonic::Status;

use crate::ctld::Ctld;
use crate::job::Job;

/// Build and encode records off the owner task: it only clones the job.
fn start_builder(
    cluster: String,
    out: mpsc::Sender<Vec<u8>>,
) -> Result<mpsc::Sender<(Arc<Config>, Job)>, String> {
    let (tx, rx) = mpsc::channel::<(Arc<Config>, Job)>();
    std::thread::Builder::new()
        .name("acct-records".into())
        .spawn(move || {
            let mut names = crate::users::NameCache::default();
            while let Ok((cfg, job)) = rx.recv() {
                let info = crate::jobinfo::job_info(&cfg, &mut names, &job, true);
                let contain = cfg
                    .prolog_flags
                    .iter()
                    .any(|f| f.eq_ignore_ascii_case("contain"));
                let rec = record::build(&cluster, &job, &info, contain);
                if out.send(rec.encode_to_vec()).is_err() {
                    tracing::error!("accounting outbox writer is gone");
                    return;
                }
            }
        })
        .map_err(|e| format!("cannot start the accounting record builder: {e}"))?;
    Ok(tx)
}

/// The controller's accounting handle.
pub struct Acct {
    /// To the record builder thread (then the outbox writer).
    tx: mpsc::Sender<(Arc<Config>, Job)>,
    pub enforce: enforce::Enforce,
    pub dir: PathBuf,
}

/// Is an accounting daemon configured (`AccountingStorageType=accounting_storage/slurmdbd`)?
pub fn enabled(cfg: &Config) -> bool {
    let t = cfg.accounting_storage_type.to_ascii_lowercase();
    t.ends_with("slurmdbd") || t.ends_with("droverdbd")
}

/// The cluster as the daemon records it (size for utilization reports).
fn cluster_info(cfg: &Config) -> drover_proto::acct::Cluster {
    let cpus: u32 = cfg.nodes.iter().map(|n| n.cpus).sum();
    let mem: u64 = cfg.nodes.iter().map(|n| n.real_memory).sum();
    let gpus: u64 = cfg
        .nodes
        .iter()
        .flat_map(|n| n.gres.iter())
        .filter(|g| g.name == "gpu")
        .map(|g| g.count)
        .sum();
    let mut tres = format!("cpu={cpus},mem={mem}M,node={}", cfg.nodes.len());
    if gpus > 0 {
        tres.push_str(&format!(",gres/gpu={gpus}"));
    }
    drover_proto::acct::Cluster {
        name: cfg.cluster_name.clone(),
        control_host: cfg.control_host().to_string(),
        control_port: u32::from(cfg.slurmctld_port),
        cpus,
        nodes: cfg.nodes.len() as u32,
        tres,
        registered: 0,
    }
}

impl Ctld {
    /// Open the outbox, load the cached associations, start the sender and
    /// the association watcher, and queue every known job once more (a
    /// record lost between the state log and the outbox in a crash is
    /// resent; the daemon ignores what it already has).
    pub fn start_accounting(&mut self) -> Result<(), String> {
        if !enabled(&self.cfg) {
            return Ok(());
        }
        let dir = PathBuf::from(&self.cfg.state_save_location).join("acct");
        let (out, shared) = outbox::open(&dir)?;
        let tx = start_builder(self.cfg.cluster_name.clone(), out)?;
        let cache = dir.join("assoc.cache");
        if let Ok(b) = std::fs::read(&cache) {
            if let Ok(set) = drover_proto::acct::AssocSet::decode(&b[..]) {
                self.assoc = convert::to_cache(&set, &self.cfg.cluster_name);
                tracing::info!(
                    "associations from cache: {} (version {})",
                    self.assoc.assocs.len(),
                    self.assoc.version
                );
            }
        }
        let addr = self.cfg.dbd_addr();
        tracing::info!("accounting: droverdbd at {addr}, outbox {}", dir.display());
        let client = drover_proto::client::accounting(&addr, self.cred.clone())?;
        tokio::spawn(sender::deliver(dir.clone(), shared, client.clone()));
        tokio::spawn(sender::watch_assocs(
            client,
            cluster_info(&self.cfg),
            self.tx.clone(),
            cache,
            self.assoc.version,
        ));
        self.acct = Some(Acct {
            tx,
            enforce: enforce::Enforce::parse(&self.cfg.accounting_storage_enforce),
            dir,
        });
        let ids: Vec<u32> = self.jobs.keys().copied().collect();
        for id in ids {
            self.acct_record(id);
        }
        Ok(())
    }

    /// Queue the job's current state for the accounting daemon.
    pub fn acct_record(&mut self, id: u32) {
        if self.acct.is_none() {
            return;
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let job: Job = (**job).clone();
        if let Some(a) = &self.acct {
            if a.tx.send((self.cfg.clone(), job)).is_err() {
                tracing::error!("accounting record builder is gone; job {id} not recorded");
            } else {
                drover_proto::metrics::ACCT_QUEUED
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Accounting's say at submit: default account, associations, limits.
    pub fn acct_submit_check(&mut self, who: &Identity, spec: &mut JobSpec) -> Result<(), Status> {
        let Some(a) = &self.acct else {
            return Ok(());
        };
        let enforce = a.enforce;
        let user = self.names.user(who.uid).to_string();
        let partition = if spec.partition.is_empty() {
            self.cluster
                .default_part
                .map(|p| self.cluster.parts[p].conf.name.clone())
                .unwrap_or_default()
        } else {
            spec.partition.clone()
        };
        enforce::check(&self.assoc, enforce, &user, &partition, spec)
            .map_err(Status::invalid_argument)?;
        if enforce.limits {
            if let Some(max) = enforce::max_submit(&self.assoc, &user, &spec.account, &partition) {
                let mine = self
                    .jobs
                    .values()
                    .filter(|j| {
                        j.rec.uid == who.uid
                            && !j.state().is_final()
                            && j.spec().account == spec.account
                    })
                    .count();
                if mine as u64 >= u64::from(max) {
                    return Err(Status::invalid_argument(enforce::POLICY));
                }
            }
        }
        Ok(())
    }
}
