//! Submissions: a trace job (or an array's tasks) as sbatch would send
//! it, its dependency renamed to the simulated job ids, its answer kept.

use std::sync::{Arc, Mutex};

use drover_ctld::ctld::Reply;
use drover_proto::auth::Identity;
use drover_proto::SubmitResponse;

use super::{Event, Sim, FIRST_UID, NO_TASK};

impl Sim {
    pub(super) fn uid(&self, user: &str) -> Identity {
        let uid = self.uids.get(user).copied().unwrap_or(FIRST_UID);
        Identity {
            uid,
            gid: uid,
            groups: vec![uid],
            daemon: false,
            host: "sim".into(),
        }
    }

    pub(super) fn submit(&mut self, s: usize) {
        let idx = self.subs[s].jobs.clone();
        let first = &self.trace[idx[0]];
        let who = self.uid(&first.user);
        let mut spec = first.spec();
        let (dep, is_array) = (first.dependency.clone(), first.array.is_some());
        if first.nodes == 0 {
            // `-n N` alone: Slurm spreads the tasks over as many nodes as
            // they need. This core reads absent node counts as one node, so
            // the range is made explicit: from the fewest nodes that could
            // hold the CPUs to the partition's node count.
            let (count, widest) = self.part_shape(&spec.partition);
            let fewest = spec.ntasks.div_ceil(widest).max(1);
            if fewest > 1 {
                spec.min_nodes = fewest;
                spec.max_nodes = spec.ntasks.min(count).max(fewest);
            }
        }
        spec.dependency = self.remap_dependency(&dep);
        let tasks: Vec<u32> = idx
            .iter()
            .filter_map(|&i| self.trace[i].array.as_ref().map(|a| a.1))
            .collect();
        if is_array {
            spec.array = drover_conf::hostlist::ranges(&tasks);
        }
        let got: Arc<Mutex<Option<Result<SubmitResponse, drover_ctld::refusal::Refusal>>>> =
            Arc::default();
        let slot = got.clone();
        let reply = Reply::new(move |v| {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(v);
            true
        });
        self.core.submit(who, spec, reply);
        self.perform();
        let answer = got.lock().unwrap_or_else(|e| e.into_inner()).take();
        let first = &self.trace[idx[0]];
        match answer {
            Some(Ok(r)) => {
                let id = r.job_id;
                match &first.array {
                    Some((a, _)) => {
                        self.core_id.insert(a.clone(), id);
                        for &i in &idx {
                            let task = self.trace[i].array.as_ref().map_or(NO_TASK, |a| a.1);
                            self.trace_of.insert((id, task), i);
                        }
                    }
                    None => {
                        self.core_id.insert(first.id.clone(), id);
                        self.trace_of.insert((id, NO_TASK), idx[0]);
                    }
                }
                for &i in &idx {
                    if let Some(at) = self.trace[i].cancel_at {
                        self.push(at.max(self.core.now), Event::Cancel { trace: i });
                    }
                }
            }
            Some(Err(e)) => {
                for &i in &idx {
                    let j = &self.trace[i];
                    self.out
                        .refused
                        .push((j.line, j.id.clone(), e.words().to_string()));
                }
            }
            None => {
                let j = &self.trace[idx[0]];
                self.out
                    .refused
                    .push((j.line, j.id.clone(), "not answered".into()));
            }
        }
    }

    /// (nodes, most CPUs of one node) of a partition ("" = the default).
    fn part_shape(&mut self, name: &str) -> (u32, u32) {
        if let Some(&v) = self.part_shapes.get(name) {
            return v;
        }
        let cfg = &self.core.cfg;
        let part = cfg.partition(name).or_else(|| cfg.default_partition());
        let nodes = part
            .map(|p| cfg.partition_nodes(&p.name))
            .unwrap_or_default();
        let widest = nodes.iter().map(|n| n.cpus).max().unwrap_or(1).max(1);
        let v = (nodes.len() as u32, widest);
        self.part_shapes.insert(name.to_string(), v);
        v
    }

    /// The trace's dependency with its job ids replaced by the simulated
    /// ones; conditions on jobs outside the trace are dropped.
    fn remap_dependency(&mut self, text: &str) -> String {
        use drover_ctld::deps::{self, Kind};
        let Ok(Some(dep)) = deps::parse(text) else {
            return String::new();
        };
        let mut parts = Vec::new();
        for c in &dep.conds {
            let kind = match c.kind {
                Kind::After => "after",
                Kind::AfterOk => "afterok",
                Kind::AfterNotOk => "afternotok",
                Kind::AfterAny => "afterany",
                Kind::AfterCorr => "aftercorr",
                Kind::Singleton => {
                    parts.push("singleton".to_string());
                    continue;
                }
            };
            let Some((id, task)) = c.job else { continue };
            // A job the controller no longer knows (outside the trace, or
            // forgotten after MinJobAge) would make Slurm refuse the
            // submission; the condition is dropped instead, and counted.
            let Some(&core) = self
                .core_id
                .get(&id.to_string())
                .filter(|c| self.core.jobs.contains_key(c))
            else {
                self.out.deps_dropped += 1;
                continue;
            };
            let mut p = format!("{kind}:{core}");
            if let Some(t) = task {
                p.push_str(&format!("_{t}"));
            }
            if c.delay_min > 0 {
                p.push_str(&format!("+{}", c.delay_min));
            }
            parts.push(p);
        }
        parts.join(if dep.any { "?" } else { "," })
    }
}
