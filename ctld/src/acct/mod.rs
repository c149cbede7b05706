//! Accounting on the controller side: every job transition becomes a record
//! in a durable outbox (StateSaveLocation/acct/) that a sender task delivers
//! in order to droverdbd; associations come back the other way and are
//! cached in [`Ctld::assoc`]. The owner task only encodes and queues: it
//! never waits for the daemon.

pub mod convert;
pub mod enforce;
pub mod outbox;
pub mod record;
pub(crate) mod sender;
pub mod settings;

pub use settings::Acct;

use crate::refusal::Refusal;
use drover_conf::slurmconf::Config;
use drover_proto::auth::Identity;
use drover_proto::JobSpec;

use crate::ctld::Ctld;
use crate::ctld::Effect;

/// Is an accounting daemon configured (`AccountingStorageType=accounting_storage/slurmdbd`)?
pub fn enabled(cfg: &Config) -> bool {
    let t = cfg.accounting_storage_type.to_ascii_lowercase();
    t.ends_with("slurmdbd") || t.ends_with("droverdbd")
}

impl Ctld {
    /// Queue the job's current state for the accounting daemon.
    pub fn acct_record(&mut self, id: u32) {
        if self.acct.is_none() {
            return;
        }
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let job = job.clone();
        self.effects.push(Effect::Account { job, now: self.now });
    }

    /// Send again the accounting records of up to `n` jobs of
    /// [`Ctld::acct_resend`] (their current state: the daemon keeps the
    /// newest, so a job changed since is only sent twice).
    pub fn resend_accounting(&mut self, n: usize) {
        for _ in 0..n {
            let Some(id) = self.acct_resend.pop() else {
                break;
            };
            self.acct_record(id);
        }
    }

    /// Accounting's say at submit: default account, associations, limits
    /// (against `want`, the resolved request's TRES).
    pub fn acct_submit_check(
        &mut self,
        who: &Identity,
        spec: &mut JobSpec,
        want: &crate::assoc::Tres,
    ) -> Result<(), Refusal> {
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
        enforce::check(&self.assoc, enforce, &user, &partition, spec, want)
            .map_err(Refusal::invalid_argument)?;
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
                    return Err(Refusal::invalid_argument(enforce::POLICY));
                }
            }
        }
        Ok(())
    }
}
