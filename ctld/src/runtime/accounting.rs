//! The runtime side of accounting: the record builder thread, the outbox,
//! the sender to droverdbd and the association watcher.

use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use drover_conf::slurmconf::Config;
use drover_proto::client::Credential;
use prost::Message;

use super::Runtime;
use crate::acct::enforce::Enforce;
use crate::acct::{convert, enabled, outbox, record, sender, Acct};
use crate::job::Job;

/// Build and encode records off the owner task: it only clones the job.
/// The builder takes what has come, then rests for the outbox's pace:
/// records that follow each other closely are built together, and the
/// owner's send wakes no thread meanwhile.
fn start_builder(
    cluster: String,
    out: mpsc::Sender<Vec<u8>>,
) -> Result<mpsc::Sender<(Arc<Config>, Job, i64)>, String> {
    let (tx, rx) = mpsc::channel::<(Arc<Config>, Job, i64)>();
    std::thread::Builder::new()
        .name("acct-records".into())
        .spawn(move || {
            let mut names = crate::users::NameCache::default();
            while let Ok(first) = rx.recv() {
                let mut next = Some(first);
                while let Some((cfg, job, now)) = next.take() {
                    let info = crate::jobinfo::job_info(&cfg, &mut names, &job, true, now);
                    let contain = cfg
                        .prolog_flags
                        .iter()
                        .any(|f| f.eq_ignore_ascii_case("contain"));
                    let rec = record::build(&cluster, &job, &info, contain);
                    if out.send(rec.encode_to_vec()).is_err() {
                        tracing::error!("accounting outbox writer is gone");
                        return;
                    }
                    next = rx.try_recv().ok();
                }
                std::thread::sleep(outbox::PACE);
            }
        })
        .map_err(|e| format!("cannot start the accounting record builder: {e}"))?;
    Ok(tx)
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

impl Runtime {
    /// Open the outbox, load the cached associations, start the sender and
    /// the association watcher, and queue every known job once more (a
    /// record lost between the state log and the outbox in a crash is
    /// resent; the daemon ignores what it already has).
    pub fn start_accounting(&mut self, cred: Credential) -> Result<(), String> {
        if !enabled(&self.core.cfg) {
            return Ok(());
        }
        let dir = PathBuf::from(&self.core.cfg.state_save_location).join("acct");
        let (out, shared) = outbox::open(&dir)?;
        let tx = start_builder(self.core.cfg.cluster_name.clone(), out)?;
        let cache = dir.join("assoc.cache");
        if let Ok(b) = std::fs::read(&cache) {
            if let Ok(set) = drover_proto::acct::AssocSet::decode(&b[..]) {
                self.core.assoc = convert::to_cache(&set, &self.core.cfg.cluster_name);
                tracing::info!(
                    "associations from cache: {} (version {})",
                    self.core.assoc.assocs.len(),
                    self.core.assoc.version
                );
            }
        }
        let addr = self.core.cfg.dbd_addr();
        tracing::info!("accounting: droverdbd at {addr}, outbox {}", dir.display());
        let svc = drover_proto::client::accounting_service(&addr, cred)?;
        let client = drover_proto::client::accounting_over(svc.clone());
        tokio::spawn(sender::deliver(dir.clone(), shared, svc));
        tokio::spawn(sender::watch_assocs(
            client,
            cluster_info(&self.core.cfg),
            self.tx.clone(),
            cache,
            self.core.assoc.version,
        ));
        self.acct = Some(tx);
        self.core.acct = Some(Acct {
            enforce: Enforce::parse(&self.core.cfg.accounting_storage_enforce),
            dir,
        });
        // Every job's record again, in chunks once serving (`run`).
        self.core.acct_resend = self.core.jobs.keys().rev().copied().collect();
        Ok(())
    }
}
