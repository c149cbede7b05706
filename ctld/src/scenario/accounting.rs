//! Accounting records as effects: a restart's resend goes out in chunks.

use super::env::{job, TestEnv};
use crate::ctld::Effect;

fn accounted(env: &mut TestEnv) -> Vec<u32> {
    env.core
        .take_effects()
        .iter()
        .filter_map(|e| match e {
            Effect::Account { job, .. } => Some(job.rec.job_id),
            _ => None,
        })
        .collect()
}

#[test]
fn a_restarts_resend_goes_out_a_chunk_at_a_time_in_id_order() {
    let mut env =
        TestEnv::new("NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES");
    let ids: Vec<u32> = (0..5).map(|_| env.sbatch(job(10))).collect();
    env.core.acct = Some(crate::acct::settings::Acct {
        enforce: Default::default(),
        dir: "/nonexistent".into(),
    });
    env.core.take_effects();
    env.core.acct_resend = env.core.jobs.keys().rev().copied().collect();
    env.core.resend_accounting(2);
    assert_eq!(accounted(&mut env), ids[..2].to_vec());
    // A job gone meanwhile is skipped; the rest follow.
    env.core.jobs.remove(&ids[2]);
    env.core.resend_accounting(10);
    assert_eq!(accounted(&mut env), ids[3..].to_vec());
    assert!(env.core.acct_resend.is_empty());
}
