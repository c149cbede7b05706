//! The input environment variables of sbatch (`SBATCH_*`) and salloc
//! (`SALLOC_*`), each standing for an option of sbatch's table (pure).

use crate::opts::{Arg, OptDef};

use super::options::TABLE;

/// `SBATCH_*` input environment variables and the option each stands for.
pub const ENV_VARS: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ACCTG_FREQ", "acctg-freq"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_BATCH", "batch"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CONTAINER", "container"),
    ("SBATCH_CORE_SPEC", "core-spec"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_DELAY_BOOT", "delay-boot"),
    ("SBATCH_DISTRIBUTION", "distribution"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GET_USER_ENV", "get-user-env"),
    ("SBATCH_GPU_BIND", "gpu-bind"),
    ("SBATCH_GPU_FREQ", "gpu-freq"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_GRES_FLAGS", "gres-flags"),
    ("SBATCH_HINT", "hint"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_BIND", "mem-bind"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NETWORK", "network"),
    ("SBATCH_NO_KILL", "no-kill"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_OVERCOMMIT", "overcommit"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_POWER", "power"),
    ("SBATCH_PROFILE", "profile"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQ_SWITCH", "switches"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_SPREAD_JOB", "spread-job"),
    ("SBATCH_THREAD_SPEC", "thread-spec"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_USE_MIN_NODES", "use-min-nodes"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SBATCH_WCKEY", "wckey"),
    ("SBATCH_ERROR", "error"),
    ("SBATCH_INPUT", "input"),
    ("SBATCH_OUTPUT", "output"),
    ("SBATCH_DEBUG", "verbose"),
    ("SBATCH_IGNORE_PBS", "ignore-pbs"),
    ("SBATCH_CPU_FREQ_REQ", "cpu-freq"),
    ("SBATCH_THREADS_PER_CORE", "threads-per-core"),
    ("SBATCH_TRES_PER_TASK", "tres-per-task"),
    ("SBATCH_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SBATCH_BURST_BUFFER", "bb"),
    ("SBATCH_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SBATCH_CONTAINER_ID", "container-id"),
    ("SBATCH_TRES_BIND", "tres-bind"),
    ("SBATCH_WAIT4SWITCH", "switches"),
    ("SLURM_HINT", "hint"),
];

/// `SALLOC_*` input environment variables (salloc(1)) and their options.
pub const SALLOC_ENV_VARS: &[(&str, &str)] = &[
    ("SALLOC_ACCOUNT", "account"),
    ("SALLOC_ACCTG_FREQ", "acctg-freq"),
    ("SALLOC_BELL", "bell"),
    ("SALLOC_BURST_BUFFER", "bb"),
    ("SALLOC_CLUSTER_CONSTRAINT", "cluster-constraint"),
    ("SALLOC_CLUSTERS", "clusters"),
    ("SLURM_CLUSTERS", "clusters"),
    ("SALLOC_CONTAINER", "container"),
    ("SALLOC_CONTAINER_ID", "container-id"),
    ("SALLOC_CONSTRAINT", "constraint"),
    ("SALLOC_CORE_SPEC", "core-spec"),
    ("SALLOC_CPU_FREQ_REQ", "cpu-freq"),
    ("SALLOC_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SALLOC_DEBUG", "verbose"),
    ("SALLOC_DELAY_BOOT", "delay-boot"),
    ("SALLOC_EXCLUSIVE", "exclusive"),
    ("SALLOC_GPUS", "gpus"),
    ("SALLOC_GPU_BIND", "gpu-bind"),
    ("SALLOC_GPU_FREQ", "gpu-freq"),
    ("SALLOC_GPUS_PER_NODE", "gpus-per-node"),
    ("SALLOC_GPUS_PER_SOCKET", "gpus-per-socket"),
    ("SALLOC_GPUS_PER_TASK", "gpus-per-task"),
    ("SALLOC_GRES", "gres"),
    ("SALLOC_GRES_FLAGS", "gres-flags"),
    ("SALLOC_IMMEDIATE", "immediate"),
    ("SALLOC_HINT", "hint"),
    ("SLURM_HINT", "hint"),
    ("SALLOC_KILL_CMD", "kill-command"),
    ("SALLOC_MEM_BIND", "mem-bind"),
    ("SALLOC_MEM_PER_CPU", "mem-per-cpu"),
    ("SALLOC_MEM_PER_GPU", "mem-per-gpu"),
    ("SALLOC_MEM_PER_NODE", "mem"),
    ("SALLOC_NETWORK", "network"),
    ("SALLOC_NO_BELL", "no-bell"),
    ("SALLOC_NO_KILL", "no-kill"),
    ("SALLOC_OVERCOMMIT", "overcommit"),
    ("SALLOC_PARTITION", "partition"),
    ("SALLOC_POWER", "power"),
    ("SALLOC_PROFILE", "profile"),
    ("SALLOC_QOS", "qos"),
    ("SALLOC_REQ_SWITCH", "switches"),
    ("SALLOC_RESERVATION", "reservation"),
    ("SALLOC_SIGNAL", "signal"),
    ("SALLOC_SPREAD_JOB", "spread-job"),
    ("SALLOC_THREAD_SPEC", "thread-spec"),
    ("SALLOC_THREADS_PER_CORE", "threads-per-core"),
    ("SALLOC_TIMELIMIT", "time"),
    ("SALLOC_TRES_BIND", "tres-bind"),
    ("SALLOC_TRES_PER_TASK", "tres-per-task"),
    ("SALLOC_USE_MIN_NODES", "use-min-nodes"),
    ("SALLOC_WAIT_ALL_NODES", "wait-all-nodes"),
    ("SALLOC_WAIT4SWITCH", "switches"),
    ("SALLOC_WCKEY", "wckey"),
];

/// An option set by an input variable: (option key, value, variable).
pub type EnvOption = (&'static str, Option<String>, &'static str);

/// Turn the `SBATCH_*` variables of an environment into option values.
pub fn env_options(env: &[(String, String)]) -> Vec<EnvOption> {
    env_options_from(TABLE, ENV_VARS, env)
}

/// Turn the input variables `vars` names into option values of `table`
/// (each variable of the lists names an option of its command's table).
pub fn env_options_from(
    table: &'static [OptDef],
    vars: &[(&'static str, &'static str)],
    env: &[(String, String)],
) -> Vec<EnvOption> {
    let mut out = Vec::new();
    for (var, key) in vars {
        let Some((_, val)) = env.iter().find(|(k, _)| k == var) else {
            continue;
        };
        let def = table.iter().find(|d| d.key == *key);
        let value = match def.map(|d| d.arg) {
            Some(Arg::No) if *key != "verbose" => None,
            Some(Arg::Optional) if val.is_empty() => None,
            _ => Some(val.clone()),
        };
        if let Some(d) = def {
            out.push((d.key, value, *var));
        }
    }
    if !out.iter().any(|(k, _, _)| *k == "clusters") {
        if let Some((_, v)) = env.iter().find(|(k, _)| k == "SLURM_CLUSTERS") {
            out.insert(0, ("clusters", Some(v.clone()), "SLURM_CLUSTERS"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_names_an_option_of_its_command() {
        for (var, key) in ENV_VARS {
            assert!(TABLE.iter().any(|d| d.key == *key), "{var}");
        }
        for (var, key) in SALLOC_ENV_VARS {
            assert!(
                crate::salloc::options::TABLE.iter().any(|d| d.key == *key),
                "{var}"
            );
        }
    }
}
