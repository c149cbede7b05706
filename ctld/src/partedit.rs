//! `scontrol create|update|delete partition`: partitions edited at run time.
//!
//! An edit is kept as typed ([`PartitionEdit`]) and applied over the
//! partitions slurm.conf defines; the list of edits in force is logged whole
//! after each one (a `part_edits` record), so a restarted controller replays
//! them over slurm.conf (what `slurmctld -R` recovers from its partition
//! state file). `scontrol reconfigure` rebuilds the partitions from
//! slurm.conf alone and drops the edits, as Slurm does without
//! `ReconfigFlags=KeepPartInfo`.

use std::sync::Arc;

use crate::refusal::Refusal;
use drover_conf::{apply_partition_words, PartitionConf};
use drover_proto::auth::Identity;
use drover_proto::state::{wal_record::Kind, PartitionEdits, WalRecord};
use drover_proto::{PartitionEdit, PartitionEditResponse};

use crate::ctld::Ctld;
use crate::submit::msg;

/// Slurm's ESLURM_PARTITION_IN_USE.
const IN_USE: &str = "Partition is in use";
/// Slurm's ESLURM_INVALID_PARTITION_NAME.
const INVALID_NAME: &str = "Invalid partition name specified";

impl Ctld {
    /// The RPC: operators and admins only; durable before the reply.
    pub fn edit_partition(
        &mut self,
        who: &Identity,
        edit: PartitionEdit,
    ) -> Result<PartitionEditResponse, Refusal> {
        if !self.is_admin(who) && !self.is_operator(who) {
            return Err(Refusal::permission_denied(msg::ACCESS));
        }
        if edit.op == "delete" && self.partition_in_use(&edit.name) {
            return Err(Refusal::failed_precondition(IN_USE));
        }
        self.apply_partition_edit(&edit)
            .map_err(Refusal::invalid_argument)?;
        tracing::info!(op = %edit.op, partition = %edit.name, args = ?edit.args, "partition edited");
        self.part_edits.push(edit);
        self.log_part_edits();
        self.refresh_requests();
        self.sched_needed = true;
        self.full_pass_needed = true;
        Ok(PartitionEditResponse {})
    }

    /// Log the edits in force (the whole list: the last record wins).
    pub fn log_part_edits(&mut self) {
        let edits = self.part_edits.clone();
        self.log(WalRecord {
            kind: Some(Kind::PartEdits(PartitionEdits { edits })),
        });
    }

    /// Whether a job not yet finished is in (or asks for) partition `name`.
    fn partition_in_use(&self, name: &str) -> bool {
        let default = self
            .cluster
            .default_part
            .map(|i| self.cluster.parts[i].conf.name.as_str());
        self.jobs.values().any(|j| {
            if j.state().is_final() {
                return false;
            }
            let p = crate::jobindex::job_partition(j);
            if p.is_empty() {
                default == Some(name)
            } else {
                p.split(',').any(|x| x == name)
            }
        })
    }

    /// Apply one edit to the configuration and the cluster (also on replay).
    pub fn apply_partition_edit(&mut self, edit: &PartitionEdit) -> Result<(), String> {
        let mut parts = self.cfg.partitions.clone();
        let at = parts.iter().position(|p| p.name == edit.name);
        match (edit.op.as_str(), at) {
            ("create", Some(_)) => return Err(format!("Duplicate partition name: {}", edit.name)),
            ("create", None) => {
                if edit.name.is_empty() || edit.name.contains([',', '[', ']', ' ']) {
                    return Err(INVALID_NAME.into());
                }
                let mut p = PartitionConf::new(&edit.name);
                apply_partition_words(&mut p, &pairs(&edit.args)?, &self.cfg)?;
                parts.push(p);
            }
            ("update", Some(i)) => {
                apply_partition_words(&mut parts[i], &pairs(&edit.args)?, &self.cfg)?
            }
            ("delete", Some(i)) => {
                parts.remove(i);
            }
            ("update" | "delete", None) => return Err(INVALID_NAME.into()),
            (op, _) => return Err(format!("invalid partition edit '{op}'")),
        }
        if edit.op != "delete" && parts.iter().any(|p| p.name == edit.name && p.default) {
            // Default=YES on one partition takes it off the others.
            for p in parts.iter_mut().filter(|p| p.name != edit.name) {
                p.default = false;
            }
        }
        self.cluster.set_partitions(&parts);
        Arc::make_mut(&mut self.cfg).partitions = parts;
        Ok(())
    }

    /// Replay the logged edits over slurm.conf's partitions (restore); an
    /// edit slurm.conf no longer allows (a node gone) is skipped and logged.
    pub fn replay_partition_edits(&mut self, edits: Vec<PartitionEdit>) {
        for e in edits {
            match self.apply_partition_edit(&e) {
                Ok(()) => self.part_edits.push(e),
                Err(m) => tracing::warn!(
                    op = %e.op, partition = %e.name,
                    "partition edit not recovered: {m}"
                ),
            }
        }
    }
}

