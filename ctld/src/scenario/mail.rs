//! Which job mails are due, and what they say (`mail/`): Slurm 23.11's
//! rules for BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND, TIME_LIMIT_* and
//! arrays, and the log records that make them survive a restart.

use drover_proto::state::wal_record::Kind;
use drover_proto::state::MailRecord;
use drover_proto::{JobSpec, JobState};

use super::env::{job, TestEnv, T0};
use crate::ctld::Effect;

const NODES: &str = "NodeName=n[1-2] CPUs=2 RealMemory=1000\n\
                     PartitionName=p Nodes=n[1-2] Default=YES MaxTime=UNLIMITED";

fn mailing(types: &str, minutes: u32) -> JobSpec {
    JobSpec {
        mail_type: types.into(),
        ..job(minutes)
    }
}

/// The mails the core asked the runtime to send, in order.
fn mails(env: &TestEnv) -> Vec<MailRecord> {
    env.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Mail(m) => Some((**m).clone()),
            _ => None,
        })
        .collect()
}

fn subjects(env: &TestEnv) -> Vec<String> {
    mails(env).into_iter().map(|m| m.subject).collect()
}

fn env_of<'a>(m: &'a MailRecord, k: &str) -> Option<&'a str> {
    m.env
        .iter()
        .find_map(|e| e.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
}

#[test]
fn begin_and_end_mails_with_slurms_subjects() {
    let mut env = TestEnv::new(NODES);
    let id = env.sbatch(mailing("BEGIN,END", 120));
    env.advance(T0 + 62);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={id} Name=scenario Began, Queued time 00:01:02"
        )]
    );
    let m = &mails(&env)[0];
    assert_eq!(
        m.recipient,
        crate::users::user_name(super::env::USER),
        "the user"
    );
    assert_eq!(env_of(m, "SLURM_JOB_MAIL_TYPE"), Some("Began"));
    assert_eq!(env_of(m, "SLURM_JOB_ID"), Some(id.to_string().as_str()));
    assert_eq!(env_of(m, "SLURM_JOB_STATE"), Some("RUNNING"));
    assert_eq!(env_of(m, "SLURM_JOB_QUEUED_TIME"), Some("00:01:02"));
    assert_eq!(env_of(m, "SLURM_CLUSTER_NAME"), Some("test"));
    assert!(m.body.is_empty(), "BEGIN mails have no body");
    // The mail is logged as due before it is handed to the runtime.
    let logged = env.effects.iter().position(
        |e| matches!(e, Effect::Log(r) if matches!(&r.kind, Some(Kind::MailDue(d)) if d.id == m.id)),
    );
    let handed = env
        .effects
        .iter()
        .position(|e| matches!(e, Effect::Mail(_)));
    assert!(
        logged.is_some_and(|l| Some(l) < handed),
        "{:?}",
        env.effects
    );

    env.launch_ok(id);
    env.clear();
    env.advance(T0 + 3662);
    env.finish(id, 0);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={id} Name=scenario Ended, Run time 01:00:00, COMPLETED, ExitCode 0"
        )]
    );
    let m = &mails(&env)[0];
    assert_eq!(env_of(m, "SLURM_JOB_RUN_TIME"), Some("01:00:00"));
    assert_eq!(env_of(m, "SLURM_JOB_EXIT_CODE_MAX"), Some("0"));
    assert!(
        m.body
            .starts_with(&format!("Job ID: {id}\nCluster: test\n")),
        "{}",
        m.body
    );
    assert!(
        m.body.contains("State: COMPLETED (exit code 0)\n"),
        "{}",
        m.body
    );
    assert!(
        m.body.contains("Job Wall-clock time: 01:00:00\n"),
        "{}",
        m.body
    );
}

#[test]
fn fail_is_for_failed_jobs_and_end_for_any_end() {
    let mut env = TestEnv::new(NODES);
    let ok = env.sbatch(mailing("FAIL", 10));
    let bad = env.sbatch(mailing("FAIL", 10));
    let bad_end = env.sbatch(mailing("END", 10));
    env.advance(T0 + 1);
    assert!(mails(&env).is_empty(), "no BEGIN asked for");
    env.advance(T0 + 11);
    env.finish(ok, 0);
    env.finish(bad, 2);
    env.finish(bad_end, 1);
    assert_eq!(
        subjects(&env),
        vec![
            format!(
                "Slurm Job_id={bad} Name=scenario Failed, Run time 00:00:10, FAILED, ExitCode 2"
            ),
            format!(
                "Slurm Job_id={bad_end} Name=scenario Ended, Run time 00:00:10, FAILED, ExitCode 1"
            ),
        ]
    );
}

