//! The web dashboard droverrestd serves at `/`, in a real headless Chromium
//! (chromedriver) against real daemons: jobs submitted from the CLI appear
//! without a reload, sort, filter, search, hidden columns, bulk cancel,
//! compute totals that match sinfo, and a second user's view under
//! PrivateData. Screenshots go to target/tmp/screenshots/ (docs/img/ with
//! `DROVER_SCREENSHOTS=docs`). Without chromium and
//! chromedriver each test prints SKIPPED and returns.

use std::path::PathBuf;
use std::time::Duration;

use drover_tests::rest::{jwt_conf, jwt_key_ready, token, RestD, JWT_KEY};
use drover_tests::webdriver::Browser;
use drover_tests::{fake_gpus, Cluster, Spec};
use serde_json::{json, Value};

const NOBODY: u32 = 65534;
const T: Duration = Duration::from_secs(60);

/// Where a screenshot goes: the test's own directory under target/, or
/// docs/img/ when `DROVER_SCREENSHOTS=docs` (to refresh the user guide's
/// pictures on purpose, not on every run).
fn img(name: &str) -> PathBuf {
    let dir = if std::env::var("DROVER_SCREENSHOTS").as_deref() == Ok("docs") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/img")
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
    };
    let _ = std::fs::create_dir_all(&dir);
    dir.join(name)
}

/// Two nodes, the first with two (fake) a100 GPUs.
/// None (after a SKIPPED line) without chromium and chromedriver, or
/// without root (the fake GPUs are device nodes).
fn cluster(devs: &std::path::Path, extra: &[&str], accounting: bool) -> Option<Cluster> {
    if let Err(why) = drover_tests::webdriver::programs() {
        eprintln!("SKIPPED (dashboard): {why}");
        return None;
    }
    if drover_proto::sys::geteuid() != 0 {
        eprintln!("SKIPPED (dashboard): the fake GPUs' device nodes need root");
        return None;
    }
    fake_gpus(devs, 2);
    Some(Cluster::start(Spec {
        extra: [jwt_conf(), "GresTypes=gpu".into()]
            .into_iter()
            .chain(extra.iter().map(|s| s.to_string()))
            .collect(),
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Gres=gpu:a100:2\n\
             NodeName=node2 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=3000\n\
             PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        files: vec![
            ("jwt.key".into(), JWT_KEY.into()),
            (
                "gres.conf".into(),
                format!(
                    "NodeName=node1 Name=gpu Type=a100 File={}/nvidia[0-1]\n",
                    devs.display()
                ),
            ),
        ],
        accounting: accounting.then(|| "sqlite".into()),
        ..Spec::default()
    }))
}

/// The dashboard in a browser, logged in as `user`; None: no browser here.
fn open(c: &Cluster, rest: &RestD, user: &str, width: u32, height: u32) -> Option<Browser> {
    let mut b = Browser::start("dashboard", width, height)?;
    let tok = token(c, &[&format!("username={user}"), "lifespan=3600"]);
    b.goto(&format!("http://{}/", rest.addr));
    b.wait(
        "the login form",
        "!document.querySelector('#login').hidden",
        T,
    );
    b.type_into("#token", &format!("SLURM_JWT={tok}"));
    b.click("#login-go");
    b.wait(
        "the first render",
        "!document.querySelector('#app').hidden && window.drover.timings.firstRender !== null",
        T,
    );
    let who = b.js(
        "return document.querySelector('#whoami').textContent",
        json!([]),
    );
    assert_eq!(who, json!(user));
    Some(b)
}