/// `Key=Value` words to pairs; a word without `=` is refused as Slurm does.
fn pairs(args: &[String]) -> Result<Vec<(String, String)>, String> {
    args.iter()
        .map(|w| {
            w.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("Invalid input: {w}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(op: &str, name: &str, args: &[&str]) -> PartitionEdit {
        PartitionEdit {
            op: op.into(),
            name: name.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn user(uid: u32) -> Identity {
        Identity {
            uid,
            gid: uid,
            groups: Vec::new(),
            daemon: false,
            host: "h".into(),
        }
    }

    fn ctld() -> Ctld {
        let text = "ClusterName=t\nSlurmctldHost=localhost\nNodeName=n[1-2] CPUs=2\n\
                    PartitionName=p Nodes=n[1-2] Default=YES\n";
        let (cfg, _) = drover_conf::slurmconf::parse_str(text, "slurm.conf", &mut |p| {
            Err(format!("no Include: {p}"))
        })
        .expect("config");
        Ctld::new(cfg, "slurm.conf".into(), 0, 0, "h".into())
    }

    #[test]
    fn create_update_delete() {
        let mut c = ctld();
        c.apply_partition_edit(&edit("create", "q", &["Nodes=n2", "MaxTime=10"]))
            .unwrap();
        let i = c.cluster.part_idx("q").unwrap();
        assert_eq!(c.cluster.parts[i].conf.max_time_min, Some(10));
        assert_eq!(c.cluster.parts[i].nodes, vec![1]);
        assert_eq!(c.cluster.nodes[1].partitions, vec!["p", "q"]);
        c.apply_partition_edit(&edit("update", "q", &["State=DOWN", "Default=YES"]))
            .unwrap();
        assert!(!c.cluster.parts[i].up());
        assert_eq!(c.cluster.default_part, Some(i));
        assert!(!c.cfg.partitions[0].default);
        c.apply_partition_edit(&edit("delete", "q", &[])).unwrap();
        assert!(c.cluster.part_idx("q").is_none());
        assert_eq!(c.cluster.nodes[1].partitions, vec!["p"]);
    }

    #[test]
    fn edits_are_recovered_from_snapshot_and_log() {
        let mut c = ctld();
        let who = user(0);
        c.edit_partition(&who, edit("create", "q", &["Nodes=n1"]))
            .unwrap();
        let snap = c.snapshot();
        c.edit_partition(&who, edit("update", "p", &["MaxTime=7"]))
            .unwrap();
        // The last record holds every edit in force.
        let last = c
            .effects
            .iter()
            .rev()
            .find_map(|e| match e {
                crate::effect::Effect::Log(r) => Some((**r).clone()),
                _ => None,
            })
            .unwrap();
        let mut r = ctld();
        r.restore(Some(snap.clone()), vec![last]);
        assert!(r.cluster.part_idx("q").is_some());
        assert_eq!(r.cluster.parts[0].conf.max_time_min, Some(7));
        assert_eq!(r.part_edits.len(), 2);
        // From the snapshot alone: the create only.
        let mut r = ctld();
        r.restore(Some(snap), vec![]);
        assert!(r.cluster.part_idx("q").is_some());
        assert_eq!(r.cluster.parts[0].conf.max_time_min, None);
        // Not an admin (nor an accounting operator): refused.
        let nobody = user(65534);
        let e = c
            .edit_partition(&nobody, edit("delete", "q", &[]))
            .unwrap_err();
        assert_eq!(e.words(), msg::ACCESS);
    }

    #[test]
    fn bad_edits_are_refused() {
        let mut c = ctld();
        let e = |c: &mut Ctld, op, name, args: &[&str]| {
            c.apply_partition_edit(&edit(op, name, args)).unwrap_err()
        };
        assert_eq!(e(&mut c, "create", "p", &[]), "Duplicate partition name: p");
        assert_eq!(e(&mut c, "update", "x", &["MaxTime=1"]), INVALID_NAME);
        assert!(e(&mut c, "update", "p", &["MaxTime=soon"]).contains("MaxTime"));
        assert!(e(&mut c, "update", "p", &["Nodes=n9"]).contains("n9"));
        assert!(e(&mut c, "update", "p", &["Colour=red"]).contains("not supported"));
        assert_eq!(
            e(&mut c, "update", "p", &["MaxTime"]),
            "Invalid input: MaxTime"
        );
        // Nothing changed.
        assert_eq!(c.cluster.parts.len(), 1);
        assert_eq!(c.cluster.parts[0].conf.max_time_min, None);
    }
}
