//! `GET /slurm/v0.0.40/jobs` through droverrestd's job cache against a
//! real controller (change numbers, the unchanged-listing answer, the
//! answer streamed with its length), and `GET /job/A_i` of a pending
//! array task.

use drover_tests::rest::{jwt_key_ready, jwt_spec, token, RestD};
use drover_tests::Cluster;
use serde_json::Value;

const V: &str = "/slurm/v0.0.40";

fn cluster() -> Cluster {
    Cluster::start(jwt_spec())
}

/// Every job object with its `run_time` and the envelope's times left
/// out (they move with the clock).
fn jobs_of(body: &Value) -> Vec<Value> {
    body["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            let mut j = j.clone();
            j.as_object_mut().expect("object").remove("run_time");
            j
        })
        .collect()
}

fn by_id(jobs: &[Value], id: u32) -> &Value {
    jobs.iter()
        .find(|j| j["job_id"].as_u64() == Some(u64::from(id)))
        .unwrap_or_else(|| panic!("job {id} not listed"))
}

/// Each listing is what the controller says now: repeated listings of an
/// unchanged queue are the same, a hold or an update made between two
/// listings (in the same second or not) shows in the next, with its
/// `Content-Length`, and another user's listing is theirs.
#[test]
fn rest_jobs_listing_follows_every_change_and_repeats_an_unchanged_queue() {
    let c = cluster();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let tok = token(&c, &["username=nobody", "lifespan=600"]);
    let h = [
        ("X-SLURM-USER-NAME", "nobody"),
        ("X-SLURM-USER-TOKEN", tok.as_str()),
    ];
    let mut http = rest.tcp();
    let ids: Vec<u32> = (0..5)
        .map(|_| c.sbatch(&["-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n"))
        .collect();
    let mut list = || {
        let r = http.request("GET", &format!("{V}/jobs"), &h, b"");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            r.header("content-length").map(str::to_string),
            Some(r.body.len().to_string()),
            "sent with its length"
        );
        assert!(r.header("transfer-encoding").is_none());
        jobs_of(&r.json())
    };
    let first = list();
    assert_eq!(first.len(), ids.len());
    for _ in 0..3 {
        assert_eq!(list(), first, "an unchanged queue lists the same");
    }
    // Changes made right after a listing (most likely in its second).
    for (n, id) in ids.iter().enumerate() {
        let nice = format!("Nice={}", 10 + n);
        c.ok("scontrol", &["update", &format!("JobId={id}"), &nice]);
        let now = list();
        assert_eq!(by_id(&now, *id)["nice"], 10 + n as u64, "job {id}");
        assert_eq!(list(), now);
    }
    c.ok("scontrol", &["release", &ids[0].to_string()]);
    let now = list();
    let reason = by_id(&now, ids[0])["state_reason"].as_str().unwrap_or("");
    assert!(!reason.starts_with("JobHeld"), "{reason}");
    let held = by_id(&now, ids[1])["state_reason"].as_str().unwrap_or("");
    assert!(held.starts_with("JobHeld"), "{held}");
    c.ok("scancel", &[&ids[2].to_string()]);
    let now = list();
    assert_eq!(by_id(&now, ids[2])["job_state"][0], "CANCELLED");
    // A listing of a fresh cache (another daemon) is the same.
    let other = RestD::start(&c, &[]);
    let r = other.tcp().request("GET", &format!("{V}/jobs"), &h, b"");
    assert_eq!(jobs_of(&r.json()), list());
    for id in &ids {
        c.run("scancel", &[&id.to_string()]);
    }
}

/// `GET /job/A_i` of a task still pending in its array's record shows that
/// task, as `scontrol show job A_i` does; a task split off (held alone) is
/// its own record; a task the array does not have is not found.
#[test]
fn rest_job_of_a_pending_array_task_is_that_task() {
    let c = cluster();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let mut u = rest.unix();
    let arr = c.sbatch(
        &["-H", "--array=0-3", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let show = |u: &mut drover_tests::rest::Conn<std::os::unix::net::UnixStream>, id: &str| {
        let r = u.request("GET", &format!("{V}/job/{id}"), &[], b"");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["jobs"].as_array().cloned().expect("jobs")
    };
    let got = show(&mut u, &format!("{arr}_1"));
    assert_eq!(got.len(), 1, "one job: {got:?}");
    let t = &got[0];
    assert_eq!(t["array_job_id"]["number"], u64::from(arr));
    assert_eq!(t["array_task_id"]["number"], 1, "{t}");
    assert_eq!(t["array_task_id"]["set"], true, "{t}");
    assert_eq!(
        t["array_task_string"], "",
        "not the array's pending tasks: {t}"
    );
    assert_eq!(t["job_state"][0], "PENDING");
    // scontrol's JSON for the same task agrees.
    let out = c.ok("scontrol", &["--json", "show", "job", &format!("{arr}_1")]);
    let s: Value = serde_json::from_str(&out).expect("scontrol --json");
    let s = &s["jobs"][0];
    assert_eq!(s["array_job_id"], t["array_job_id"]);
    assert_eq!(s["job_id"], t["job_id"]);
    // The whole array: its pending tasks in one record.
    let whole = show(&mut u, &arr.to_string());
    assert_eq!(whole[0]["array_task_string"], "0-3", "{whole:?}");
    // Task 3 split off by a hold of its own: its own record.
    c.ok("scontrol", &["hold", &format!("{arr}_3")]);
    let got = show(&mut u, &format!("{arr}_3"));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["array_task_id"]["number"], 3);
    assert_ne!(got[0]["job_id"].as_u64(), Some(u64::from(arr)));
    let got = show(&mut u, &format!("{arr}_2"));
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["array_task_id"]["number"], 2);
    let r = u.request("GET", &format!("{V}/job/{arr}_9"), &[], b"");
    assert_eq!(r.status, 404, "{}", r.body);
    c.run("scancel", &[&arr.to_string()]);
}
