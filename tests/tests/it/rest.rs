//! droverrestd: Slurm's REST API over real HTTP on loopback (and its Unix
//! socket), in front of a real cluster; tokens from `scontrol token`.

use std::time::Duration;

use drover_tests::rest::{jwt_key_ready, jwt_spec, token, RestD};
use drover_tests::{Cluster, Spec};
use serde_json::{json, Value};

const V: &str = "/slurm/v0.0.40";

fn cluster() -> Cluster {
    Cluster::start(jwt_spec())
}

fn cluster_with_accounting() -> Cluster {
    Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..jwt_spec()
    })
}

fn auth<'a>(user: &'a str, tok: &'a str) -> [(&'a str, &'a str); 2] {
    [("X-SLURM-USER-NAME", user), ("X-SLURM-USER-TOKEN", tok)]
}

/// A job's submission (its output unread: not into /tmp's shared
/// `slurm-%j.out` names, which another user's run may hold).
fn submit_body(name: &str, hold: bool) -> Vec<u8> {
    json!({
        "script": "#!/bin/sh\nsleep 300\n",
        "job": {
            "name": name,
            "current_working_directory": "/tmp",
            "standard_output": "/dev/null",
            "environment": ["PATH=/bin:/usr/bin"],
            "hold": hold,
        }
    })
    .to_string()
    .into_bytes()
}

fn job_ids(v: &Value) -> Vec<u64> {
    v["jobs"]
        .as_array()
        .expect("jobs array")
        .iter()
        .map(|j| j["job_id"].as_u64().expect("job_id"))
        .collect()
}

