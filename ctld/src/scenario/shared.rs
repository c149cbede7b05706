//! Jobs with equal specs and requests share one copy in memory
//! (`intern.rs`); what is logged, shown and recovered is each job's own.

use std::sync::Arc;

use drover_proto::state::wal_record::Kind;
use drover_proto::UpdateJobRequest;

use super::env::{job, root, TestEnv};
use crate::ctld::Effect;

const CONF: &str = "NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                    PartitionName=p Nodes=n[1-2] Default=YES\n";

fn shares(env: &TestEnv, a: u32, b: u32) -> (bool, bool, bool) {
    let (ja, jb) = (&env.core.jobs[&a], &env.core.jobs[&b]);
    (
        std::ptr::eq(ja.spec(), jb.spec()),
        std::ptr::eq(ja.request().unwrap(), jb.request().unwrap()),
        Arc::ptr_eq(
            ja.sched_req.as_ref().unwrap(),
            jb.sched_req.as_ref().unwrap(),
        ),
    )
}

#[test]
fn equal_submissions_share_their_spec_and_request_and_log_them_whole() {
    let mut env = TestEnv::new(CONF);
    let a = env.sbatch(job(10));
    let b = env.sbatch(job(10));
    let c = env.sbatch(drover_proto::JobSpec {
        cpus_per_task: 2,
        ..job(10)
    });
    assert_eq!(shares(&env, a, b), (true, true, true));
    assert_eq!(shares(&env, a, c), (false, false, false));
    // The record in the log has the spec and the request in it.
    let logged = env
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Log(r) => match &r.kind {
                Some(Kind::Job(j)) if j.job_id == c => Some(j.clone()),
                _ => None,
            },
            _ => None,
        })
        .next_back()
        .expect("job record logged");
    assert_eq!(logged.spec.as_ref().unwrap().name, "scenario");
    assert_eq!(logged.spec.as_ref().unwrap().cpus_per_task, 2);
    assert_eq!(logged.request.as_ref().unwrap().cpus_per_task, 2);
    // In memory the record itself holds neither.
    assert!(env.core.jobs[&c].rec.spec.is_none());
}

#[test]
fn a_change_to_one_job_leaves_the_others_as_they_were() {
    let mut env = TestEnv::new(CONF);
    let a = env.sbatch(job(10));
    let b = env.sbatch(job(10));
    let r = env.core.update_job(
        root(),
        UpdateJobRequest {
            job_ids: vec![b.to_string()],
            fields: [
                ("JobName".to_string(), "renamed".to_string()),
                ("NumCPUs".to_string(), "2".to_string()),
            ]
            .into(),
            ..Default::default()
        },
    );
    assert!(r.is_ok_and(|r| r.results.iter().all(|x| x.ok)));
    env.collect();
    assert_eq!(env.core.jobs[&a].spec().name, "scenario");
    assert_eq!(env.core.jobs[&b].spec().name, "renamed");
    assert_eq!(shares(&env, a, b), (false, false, false));
    assert_eq!(env.core.jobs[&a].sched_req.as_ref().unwrap().ntasks, 1);
    // A third job like the first shares with it again.
    let c = env.sbatch(job(10));
    assert_eq!(shares(&env, a, c), (true, true, true));
}

#[test]
fn recovered_jobs_share_again_and_keep_their_own_fields() {
    let mut env = TestEnv::new(CONF);
    let ids: Vec<u32> = (0..5).map(|_| env.sbatch(job(10))).collect();
    let odd = env.sbatch(drover_proto::JobSpec {
        name: "odd".into(),
        ..job(20)
    });
    let snap = env.core.snapshot();
    let mut again = TestEnv::new(CONF);
    again.core.restore(Some(snap), Vec::new());
    for &id in &ids[1..] {
        assert_eq!(shares(&again, ids[0], id), (true, true, true));
    }
    assert_eq!(again.core.jobs[&odd].spec().name, "odd");
    assert_eq!(again.core.jobs[&odd].spec().time_limit, 20);
    assert!(!std::ptr::eq(
        again.core.jobs[&odd].spec(),
        again.core.jobs[&ids[0]].spec()
    ));
    // One spec for the five, one for the odd one (plus none left over).
    assert_eq!(again.core.shared.specs.len(), 2);
}

#[test]
fn the_snapshot_encoded_from_the_table_decodes_to_the_built_one() {
    use drover_proto::state::Snapshot;
    use prost::Message;
    let mut env = TestEnv::new(CONF);
    env.sbatch(job(10));
    env.sbatch(drover_proto::JobSpec {
        name: "other".into(),
        dependency: "afterok:1".into(),
        ..job(20)
    });
    env.sbatch(drover_proto::JobSpec {
        array: "0-9%2".into(),
        ..job(5)
    });
    let built = env.core.snapshot();
    let bytes = env.core.encode_snapshot(7);
    let decoded = Snapshot::decode(bytes.as_slice()).unwrap();
    assert_eq!(decoded.jobs.len(), 3);
    assert!(decoded
        .jobs
        .iter()
        .all(|j| j.spec.is_some() && j.request.is_some()));
    assert_eq!(
        Snapshot {
            wal_generation: 7,
            ..built
        },
        decoded
    );
}