#[test]
fn none_or_no_mail_type_sends_nothing() {
    let mut env = TestEnv::new(NODES);
    let a = env.sbatch(mailing("NONE", 10));
    let b = env.sbatch(job(10));
    let c = env.sbatch(mailing("BEGIN,NONE", 10));
    env.advance(T0 + 1);
    env.finish(a, 1);
    env.finish(b, 1);
    env.finish(c, 1);
    assert!(mails(&env).is_empty(), "{:?}", subjects(&env));
}

#[test]
fn time_limit_mails_once_each_at_their_fraction() {
    let mut env = TestEnv::new(NODES);
    let id = env.sbatch(mailing("TIME_LIMIT_50,TIME_LIMIT_90,TIME_LIMIT", 10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.advance(T0 + 300);
    assert!(mails(&env).is_empty(), "not before half the limit");
    env.advance(T0 + 301);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={id} Name=scenario Reached 50% of time limit, Run time 00:05:00"
        )]
    );
    assert_eq!(
        env_of(&mails(&env)[0], "SLURM_JOB_RUN_TIME"),
        Some("00:05:00")
    );
    env.clear();
    env.advance(T0 + 400);
    assert!(mails(&env).is_empty(), "once");
    env.advance(T0 + 541);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={id} Name=scenario Reached 90% of time limit, Run time 00:09:00"
        )]
    );
    env.clear();
    env.advance(T0 + 601);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={id} Name=scenario Reached time limit, Run time 00:10:00"
        )]
    );
    // What was mailed is in the job's logged record (not again after a restart).
    assert_eq!(
        env.core.jobs[&id].rt().mail_done,
        crate::mail::types::TIME50 | crate::mail::types::TIME90 | crate::mail::types::TIME100
    );
}

#[test]
fn an_array_mails_its_summary_once_without_array_tasks() {
    let mut env = TestEnv::new(NODES);
    let mut spec = mailing("BEGIN,END,FAIL", 10);
    spec.array = "0-2".into();
    let a = env.sbatch(spec);
    env.advance(T0 + 1);
    let tasks: Vec<u32> = env.launched();
    assert_eq!(tasks.len(), 3);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Array Summary Job_id={a}_* ({a}) Name=scenario Began"
        )],
        "one BEGIN, for the first task"
    );
    env.clear();
    env.advance(T0 + 5);
    env.finish(tasks[0], 0);
    env.finish(tasks[1], 3);
    assert!(mails(&env).is_empty(), "not before the whole array ended");
    env.finish(tasks[2], 0);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Array Summary Job_id={a}_* ({a}) Name=scenario Failed, Mixed, ExitCode [0-3]"
        )]
    );
    let m = &mails(&env)[0];
    assert_eq!(env_of(m, "SLURM_JOB_EXIT_CODE_MIN"), Some("0"));
    assert_eq!(env_of(m, "SLURM_JOB_EXIT_CODE_MAX"), Some("3"));
    let summaries = m.body.lines().filter(|l| l.starts_with("Job ID: ")).count();
    assert_eq!(summaries, 3, "one summary per task: {}", m.body);
}

#[test]
fn array_tasks_mails_every_task() {
    let mut env = TestEnv::new(NODES);
    let mut spec = mailing("BEGIN,END,ARRAY_TASKS", 10);
    spec.array = "0-1".into();
    let a = env.sbatch(spec);
    env.advance(T0 + 1);
    let tasks = env.launched();
    let want: Vec<String> = tasks
        .iter()
        .map(|&t| {
            let i = env.core.jobs[&t].rt().array_task_id;
            format!(
                "Slurm Array Task Job_id={a}_{i} ({t}) Name=scenario Began, Queued time 00:00:01"
            )
        })
        .collect();
    assert_eq!(subjects(&env), want);
    env.clear();
    env.finish(tasks[0], 0);
    let i = env.core.jobs[&tasks[0]].rt().array_task_id;
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Array Task Job_id={a}_{i} ({}) Name=scenario Ended, Run time 00:00:00, COMPLETED, ExitCode 0",
            tasks[0]
        )]
    );
}

