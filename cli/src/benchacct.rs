//! `drover bench acct-fill --jobs N`: store N synthetic finished jobs (with
//! batch steps) in droverdbd through the controller's API (cluster key
//! required), spread over the last hours, many users and accounts. Feeds
//! the sacct benchmark (bench/acct.sh).

use std::path::Path;
use std::time::Instant;

use drover_proto::acct::{JobRecord, RecordJobsRequest, StepRecord};
use drover_proto::auth::ClusterKey;
use drover_proto::client::Credential;
use drover_proto::JobState;

const USAGE: &str = "usage: drover bench acct-fill [--jobs N] [--first-id ID]";

/// The synthetic record number `i` (deterministic). Pure.
pub fn synthetic(cluster: &str, id: u32, i: u32, now: i64) -> JobRecord {
    let submit = now - 3 * 3600 + i64::from(i % 10_000);
    let start = submit + i64::from(i % 7);
    let end = start + 30 + i64::from(i % 600);
    let state = if i.is_multiple_of(17) {
        JobState::Failed
    } else if i.is_multiple_of(23) {
        JobState::Cancelled
    } else {
        JobState::Completed
    };
    let uid = 2000 + i % 50;
    let node = format!("node{}", 1 + i % 64);
    JobRecord {
        cluster: cluster.into(),
        job_id: id,
        name: format!("job{}", i % 100),
        uid,
        user: format!("user{}", i % 50),
        gid: uid,
        account: format!("acct{}", i % 8),
        qos: "normal".into(),
        partition: "debug".into(),
        submit_time: submit,
        eligible_time: submit,
        start_time: start,
        end_time: end,
        state: state as i32,
        exit_code: if state == JobState::Failed { 1 } else { 0 },
        cancelled: state == JobState::Cancelled,
        time_limit: 60,
        nodelist: node.clone(),
        nnodes: 1,
        ncpus: 1 + i % 4,
        ntasks: 1,
        req_tres: format!("cpu={},mem=1G,node=1,billing={}", 1 + i % 4, 1 + i % 4),
        alloc_tres: format!("cpu={},mem=1G,node=1,billing={}", 1 + i % 4, 1 + i % 4),
        req_mem_mb: 1024,
        work_dir: "/tmp".into(),
        reason: "None".into(),
        transition: 4,
        cpu_time_usec: u64::from(i % 600) * 900_000,
        max_rss_kb: 1024 * u64::from(1 + i % 512),
        steps: vec![StepRecord {
            step_id: -5,
            name: "batch".into(),
            nodelist: node,
            nnodes: 1,
            ntasks: 1,
            ncpus: 1 + i % 4,
            start_time: start,
            end_time: end,
            state: state as i32,
            cpu_time_usec: u64::from(i % 600) * 900_000,
            max_rss_kb: 1024 * u64::from(1 + i % 512),
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub fn run(args: &[String]) -> i32 {
    let (mut jobs, mut first) = (100_000u32, 1_000_000u32);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().and_then(|s| s.parse::<u32>().ok());
        match (a.as_str(), v) {
            ("--jobs", Some(n)) => jobs = n,
            ("--first-id", Some(n)) => first = n,
            _ => {
                eprintln!("{USAGE}");
                return 2;
            }
        }
    }
    let (cfg, rt) = match crate::conn::setup("drover") {
        Ok(x) => x,
        Err(rc) => return rc,
    };
    let key = match ClusterKey::load(Path::new(&cfg.auth_key_file)) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("drover: error: {e}");
            return 1;
        }
    };
    let cred = Credential::daemon(key, drover_proto::auth::hostname());
    let addr = cfg.dbd_addr();
    rt.block_on(async move {
        let mut client = match drover_proto::client::accounting(&addr, cred) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("drover: error: {e}");
                return 1;
            }
        };
        let now = crate::timefmt::now();
        let t0 = Instant::now();
        let mut i = 0;
        while i < jobs {
            let n = (jobs - i).min(5000);
            let batch: Vec<JobRecord> = (i..i + n)
                .map(|k| synthetic(&cfg.cluster_name, first + k, k, now))
                .collect();
            if let Err(e) = client.record_jobs(RecordJobsRequest { jobs: batch }).await {
                eprintln!("drover: error: {}", e.message());
                return 1;
            }
            i += n;
        }
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "acct fill: {jobs} jobs in {:.1} s = {:.0} records/s",
            secs,
            f64::from(jobs) / secs
        );
        0
    })
}
