//! The storage layer on every backend: migrations from empty and re-run,
//! ordered idempotent job records, queries, associations, usage roll-up.
//! PostgreSQL and MariaDB come from DROVER_TEST_PG_URL / DROVER_TEST_MYSQL_URL
//! (defaults: the local test servers); each test uses its own database.

use drover_dbd::jobs::{self, JobSql};
use drover_dbd::store::{self, Store};
use drover_proto::acct::{
    Cluster, JobQuery, JobRecord, KeyValue, ModifyRequest, StepRecord, UsageRequest,
};
use drover_proto::JobState;

fn base_url(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// A fresh database URL per test on each backend.
fn urls(test: &str) -> Vec<String> {
    let n = format!(
        "drover_st_{}_{}_{}",
        test,
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let dir = std::env::temp_dir().join(&n);
    let mut out = vec![format!("sqlite://{}/acct.db?mode=rwc", dir.display())];
    for (var, def) in [
        (
            "DROVER_TEST_PG_URL",
            "postgres://postgres@127.0.0.1:5432/test",
        ),
        ("DROVER_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test"),
    ] {
        let u = base_url(var, def);
        let (server, _, params) = store::split_db(&u).expect("URL with a database");
        out.push(format!("{server}/{n}{params}"));
    }
    out
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn job(id: u32, state: JobState, transition: u32) -> JobRecord {
    JobRecord {
        cluster: "lab".into(),
        job_id: id,
        submit_time: 1_700_000_000 + i64::from(id),
        name: format!("job{id}"),
        uid: 1000,
        user: "alice".into(),
        account: "ml".into(),
        partition: "debug".into(),
        state: state as i32,
        transition,
        ncpus: 2,
        alloc_tres: "cpu=2,mem=1G,node=1,gres/gpu=1".into(),
        ..Default::default()
    }
}

async fn each_backend<F, Fut>(test: &str, f: F)
where
    F: Fn(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for url in urls(test) {
        let st = Store::open(&url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        f(st.clone()).await;
        st.pool.close().await;
        store::drop_database(&url).await.unwrap();
    }
}

#[test]
fn migrations_from_empty_and_rerun() {
    rt().block_on(async {
        for url in urls("mig") {
            let a = Store::open(&url)
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(a.counter("assoc_version").await.unwrap(), 1, "{url}");
            a.pool.close().await;
            // A second start finds everything applied and changes nothing.
            let b = Store::open(&url).await.unwrap();
            assert_eq!(b.counter("assoc_version").await.unwrap(), 1, "{url}");
            let set = drover_dbd::assocs::load(&b).await.unwrap();
            assert_eq!(set.qos.len(), 1, "{url}: normal QOS seeded once");
            b.pool.close().await;
            store::drop_database(&url).await.unwrap();
        }
    });
}

#[test]
fn records_are_ordered_and_idempotent() {
    rt().block_on(each_backend("rec", |st| async move {
        let sql = JobSql::new(&st);
        let mut done = job(1, JobState::Completed, 4);
        done.system_comment = "GPU out of memory: RuntimeError: CUDA out of memory.".into();
        done.start_time = 1_700_000_100;
        done.end_time = 1_700_000_100 + 7200;
        done.steps.push(StepRecord {
            step_id: jobs::BATCH_STEP,
            name: "batch".into(),
            state: JobState::Completed as i32,
            max_rss_kb: 2048,
            ..Default::default()
        });
        let running = job(1, JobState::Running, 2);
        let pending = job(2, JobState::Pending, 1);
        assert_eq!(
            jobs::record(
                &st,
                &sql,
                &[
                    job(1, JobState::Pending, 1),
                    running.clone(),
                    done.clone(),
                    pending
                ]
            )
            .await
            .unwrap(),
            4
        );
        // A resend of older transitions changes nothing; a repeat of the
        // newest is harmless and does not add usage twice.
        assert_eq!(jobs::record(&st, &sql, &[running]).await.unwrap(), 0);
        jobs::record(&st, &sql, &[done.clone()]).await.unwrap();
        let all = jobs::query(
            &st,
            &JobQuery {
                cluster: "lab".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].state, JobState::Completed as i32);
        assert_eq!(all[0].steps.len(), 1);
        assert_eq!(all[0].steps[0].max_rss_kb, 2048);
        assert_eq!(all[0].alloc_tres, "cpu=2,mem=1G,node=1,gres/gpu=1");
        assert_eq!(
            all[0].system_comment,
            "GPU out of memory: RuntimeError: CUDA out of memory."
        );
        assert_eq!(all[1].system_comment, "");
        let only = jobs::query(
            &st,
            &JobQuery {
                job_ids: vec!["2".into()],
                no_steps: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].name, "job2");
        let none = jobs::query(
            &st,
            &JobQuery {
                uids: vec![5],
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(none.is_empty());
        assert_eq!(jobs::max_job_id(&st, "lab").await.unwrap(), 2);
        // Only the asked-for columns come back (plus key, array ids, state);
        // separators in text cannot break the packed rows.
        let mut odd = job(3, JobState::Completed, 4);
        odd.name = "a\u{1f}b\u{1e}c".into();
        jobs::record(&st, &sql, &[odd]).await.unwrap();
        let some = jobs::query(
            &st,
            &JobQuery {
                job_ids: vec!["3".into(), "1".into()],
                no_steps: true,
                columns: vec!["job_name".into()],
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(some.len(), 2);
        assert_eq!(some[1].name, "a?b?c");
        assert_eq!(some[1].state, JobState::Completed as i32);
        assert!(some[1].account.is_empty() && some[0].account.is_empty());
        let u = drover_dbd::usage::query(
            &st,
            &UsageRequest {
                start: 0,
                end: i64::MAX / 2,
                cluster: String::new(),
            },
            1_800_000_000,
        )
        .await
        .unwrap();
        assert_eq!(u.rows.len(), 1);
        assert_eq!(u.rows[0].cpu_secs, 2 * 7200);
        assert_eq!(u.rows[0].gpu_secs, 7200);
    }));
}

#[test]
fn a_new_run_drops_the_steps_of_the_run_before() {
    rt().block_on(each_backend("rerun", |st| async move {
        let sql = JobSql::new(&st);
        // First run: its batch step went out RUNNING, then the job was
        // requeued (its launch failed) before that step was ever ended.
        let mut run1 = job(9, JobState::Running, 2);
        run1.steps.push(StepRecord {
            step_id: jobs::BATCH_STEP,
            name: "batch".into(),
            state: JobState::Running as i32,
            ..Default::default()
        });
        let mut requeued = job(9, JobState::Pending, 1);
        requeued.restart_count = 1;
        jobs::record(&st, &sql, &[run1.clone()]).await.unwrap();
        jobs::record(&st, &sql, &[requeued]).await.unwrap();
        let q = JobQuery {
            job_ids: vec!["9".into()],
            ..Default::default()
        };
        let got = jobs::query(&st, &q).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].state, JobState::Pending as i32);
        assert!(got[0].steps.is_empty(), "{:?}", got[0].steps);
        // A resend of the first run changes nothing.
        jobs::record(&st, &sql, &[run1]).await.unwrap();
        assert!(jobs::query(&st, &q).await.unwrap()[0].steps.is_empty());
    }));
}

#[test]
fn association_set_round_trip() {
    rt().block_on(each_backend("assoc", |st| async move {
        let mut set = drover_dbd::assocs::load(&st).await.unwrap();
        drover_dbd::edit::ensure_cluster(
            &mut set,
            Cluster {
                name: "lab".into(),
                cpus: 8,
                ..Default::default()
            },
        );
        let kv = |k: &str, v: &str| KeyValue {
            key: k.into(),
            value: v.into(),
        };
        drover_dbd::edit::apply(
            &mut set,
            &ModifyRequest {
                verb: "add".into(),
                entity: "account".into(),
                names: vec!["ml".into()],
                conditions: vec![],
                values: vec![kv("fairshare", "5"), kv("grptres", "cpu=8")],
                dry_run: false,
            },
        )
        .unwrap();
        drover_dbd::edit::apply(
            &mut set,
            &ModifyRequest {
                verb: "add".into(),
                entity: "user".into(),
                names: vec!["alice".into()],
                conditions: vec![],
                values: vec![kv("account", "ml"), kv("maxwall", "60")],
                dry_run: false,
            },
        )
        .unwrap();
        let v = drover_dbd::assocs::save(&st, &set).await.unwrap();
        assert_eq!(v, 2);
        let back = drover_dbd::assocs::load(&st).await.unwrap();
        assert_eq!(back.version, 2);
        assert_eq!(back.users.len(), set.users.len());
        let ml = back
            .assocs
            .iter()
            .find(|a| a.account == "ml" && a.user.is_empty())
            .unwrap();
        assert_eq!(ml.shares, 5);
        assert_eq!(ml.limits.as_ref().unwrap().grp_tres, "cpu=8");
        let al = back.assocs.iter().find(|a| a.user == "alice").unwrap();
        assert_eq!(al.limits.as_ref().unwrap().max_wall_min, 60);
        assert_eq!(back.clusters[0].cpus, 8);
    }));
}