#[test]
fn rest_submit_list_show_update_cancel_as_owner() {
    let c = cluster_with_accounting();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let tok = token(&c, &["username=nobody", "lifespan=600"]);
    let h = auth("nobody", &tok);
    let mut http = rest.tcp();

    let r = http.request("GET", &format!("{V}/ping"), &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["pings"][0]["pinged"], "UP");

    // Submit (held, so it waits for us) and find it everywhere.
    let r = http.request(
        "POST",
        &format!("{V}/job/submit"),
        &h,
        &submit_body("viarest", true),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["errors"], json!([]));
    let id = v["job_id"].as_u64().expect("job_id");
    assert_eq!(v["result"]["job_id"].as_u64(), Some(id));
    let ids = id.to_string();
    assert_eq!(
        c.job_field(&ids, "UserId")
            .as_deref()
            .map(|u| u.starts_with("nobody(")),
        Some(true)
    );
    assert_eq!(c.job_field(&ids, "JobName").as_deref(), Some("viarest"));

    let r = http.request("GET", &format!("{V}/jobs"), &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(job_ids(&r.json()).contains(&id));
    // Nothing changed since a time in the future.
    let later = drover_proto::auth::now_secs() + 3600;
    let r = http.request("GET", &format!("{V}/jobs?update_time={later}"), &h, b"");
    assert_eq!(job_ids(&r.json()), Vec::<u64>::new());

    let r = http.request("GET", &format!("{V}/job/{id}"), &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let job = &r.json()["jobs"][0];
    assert_eq!(job["job_id"].as_u64(), Some(id));
    assert_eq!(job["user_name"], "nobody");
    assert_eq!(job["job_state"], json!(["PENDING"]));
    assert_eq!(job["name"], "viarest");

    // Update: time limit and nice, then release.
    let r = http.request(
        "POST",
        &format!("{V}/job/{id}"),
        &h,
        json!({"time_limit": {"set": true, "infinite": false, "number": 7}, "nice": 3})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(c.job_field(&ids, "TimeLimit").as_deref(), Some("00:07:00"));
    assert_eq!(c.job_field(&ids, "Nice").as_deref(), Some("3"));
    let r = http.request("POST", &format!("{V}/job/{id}"), &h, br#"{"hold": false}"#);
    assert_eq!(r.status, 200, "{}", r.body);
    c.wait_state(&ids, &["RUNNING"], Duration::from_secs(30));

    // Cancel over the same keep-alive connection.
    let r = http.request("DELETE", &format!("{V}/job/{id}"), &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    c.wait_state(&ids, &["CANCELLED"], Duration::from_secs(30));
    let r = http.request("GET", &format!("{V}/job/{id}"), &h, b"");
    assert_eq!(r.json()["jobs"][0]["job_state"], json!(["CANCELLED"]));

    // The accounting record, through the slurmdb endpoints.
    c.wait_sacct(
        &["-X", "-n", "-P", "-j", &ids, "-o", "State"],
        Duration::from_secs(60),
        |t| t.starts_with("CANCELLED"),
    );
    let r = http.request("GET", &format!("/slurmdb/v0.0.40/job/{id}"), &h, b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let rec = &r.json()["jobs"][0];
    assert_eq!(rec["job_id"].as_u64(), Some(id));
    assert_eq!(rec["user"], "nobody");
    assert_eq!(rec["state"]["current"], json!(["CANCELLED"]));
    let r = http.request(
        "GET",
        "/slurmdb/v0.0.40/jobs?users=nobody&state=CANCELLED",
        &h,
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(job_ids(&r.json()).contains(&id), "{}", r.body);
    let r = http.request("GET", "/slurmdb/v0.0.40/jobs?users=root", &h, b"");
    assert!(!job_ids(&r.json()).contains(&id), "{}", r.body);
    for path in ["/slurmdb/v0.0.40/associations", "/slurmdb/v0.0.40/qos"] {
        let r = http.request("GET", path, &h, b"");
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let r = http.request("GET", "/slurmdb/v0.0.40/job/999999", &h, b"");
    assert_eq!(r.status, 404, "{}", r.body);
}

#[test]
fn rest_refuses_bad_tokens_other_users_and_bad_input() {
    let c = cluster();
    let key = jwt_key_ready(&c);
    let rest = RestD::start(&c, &["--max-body", "4096"]);
    let owner = token(&c, &["username=nobody"]);
    let other = token(&c, &["username=daemon"]);
    let mut http = rest.tcp();
    let h = auth("nobody", &owner);
    let r = http.request(
        "POST",
        &format!("{V}/job/submit"),
        &h,
        &submit_body("mine", true),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["job_id"].as_u64().expect("job_id");

    // Another user may not touch it: 403 in Slurm's error shape.
    let ho = auth("daemon", &other);
    for (method, body) in [("DELETE", &b""[..]), ("POST", br#"{"nice": 9}"#)] {
        let r = http.request(method, &format!("{V}/job/{id}"), &ho, body);
        assert_eq!(r.status, 403, "{method}: {}", r.body);
        assert_eq!(r.json()["errors"][0]["error_number"], 2002);
    }
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );

    // Missing, forged, expired, other-user tokens: 401 and nothing else.
    let k = drover_proto::jwt::JwtKey::load(&key).unwrap();
    let now = drover_proto::auth::now_secs();
    let expired = k
        .sign(&drover_proto::jwt::Claims {
            iat: now - 120,
            exp: now - 60,
            sun: "nobody".into(),
        })
        .unwrap();
    let wrong_key = drover_proto::jwt::JwtKey::from_bytes(b"not the cluster's jwt key!!")
        .mint("nobody", now, 600)
        .unwrap();
    let mut forged = owner.clone();
    forged.pop();
    forged.push(if owner.ends_with('A') { 'B' } else { 'A' });
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![],
        vec![("X-SLURM-USER-NAME", "nobody")],
        auth("nobody", &forged).to_vec(),
        auth("nobody", &expired).to_vec(),
        auth("nobody", &wrong_key).to_vec(),
        auth("nobody", "garbage").to_vec(),
        // daemon's token does not speak for nobody
        auth("nobody", &other).to_vec(),
    ];
    for hs in &cases {
        let r = http.request("GET", &format!("{V}/jobs"), hs, b"");
        assert_eq!(r.status, 401, "{hs:?}: {}", r.body);
        assert!(r.json().get("jobs").is_none(), "{}", r.body);
        let r = http.request("DELETE", &format!("{V}/job/{id}"), hs, b"");
        assert_eq!(r.status, 401, "{hs:?}: {}", r.body);
    }
    assert_eq!(
        c.job_field(&id.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    // A user may not mint for another.
    let out = c.run_as(1, "scontrol", &["token", "username=nobody"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Access/permission denied"));

    // Bad input: a 4xx in Slurm's shape, never a job half-submitted.
    let before = c.ok("squeue", &["-h", "-t", "all", "-o", "%i"]);
    let too_big = format!("{{\"script\": \"#!/bin/sh\\n{}\"}}", "x".repeat(8192));
    let bad: Vec<(&str, String, Vec<u8>, u16)> = vec![
        ("POST", format!("{V}/job/submit"), b"{not json".to_vec(), 400),
        ("POST", format!("{V}/job/submit"), b"[]".to_vec(), 400),
        ("POST", format!("{V}/job/submit"), too_big.into_bytes(), 413),
        (
            "POST",
            format!("{V}/job/submit"),
            json!({"script": "#!/bin/sh\n#SBATCH --time=forever\ntrue\n", "job": {"current_working_directory": "/tmp"}})
                .to_string()
                .into_bytes(),
            400,
        ),
        (
            "POST",
            format!("{V}/job/submit"),
            json!({"script": "#!/bin/sh\ntrue\n", "job": {"partition": "nosuch", "current_working_directory": "/tmp"}})
                .to_string()
                .into_bytes(),
            400,
        ),
        ("GET", format!("{V}/job/999999"), Vec::new(), 404),
        ("GET", format!("{V}/job/12x"), Vec::new(), 404),
        ("DELETE", format!("{V}/job/999999"), Vec::new(), 404),
        ("DELETE", format!("{V}/job/{id}?signal=NOPE"), Vec::new(), 400),
        ("POST", format!("{V}/job/{id}"), b"{\"nice\": \"x\"}".to_vec(), 400),
        ("GET", format!("{V}/jobs?update_time=soon"), Vec::new(), 400),
        ("GET", "/slurm/v0.0.39/jobs".to_string(), Vec::new(), 404),
        ("GET", "/slurm/v0.0.40/nosuch".to_string(), Vec::new(), 404),
        ("GET", format!("{V}/node/nosuch"), Vec::new(), 404),
        ("GET", format!("{V}/partition/nosuch"), Vec::new(), 404),
    ];
    for (method, path, body, want) in bad {
        let mut conn = rest.tcp();
        let r = conn.request(method, &path, &h, &body);
        assert_eq!(r.status, want, "{method} {path}: {}", r.body);
        let v = r.json();
        let e = &v["errors"][0];
        assert!(
            e["error_number"].as_i64().unwrap_or(0) > 0,
            "{path}: {}",
            r.body
        );
        assert!(
            !e["description"].as_str().unwrap_or("").is_empty(),
            "{path}: {}",
            r.body
        );
    }
    assert_eq!(c.ok("squeue", &["-h", "-t", "all", "-o", "%i"]), before);
}

#[test]
fn rest_unix_socket_and_cluster_views() {
    let c = cluster();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    // The local socket: the kernel says who the caller is (root here), no token.
    let mut u = rest.unix();
    let r = u.request("GET", &format!("{V}/nodes"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let names: Vec<String> = r.json()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, vec!["node1", "node2"]);
    let r = u.request("GET", &format!("{V}/node/node2"), &[], b"");
    assert_eq!(r.json()["nodes"][0]["name"], "node2");
    let r = u.request("GET", &format!("{V}/partitions"), &[], b"");
    assert_eq!(r.json()["partitions"][0]["name"], "debug");
    let r = u.request("GET", &format!("{V}/partition/debug"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let r = u.request("GET", &format!("{V}/reservations"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["reservations"], json!([]));
    let id = c.sbatch(&["-H"], "#!/bin/sh\ntrue\n");
    let r = u.request("GET", &format!("{V}/diag"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["statistics"]["jobs_submitted"].as_u64().unwrap() >= 1);
    // Arrays: the whole array A and one task A_i.
    let arr = c.sbatch(&["-H", "--array=0-2"], "#!/bin/sh\ntrue\n");
    let r = u.request("GET", &format!("{V}/job/{arr}"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let whole = r.json();
    assert!(!whole["jobs"].as_array().unwrap().is_empty(), "{}", r.body);
    assert_eq!(
        whole["jobs"][0]["array_job_id"]["number"].as_u64(),
        Some(u64::from(arr))
    );
    let r = u.request("GET", &format!("{V}/job/{arr}_1"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let task = &r.json()["jobs"][0];
    assert_eq!(
        task["array_job_id"]["number"].as_u64(),
        Some(u64::from(arr))
    );
    assert!(
        task["array_task_id"]["number"].as_u64() == Some(1)
            || task["array_task_string"].as_str() == Some("1"),
        "{task}"
    );
    let r = u.request("GET", &format!("{V}/job/{arr}_7"), &[], b"");
    assert_eq!(r.status, 404, "{}", r.body);
    // Root may act on any job over the socket.
    let r = u.request("DELETE", &format!("{V}/job/{id}"), &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    c.wait_state(&id.to_string(), &["CANCELLED"], Duration::from_secs(30));

    // The OpenAPI document: served without a token, every path in it routed.
    let r = rest.tcp().request("GET", "/openapi/v3", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    let doc = r.json();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.contains('{') || item.get("get").is_none() {
            continue;
        }
        let r = u.request("GET", path, &[], b"");
        assert!(
            !r.body.contains("Unable find requested URL"),
            "{path}: {}",
            r.body
        );
    }
    if drover_tests::rest::python() {
        let out = drover_tests::rest::run_python(
            "import sys, json\nfrom openapi_spec_validator import validate\nvalidate(json.load(sys.stdin))\nprint('valid')",
            &r.body,
        );
        assert_eq!(out.trim(), "valid");
    } else {
        eprintln!("SKIPPED (OpenAPI validation): python3 is not installed");
    }
}

#[test]
fn rest_metrics_agree_with_squeue_and_sinfo() {
    if !drover_tests::rest::python() {
        eprintln!("SKIPPED (metrics exposition check): python3 is not installed");
        return;
    }
    let c = cluster();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let held = c.sbatch(&["-H", "-c", "1"], "#!/bin/sh\ntrue\n");
    let running = c.sbatch(
        &["-c", "3", "--mem=1000", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&running.to_string(), &["RUNNING"], Duration::from_secs(30));
    let done = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.wait_done(done);

    let r = rest.tcp().request("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("text/plain"));
    let (m, types) = drover_tests::rest::parse_exposition(&r.body);
    let count = |state: &str| {
        c.ok("squeue", &["-h", "-t", state, "-o", "%i"])
            .lines()
            .count() as f64
    };
    assert_eq!(m["slurm_jobs_pending"], count("PD"), "{held}");
    assert_eq!(m["slurm_jobs_running"], count("R"));
    assert_eq!(m["slurm_jobs_completed"], count("CD"));
    assert_eq!(m["slurm_jobs"], count("all"));
    assert_eq!(
        m["slurm_partition_jobs_running{partition=\"debug\"}"],
        count("R")
    );
    assert_eq!(m["slurm_jobs_cpus_alloc"], 3.0);
    assert_eq!(
        m["slurm_partition_jobs_memory_alloc{partition=\"debug\"}"],
        1000.0 * 1024.0 * 1024.0
    );
    // Nodes as sinfo -N sees them: state and CPUs allocated/idle/total.
    let sinfo = c.ok("sinfo", &["-N", "-h", "-o", "%N %t %C"]);
    let mut mixed = 0.0;
    let mut idle = 0.0;
    for line in sinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let aiot: Vec<f64> = f[2].split('/').map(|x| x.parse().unwrap()).collect();
        let node = format!("{{node=\"{}\"}}", f[0]);
        assert_eq!(
            m[&format!("slurm_node_cpus_alloc{node}")],
            aiot[0],
            "{line}"
        );
        assert_eq!(m[&format!("slurm_node_cpus_idle{node}")], aiot[1], "{line}");
        assert_eq!(m[&format!("slurm_node_cpus{node}")], aiot[3], "{line}");
        match f[1] {
            "mix" => mixed += 1.0,
            "idle" => idle += 1.0,
            other => panic!("unexpected node state {other}"),
        }
    }
    assert_eq!(m["slurm_nodes_mixed"], mixed);
    assert_eq!(m["slurm_nodes_idle"], idle);
    assert_eq!(m["slurm_nodes"], 2.0);
    assert_eq!(m["slurm_partition_cpus{partition=\"debug\"}"], 8.0);
    // The controller's own figures.
    assert!(m["drover_rpc_requests_total{method=\"/drover.Controller/Submit\"}"] >= 3.0);
    assert!(m["drover_schedule_cycle_duration_seconds_count"] >= 1.0);
    assert!(m["drover_wal_fsync_duration_seconds_count"] >= 1.0);
    assert!(m.contains_key("drover_node_heartbeat_age_seconds{node=\"node1\"}"));
    assert_eq!(types["drover_rpc_duration_seconds"], "histogram");
    assert_eq!(types["slurm_jobs_pending"], "gauge");
    assert_eq!(types["slurm_sdiag_jobs_submitted"], "counter");
    // (The parser names a counter's sample NAME_total.)
    assert!(m["slurm_sdiag_jobs_submitted_total"] >= 3.0);
}

/// The dashboard's light poll (`GET /jobs?update_time=T`) sees changes made
/// outside it: `scontrol hold`, `release` and `update` of a pending job whose
/// times do not move.
#[test]
fn rest_update_time_sees_holds_releases_and_updates_from_the_cli() {
    let c = cluster();
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let tok = token(&c, &["username=nobody", "lifespan=600"]);
    let h = auth("nobody", &tok);
    let mut http = rest.tcp();
    let id = c.sbatch(
        &["--begin=now+3600", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let ids = id.to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while c.job_field(&ids, "Reason").as_deref() != Some("BeginTime") {
        assert!(std::time::Instant::now() < deadline, "never BeginTime");
        std::thread::sleep(Duration::from_millis(25));
    }
    // A time after everything so far: wait for the clock to pass it.
    let after = |t: i64| {
        while drover_proto::auth::now_secs() < t {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut changed = |t: i64| -> Vec<Value> {
        let r = http.request("GET", &format!("{V}/jobs?update_time={t}"), &h, b"");
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["jobs"].as_array().cloned().unwrap_or_default()
    };
    let t = drover_proto::auth::now_secs() + 1;
    after(t);
    assert_eq!(changed(t), Vec::<Value>::new(), "nothing changed since {t}");

    c.ok("scontrol", &["hold", &ids]);
    let got = changed(t);
    assert_eq!(got.len(), 1, "the held job is a change: {got:?}");
    assert_eq!(got[0]["job_id"].as_u64(), Some(u64::from(id)));
    assert_eq!(got[0]["state_reason"], "JobHeldAdmin");
    assert_eq!(got[0]["priority"]["number"], 0, "{}", got[0]["priority"]);

    let t = drover_proto::auth::now_secs() + 1;
    after(t);
    assert_eq!(changed(t), Vec::<Value>::new());
    c.ok("scontrol", &["release", &ids]);
    let got = changed(t);
    assert_eq!(got.len(), 1, "the release is a change: {got:?}");
    assert_ne!(got[0]["state_reason"], "JobHeldAdmin");

    let t = drover_proto::auth::now_secs() + 1;
    after(t);
    c.ok("scontrol", &["update", &format!("JobId={id}"), "Nice=7"]);
    let got = changed(t);
    assert_eq!(got.len(), 1, "the update is a change: {got:?}");
    assert_eq!(got[0]["nice"], 7);
    c.ok("scancel", &[&ids]);
}
