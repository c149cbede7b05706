//! One libFuzzer binary for every fuzz target; `DROVER_FUZZ_TARGET` picks
//! the target. The targets live in the crates that own the parsers (their
//! `fuzz` modules), so `cargo test` replays the same functions over the
//! saved corpus. Run through `bench/fuzz.sh`.
#![no_main]

use std::sync::OnceLock;

type Target = fn(&[u8]);

const TARGETS: &[(&str, Target)] = &[
    ("slurm_conf", drover_conf::fuzz::slurm_conf),
    ("gres_conf", drover_conf::fuzz::gres_conf),
    ("cgroup_conf", drover_conf::fuzz::cgroup_conf),
    ("dbd_conf", drover_conf::fuzz::dbd_conf),
    ("hostlist", drover_conf::fuzz::hostlist),
    ("mem_size", drover_conf::fuzz::mem_size),
    ("time_limit", drover_conf::fuzz::time_limit),
    ("date", drover_conf::fuzz::date),
    ("dependency", drover_ctld::fuzz::dependency),
    ("array_expr", drover_ctld::fuzz::array_expr),
    ("grpc_request", drover_ctld::fuzz::grpc_request),
    ("wal_recovery", drover_ctld::fuzz::wal_recovery),
    ("sbatch_script", drover_cli::fuzz::sbatch_script),
    ("cli_args", drover_cli::fuzz::cli_args),
    ("json_output", drover_cli::fuzz::json_output),
    ("agent_files", drover_nodeagent::fuzz::agent_files),
    ("local_call", drover_proto::fuzz::local_call),
];

fn target() -> Target {
    static PICKED: OnceLock<Target> = OnceLock::new();
    *PICKED.get_or_init(|| {
        let name = std::env::var("DROVER_FUZZ_TARGET").unwrap_or_default();
        match TARGETS.iter().find(|(n, _)| *n == name) {
            Some((_, f)) => *f,
            None => {
                let names: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
                eprintln!(
                    "drover-fuzz: DROVER_FUZZ_TARGET={name:?} is not a target; targets: {}",
                    names.join(" ")
                );
                std::process::exit(2);
            }
        }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| target()(data));