#[test]
fn requeue_and_invalid_dependency_mails() {
    let mut env = TestEnv::new(NODES);
    let first = env.sbatch(mailing("REQUEUE", 10));
    let mut spec = mailing("INVALID_DEPEND", 10);
    spec.dependency = format!("afterok:{first}");
    let second = env.sbatch(spec);
    env.advance(T0 + 1);
    env.launch_ok(first);
    env.advance(T0 + 8);
    env.clear();
    env.control("requeue", first).unwrap();
    env.finish(first, 0);
    assert_eq!(env.state(first), JobState::Pending);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={first} Name=scenario Requeued, Run time 00:00:07"
        )]
    );
    env.advance(T0 + 200);
    env.finish(first, 1);
    env.clear();
    env.advance(T0 + 201);
    assert_eq!(
        subjects(&env),
        vec![format!(
            "Slurm Job_id={second} Name=scenario Invalid dependency"
        )]
    );
    env.clear();
    env.advance(T0 + 202);
    assert!(mails(&env).is_empty(), "once");
}

#[test]
fn mail_user_and_mail_domain_name_the_recipient() {
    let mut env = TestEnv::new(&format!("MailDomain=example.org\n{NODES}"));
    let mut spec = mailing("BEGIN", 10);
    spec.mail_user = "ops@lab.test".into();
    env.sbatch(spec);
    env.sbatch(mailing("BEGIN", 10));
    env.advance(T0 + 1);
    let to: Vec<String> = mails(&env).into_iter().map(|m| m.recipient).collect();
    let user = crate::users::user_name(super::env::USER);
    assert_eq!(
        to,
        vec!["ops@lab.test".to_string(), format!("{user}@example.org")]
    );
}

#[test]
fn a_due_mail_survives_a_restart_until_it_is_sent() {
    let mut env = TestEnv::new(NODES);
    let id = env.sbatch(mailing("BEGIN", 10));
    env.advance(T0 + 1);
    let m = mails(&env).remove(0);
    // Everything logged so far, as the next start-up reads it back.
    let records = |env: &TestEnv| -> Vec<drover_proto::state::WalRecord> {
        env.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Log(r) => Some((**r).clone()),
                _ => None,
            })
            .collect()
    };
    let snap = env.core.snapshot();
    assert_eq!(snap.mails, vec![m.clone()]);
    let mut after = TestEnv::new(NODES);
    after.core.restore(Some(snap), Vec::new());
    let resent: Vec<Effect> = after.core.take_effects();
    assert!(
        matches!(resent.as_slice(), [Effect::Mail(r)] if **r == m),
        "{resent:?}"
    );
    // Sent: the log says so, and a restart sends nothing.
    env.clear();
    env.core.mail_sent(m.id);
    env.effects.extend(env.core.take_effects());
    let sent = records(&env);
    assert!(matches!(sent.as_slice(), [r] if r.kind == Some(Kind::MailSent(m.id))));
    let mut log = vec![drover_proto::state::WalRecord {
        kind: Some(Kind::MailDue(m.clone())),
    }];
    log.extend(sent);
    let mut again = TestEnv::new(NODES);
    again.core.restore(None, log);
    assert!(again.core.take_effects().is_empty());
    assert!(again.core.mail.due.is_empty());
    assert!(again.core.mail.next_id > m.id, "ids are never reused");
    assert!(env.core.snapshot().mails.is_empty());
    let _ = id;
}

#[test]
fn a_fail_mail_says_why_the_job_failed() {
    use drover_proto::JobEndedRequest;
    let mut env = TestEnv::new(NODES);
    let id = env.sbatch(mailing("FAIL", 10));
    env.advance(T0 + 1);
    env.launch_ok(id);
    env.advance(T0 + 11);
    let why = "GPU out of memory: torch.OutOfMemoryError: CUDA out of memory.";
    let rt = env.core.jobs[&id].rt().clone();
    env.core.agent_job_ended(JobEndedRequest {
        job_id: id,
        node: rt.batch_host,
        exit_code: 1,
        end_time: env.core.now,
        restart_count: rt.restart_count,
        system_comment: why.into(),
        ..Default::default()
    });
    env.collect();
    let sent = mails(&env);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let body = &sent[0].body;
    assert!(body.starts_with(&format!("Job ID: {id}\n")), "{body}");
    assert!(body.contains("State: FAILED (exit code 1)\n"), "{body}");
    assert!(body.contains(&format!("Failure: {why}\n")), "{body}");
}