/// The job ids in the table, in order.
fn shown_ids(b: &mut Browser) -> Vec<String> {
    let v = b.js(
        "return [...document.querySelectorAll('#jobs-body tr[data-id]')].map(t => t.dataset.id)",
        json!([]),
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

/// A column's texts, in table order.
fn column(b: &mut Browser, col: &str) -> Vec<String> {
    let v = b.js(
        "return [...document.querySelectorAll('#jobs-body td[data-col=\"' + arguments[0] + '\"]')].map(t => t.textContent)",
        json!([col]),
    );
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect()
}

fn state_of(b: &mut Browser, id: u32) -> Value {
    b.js(
        "const t = document.querySelector('#jobs-body tr[data-id=\"' + arguments[0] + '\"] td[data-col=state] .st'); return t ? t.textContent : null",
        json!([id.to_string()]),
    )
}

fn has_row(id: u32) -> String {
    format!("document.querySelector('#jobs-body tr[data-id=\"{id}\"]')")
}

fn squeue_state(c: &Cluster, id: u32) -> String {
    c.ok(
        "squeue",
        &["-h", "-t", "all", "-j", &id.to_string(), "-o", "%T"],
    )
    .trim()
    .to_string()
}

#[test]
fn dashboard_jobs_live_sort_filter_bulk_cancel_and_compute_totals() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = cluster(devs.path(), &[], true) else {
        return;
    };
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let Some(mut b) = open(&c, &rest, "root", 1280, 900) else {
        return;
    };
    // Served with a strict content policy; no jobs yet: said so.
    let mut http = rest.tcp();
    let r = http.request("GET", "/", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-security-policy")
        .is_some_and(|p| p.contains("script-src 'self'")));
    b.wait(
        "the empty state",
        "document.querySelector('#jobs-body td.empty').textContent === 'No jobs.'",
        T,
    );

    // Jobs submitted from the CLI appear without a reload.
    let out = c.path().join("gpu.out");
    let gpu = c.sbatch(
        &[
            "-J",
            "mid-gpu",
            "--gres=gpu:a100:1",
            "-o",
            out.to_str().unwrap(),
        ],
        "#!/bin/sh\necho hello from the gpu job\nsleep 300\n",
    );
    let zeta = c.sbatch(
        &["-H", "-J", "zeta", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    let alpha = c.sbatch(
        &["-H", "-J", "alpha", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    let quick = c.sbatch(&["-J", "quick", "-o", "/dev/null"], "#!/bin/sh\nsleep 2\n");
    c.wait_state(&gpu.to_string(), &["RUNNING"], T);
    for id in [gpu, zeta, alpha, quick] {
        b.wait("a job submitted from the CLI", &has_row(id), T);
    }
    assert_eq!(
        b.js(
            "return performance.getEntriesByType('navigation').length",
            json!([])
        ),
        json!(1)
    );
    b.wait(
        "the running job's state",
        &format!(
            "{}.querySelector('.st').textContent === 'RUNNING'",
            has_row(gpu)
        ),
        T,
    );
    assert_eq!(state_of(&mut b, zeta), json!("PENDING"));
    let reason = b.js(
        &format!(
            "return {}.querySelector('.reason').textContent",
            has_row(zeta)
        ),
        json!([]),
    );
    assert!(reason.as_str().unwrap().contains("JobHeldUser"), "{reason}");
    // A hold made from the CLI shows within a few light polls (POLL_MS 3 s),
    // well before the full listing (FULL_MS 60 s), without a reload.
    c.ok("scontrol", &["hold", &alpha.to_string()]);
    b.wait(
        "the CLI's admin hold in the page",
        &format!(
            "{}.querySelector('.reason').textContent.includes('JobHeldAdmin')",
            has_row(alpha)
        ),
        Duration::from_secs(15),
    );
    let gres = column(&mut b, "gres");
    assert!(gres.iter().any(|g| g == "gpu:a100:1"), "{gres:?}");

    // Sort by name, both ways, by clicking the header.
    b.click("th[data-col=name] button");
    let names = column(&mut b, "name");
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert_eq!(names.first().map(String::as_str), Some("alpha"));
    b.click("th[data-col=name] button");
    let names = column(&mut b, "name");
    assert_eq!(names.first().map(String::as_str), Some("zeta"), "{names:?}");

    // Filter by state, then free-text search.
    b.click("#f-state option[value=PENDING]");
    let mut ids = shown_ids(&mut b);
    ids.sort();
    let mut want = vec![zeta.to_string(), alpha.to_string()];
    want.sort();
    assert_eq!(ids, want);
    b.click("#f-state option[value='']");
    b.type_into("#q", "alph");
    assert_eq!(shown_ids(&mut b), vec![alpha.to_string()]);
    b.type_into("#q", "no-such-job");
    b.wait(
        "the no-match state",
        "document.querySelector('#jobs-body td.empty').textContent.includes('match')",
        T,
    );
    b.js("const q = document.querySelector('#q'); q.value = ''; q.dispatchEvent(new Event('input')); return 0", json!([]));
    assert_eq!(shown_ids(&mut b).len(), 4);

    // Hide a column; it stays hidden after a reload (and the login too).
    b.click(".cols summary");
    b.click("#col-toggles input[data-col=account]");
    assert_eq!(
        b.js(
            "return document.querySelectorAll('th[data-col=account]').length",
            json!([])
        ),
        json!(0)
    );
    b.goto(&format!("http://{}/", rest.addr));
    b.wait(
        "the reloaded page",
        "window.drover && window.drover.timings.firstRender !== null",
        T,
    );
    assert_eq!(
        b.js(
            "return document.querySelectorAll('th[data-col=account]').length",
            json!([])
        ),
        json!(0)
    );
    assert_eq!(
        b.js(
            "return document.querySelectorAll('th[data-col=name]').length",
            json!([])
        ),
        json!(1)
    );

    // The finished job's efficiency, from accounting (after a refresh).
    c.wait_sacct(
        &["-X", "-n", "-P", "-j", &quick.to_string(), "-o", "State"],
        T,
        |t| t.starts_with("COMPLETED"),
    );
    b.click("#refresh");
    b.wait(
        "the finished job's efficiency",
        &format!(
            "{}.querySelector('td[data-col=eff]').textContent.includes('CPU')",
            has_row(quick)
        ),
        T,
    );

    // Bulk cancel of two checked jobs, after a confirmation.
    b.click(&format!("tr[data-id=\"{zeta}\"] input.pick"));
    b.click(&format!("tr[data-id=\"{alpha}\"] input.pick"));
    assert_eq!(
        b.js(
            "return document.querySelector('#sel-count').textContent",
            json!([])
        ),
        json!("2 selected")
    );
    b.click("[data-bulk=cancel]");
    b.wait(
        "the confirmation",
        "document.querySelector('#confirm').open",
        T,
    );
    b.click("#confirm-yes");
    b.wait(
        "the actions' outcome",
        "document.querySelector('#notice-body').textContent.includes('2 of 2 done')",
        T,
    );
    for id in [zeta, alpha] {
        c.wait_state(&id.to_string(), &["CANCELLED"], T);
        assert_eq!(squeue_state(&c, id), "CANCELLED");
        b.wait(
            "the cancelled state in the page",
            &format!(
                "{}.querySelector('.st').textContent === 'CANCELLED'",
                has_row(id)
            ),
            T,
        );
    }
    // The selection survives live updates; the other job is untouched.
    assert_eq!(squeue_state(&c, gpu), "RUNNING");
    b.screenshot(&img("dashboard-jobs.png"));

    // The detail view: scontrol show job and its steps.
    b.click(&format!("tr[data-id=\"{gpu}\"] button.link"));
    b.wait(
        "the job detail",
        "document.querySelector('#detail-body pre') && document.querySelector('#detail-body pre').textContent.includes('JobState=RUNNING')",
        T,
    );
    // The tail of its output, read on its node by the agent as root.
    c.wait_file(&out, |t| t.contains("hello from the gpu job"));
    b.wait(
        "the output tail",
        "document.querySelector('#detail-body [data-output=std_out]').textContent.includes('hello from the gpu job')",
        T,
    );
    b.screenshot(&img("dashboard-detail.png"));
    b.click("#detail .dhead button");

    // Compute totals match sinfo -N -O.
    b.click("#tab-compute");
    b.wait(
        "the nodes",
        "document.querySelectorAll('#nodes-body tr[data-node]').length === 2",
        T,
    );
    let sinfo = c.ok(
        "sinfo",
        &[
            "-N",
            "-h",
            "-O",
            "NodeList:20,CPUsState:20,Memory:12,AllocMem:12,Gres:30,GresUsed:50",
        ],
    );
    let count = |g: &str| -> u64 {
        g.split(',')
            .filter(|p| p.starts_with("gpu"))
            .map(|p| {
                p.split('(')
                    .next()
                    .unwrap()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap_or(0)
            })
            .sum()
    };
    let mut total_gpus = 0;
    for line in sinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 6, "{line}");
        let aiot: Vec<u64> = f[1].split('/').map(|x| x.parse().unwrap()).collect();
        let mut cell = |k: &str| b_cell(&mut b, f[0], k);
        assert_eq!(cell("cpus"), (aiot[0], aiot[3]), "{line}");
        assert_eq!(
            cell("mem"),
            (f[3].parse().unwrap(), f[2].parse().unwrap()),
            "{line}"
        );
        assert_eq!(cell("gpus"), (count(f[5]), count(f[4])), "{line}");
        total_gpus += count(f[4]);
    }
    assert_eq!(total_gpus, 2);
    let holders = b.js(
        "return document.querySelector('tr[data-node=node1] td[data-k=holders]').textContent",
        json!([]),
    );
    assert!(
        holders
            .as_str()
            .unwrap()
            .contains(&format!(": {gpu} (root)")),
        "{holders}"
    );
    let card = b.js(
        "return document.querySelector('[data-total=gpus] .v').textContent",
        json!([]),
    );
    assert_eq!(card, json!("1 / 2"));

    // Where can a 2-GPU job start now? Nowhere; a 1-GPU job: node1.
    b.type_into("#fit-gpus", "2");
    b.click("#fit button[type=submit]");
    b.wait(
        "no fit",
        "document.querySelector('#fit-result').textContent === 'No node can start it now.'",
        T,
    );
    b.type_into("#fit-gpus", "1");
    b.type_into("#fit-mem", "1");
    b.click("#fit button[type=submit]");
    b.wait(
        "a fit",
        "document.querySelector('#fit-result').textContent.endsWith(': node1')",
        T,
    );
    b.click("#fit-clear");
    b.screenshot(&img("dashboard-compute.png"));

    // Requeue the running job from its row's menu: it runs again.
    b.click("#tab-jobs");
    row_action(&mut b, gpu, "requeue");
    b.wait(
        "the requeue's outcome",
        "document.querySelector('#notice-body').textContent.includes('Requeue: 1 of 1 done')",
        T,
    );
    let deadline = std::time::Instant::now() + T;
    while c.job_field(&gpu.to_string(), "Restarts").as_deref() != Some("1") {
        assert!(
            std::time::Instant::now() < deadline,
            "job {gpu} not requeued"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Narrow (a phone): the jobs view still reads.
    b.click("#tab-jobs");
    b.resize(390, 844);
    b.wait(
        "a narrow layout",
        "document.documentElement.clientWidth <= 400",
        T,
    );
    let overflow = b.js(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
        json!([]),
    );
    assert!(
        overflow.as_i64().unwrap() <= 0,
        "the page scrolls sideways by {overflow}px"
    );
    b.screenshot(&img("dashboard-narrow.png"));
}

/// Choose `action` in job `id`'s row menu and confirm it.
fn row_action(b: &mut Browser, id: u32, action: &str) {
    b.click(&format!("tr[data-id=\"{id}\"] select.rowact"));
    b.click(&format!(
        "tr[data-id=\"{id}\"] select.rowact option[value={action}]"
    ));
    b.wait(
        "the confirmation",
        "document.querySelector('#confirm').open",
        T,
    );
    let text = b.js(
        "return document.querySelector('#confirm-text').textContent",
        json!([]),
    );
    assert!(text.as_str().unwrap().contains(&id.to_string()), "{text}");
    b.click("#confirm-yes");
}

/// A node row's (used, total) figures of a column.
fn b_cell(b: &mut Browser, node: &str, k: &str) -> (u64, u64) {
    let v = b.js(
        "const t = document.querySelector('tr[data-node=\"' + arguments[0] + '\"] td[data-k=\"' + arguments[1] + '\"]'); return [Number(t.dataset.used), Number(t.dataset.total)]",
        json!([node, k]),
    );
    (v[0].as_u64().unwrap(), v[1].as_u64().unwrap())
}

#[test]
fn dashboard_second_user_sees_only_own_jobs_and_cannot_cancel_roots() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = cluster(devs.path(), &["PrivateData=jobs"], false) else {
        return;
    };
    jwt_key_ready(&c);
    let rest = RestD::start(&c, &[]);
    let roots = c.sbatch(
        &["-H", "-J", "rootsecret", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "--parsable",
            "-H",
            "-J",
            "mine",
            "-o",
            "/dev/null",
            "-D",
            "/tmp",
            "--wrap",
            "sleep 300",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mine: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();

    let Some(mut b) = open(&c, &rest, "nobody", 1280, 900) else {
        return;
    };
    b.wait("nobody's job", &has_row(mine), T);
    assert_eq!(shown_ids(&mut b), vec![mine.to_string()]);
    let text = b.js("return document.body.innerText", json!([]));
    assert!(!text.as_str().unwrap().contains("rootsecret"));

    // Root's job by its link: not shown, and cancelling it is refused.
    b.goto(&format!("http://{}/#job={roots}", rest.addr));
    b.wait(
        "the detail dialog",
        "document.querySelector('#detail').open",
        T,
    );
    b.wait(
        "the refusal to show it",
        "document.querySelector('#detail-body').textContent.includes('Access/permission denied')",
        T,
    );
    b.click("#detail-actions [data-act=cancel]");
    b.wait(
        "the confirmation",
        "document.querySelector('#confirm').open",
        T,
    );
    b.click("#confirm-yes");
    let msg = b.wait(
        "the refusal of the cancel",
        "document.querySelector('#notice').hidden ? '' : document.querySelector('#notice-body').textContent",
        T,
    );
    let msg = msg.as_str().unwrap();
    assert!(msg.contains("1 failed"), "{msg}");
    assert!(
        msg.contains(&format!("Job {roots}: Access/permission denied")),
        "{msg}"
    );
    assert_eq!(squeue_state(&c, roots), "PENDING");

    // Their own held job: released from its row's menu, after confirming.
    b.click("#detail .dhead button");
    b.goto(&format!("http://{}/", rest.addr));
    b.wait("nobody's job again", &has_row(mine), T);
    row_action(&mut b, mine, "release");
    b.wait(
        "the release's outcome",
        "document.querySelector('#notice-body').textContent.includes('Release: 1 of 1 done')",
        T,
    );
    let reason = c.ok("squeue", &["-h", "-j", &mine.to_string(), "-o", "%r"]);
    assert!(!reason.contains("JobHeld"), "{reason}");
    b.wait(
        "the released job without its hold in the page",
        &format!("!({}.textContent.includes('JobHeld'))", has_row(mine)),
        T,
    );
    drop(b);

    // Root (an administrator) sees both.
    let Some(mut b) = open(&c, &rest, "root", 1280, 900) else {
        return;
    };
    b.wait("root's view", &has_row(roots), T);
    b.wait("nobody's job in root's view", &has_row(mine), T);
}
