//! droverd, the Drover node agent.
//!
//! One agent process serves one or more configured node names on one port.
//! Each batch job runs under its own supervisor process (`droverd --stepd
//! JOBDIR`, see [`stepd`]) that survives agent restarts; the agent talks to
//! it over its control socket (`stepd_socket`) and reports job ends to the controller.

#![deny(unsafe_code)]

pub mod agent;
pub mod allocation;
pub mod args;
pub mod asuser;
pub mod attach;
pub mod auth_socket;
pub mod batch_launch;
pub mod bcast;
pub mod cgroup;
pub mod configless;
pub mod daemon;
pub mod every;
pub mod failure_scan;
pub mod fuzz;
pub mod gpu;
pub mod gpu_oom;
pub mod hostinfo;
pub mod job_env;
pub mod jobdir;
pub mod jobs;
pub mod listpids;
pub mod login;
pub mod output_tail;
pub mod proctree;
pub mod reconfigure;
pub mod registration;
pub mod settings;
pub mod startup;
pub mod status;
pub mod stepd;
pub mod stepd_client;
pub mod stepd_socket;
pub mod steps;
pub mod supervisor_start;
pub mod supervisors;
pub mod suspend;
/// Every `unsafe` block of the agent and the supervisor: safe wrappers
/// over system calls, each block with its `SAFETY:` reason.
#[allow(unsafe_code)]
pub mod sys;
pub mod usage;
pub mod usercalls;

/// `main` of the `droverd` binary; returns the exit code.
pub fn main_entry() -> i32 {
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args::parse(argv) {
        Err(e) => {
            eprintln!("droverd: {e}\n{}", args::USAGE);
            1
        }
        Ok(args::Command::Help) => {
            print!("{}", args::USAGE);
            0
        }
        Ok(args::Command::Version) => {
            println!("droverd {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Ok(args::Command::Stepd(dir)) => stepd::run(&dir),
        Ok(args::Command::StepdServer) => stepd::zygote::run(),
        Ok(args::Command::Run(a)) => startup::run(a),
    }
}
