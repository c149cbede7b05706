//! A job record written before requests were resolved at submit (no
//! `request` field) gets its request at recovery, resolved against its
//! partition's defaults; the start-up snapshot then stores it, so a later
//! change of the defaults does not move it.

use std::path::Path;

use drover_conf::Config;
use drover_ctld::runtime::{AgentPool, Runtime};
use drover_ctld::wal::Wal;
use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::state::{wal_record::Kind, JobRecord, JobRuntime, WalRecord};
use drover_proto::{JobSpec, JobState};

fn config(state: &Path, def_mem_per_cpu: u32) -> Config {
    let text = format!(
        "ClusterName=t\nStateSaveLocation={}\nNodeName=n1 CPUs=4 RealMemory=1000\n\
         PartitionName=p Nodes=n1 Default=YES DefMemPerCPU={def_mem_per_cpu}\n",
        state.display()
    );
    let mut no_include = |p: &str| -> Result<(String, String), String> { Err(p.to_string()) };
    drover_conf::slurmconf::parse_str(&text, "drover.conf", &mut no_include)
        .unwrap()
        .0
}

fn recover(state: &Path, def_mem_per_cpu: u32) -> Runtime {
    let (tx, _rx) = tokio::sync::mpsc::channel(8);
    let key = ClusterKey::from_bytes(b"0123456789abcdef0123456789abcdef");
    let agents = AgentPool::new(Credential::daemon(key, "test".into()));
    Runtime::recover(
        config(state, def_mem_per_cpu),
        state.join("drover.conf"),
        agents,
        tx,
        None,
    )
    .unwrap()
}

#[test]
fn an_older_record_gets_its_request_at_recovery_and_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let mut wal = Wal::start(&state, 0, None).unwrap();
    wal.append(&WalRecord {
        kind: Some(Kind::Job(JobRecord {
            job_id: 7,
            spec: Some(Box::new(JobSpec {
                cpus_per_task: 2,
                partition: "p".into(),
                script: b"#!/bin/sh\ntrue\n".to_vec(),
                ..Default::default()
            })),
            runtime: Some(JobRuntime {
                state: JobState::Pending as i32,
                ..Default::default()
            }),
            request: None,
            ..Default::default()
        })),
    });
    wal.sync_blocking();
    drop(wal);

    let mut rt = recover(&state, 100);
    let job = &rt.core.jobs[&7];
    let r = job.request().expect("resolved at recovery");
    assert_eq!(
        (r.mem_per_cpu_mb, r.cpus_per_task, r.defaults_from.as_str()),
        (100, 2, "p")
    );
    let sched = job.sched_req.as_ref().expect("scheduler form made");
    assert_eq!((sched.mem_per_cpu, sched.cpus_per_task), (100, 2));
    rt.sync();
    drop(rt);

    // Recovered again (from the snapshot written at start-up) under a new
    // default: the request stays as it was resolved.
    let rt = recover(&state, 300);
    let r = rt.core.jobs[&7].request().expect("stored");
    assert_eq!(r.mem_per_cpu_mb, 100);
}
