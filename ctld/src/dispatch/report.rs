//! sprio and sshare: job priorities and the share tree as users see them.

use drover_proto::auth::Identity;
use drover_proto::*;

use crate::ctld::Ctld;

impl Ctld {
    pub fn priorities(
        &mut self,
        who: &Identity,
        req: GetPrioritiesRequest,
    ) -> GetPrioritiesResponse {
        let pc = crate::dispatch::state::prio_conf(&self.cfg);
        // A job submitted since the last full pass has no factors yet: as
        // Slurm computes them at submission, sprio must not show zeros.
        let t = self.now;
        self.prioritize_new(t, &pc);
        let mut jobs = Vec::new();
        let viewer = self.job_viewer(who);
        // Held jobs are not listed (Slurm: "0 means the job is held").
        let ids: Vec<u32> = self.unheld().map(|(_, id)| *id).collect();
        for id in ids {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if !req.job_ids.is_empty() && !req.job_ids.contains(&id) {
                continue;
            }
            if !req.users.is_empty() && !req.users.contains(&job.rec.user_name) {
                continue;
            }
            if !viewer.sees(job.rec.uid) {
                continue;
            }
            let o = self.owner(job);
            let f = self.sched.factors.get(&id).cloned().unwrap_or_default();
            let part = job.spec().partition.split(',').next().unwrap_or("").trim();
            let part = if part.is_empty() {
                self.cluster
                    .default_part
                    .map(|p| self.cluster.parts[p].conf.name.clone())
                    .unwrap_or_default()
            } else {
                part.to_string()
            };
            jobs.push(PriorityFactors {
                job_id: id,
                partition: part,
                user: o.user,
                account: o.account,
                priority: job.rt().priority,
                site: 0.0,
                age: f.age,
                assoc: f.assoc,
                fairshare: f.fairshare,
                jobsize: f.jobsize,
                partition_factor: f.partition,
                qos: f.qos,
                nice: job.spec().nice,
                tres: f
                    .tres
                    .iter()
                    .map(|(k, v)| format!("{k}={}", v.round() as i64))
                    .collect::<Vec<_>>()
                    .join(","),
            });
        }
        jobs.sort_by_key(|j| j.job_id);
        GetPrioritiesResponse {
            jobs,
            weights: Some(PriorityWeights {
                age: pc.w_age,
                assoc: pc.w_assoc,
                fairshare: pc.w_fairshare,
                jobsize: pc.w_jobsize,
                partition: pc.w_partition,
                qos: pc.w_qos,
                tres: pc.weights_text.clone(),
            }),
            multifactor: pc.multifactor,
        }
    }

    pub fn shares(&mut self, who: &Identity) -> GetSharesResponse {
        let pc = crate::dispatch::state::prio_conf(&self.cfg);
        let t = self.now;
        self.charge_usage(t, &pc);
        // PrivateData=usage: a user sees only their own rows.
        let own = (self.private().usage && !self.sees_all(who))
            .then(|| self.names.user(who.uid).to_string());
        let rows = self
            .share_rows(&pc)
            .into_iter()
            .filter(|r| own.as_ref().is_none_or(|u| &r.user == u))
            .map(|r| ShareRow {
                account: r.account,
                user: r.user,
                raw_shares: r.raw_shares,
                norm_shares: r.norm_shares,
                raw_usage: r.raw_usage,
                effective_usage: r.effective_usage,
                fairshare: r.fairshare,
                depth: r.depth,
            })
            .collect();
        GetSharesResponse { rows }
    }
}
