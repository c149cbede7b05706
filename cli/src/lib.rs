//! Drover's user and admin commands in one multi-call binary: `sbatch`,
//! `squeue`, `sinfo`, `scancel`, `scontrol`, `sacct` (chosen by the name the
//! binary is called by, or `drover <command> ...`), plus `drover up`,
//! `drover keygen`, `drover install` and `drover version`.
//!
//! Pure logic (option and directive parsing, format specs, renderers, time,
//! array and hostlist texts) lives in I/O-free modules with unit tests; each
//! command has one module for its I/O glue.

#![deny(unsafe_code)]

pub mod acctconn;
pub mod advise;
pub mod agentconn;
pub mod bench;
pub mod benchacct;
pub mod ca;
pub mod conn;
pub mod fmtspec;
pub mod fuzz;
pub mod install;
pub mod jobids;
pub mod json;
pub mod jsonw;
pub mod mailfile;
pub mod nodestate;
pub mod optdump;
pub mod opts;
#[cfg(test)]
mod proptests;
pub mod refuse;
pub mod sacct;
pub mod sacctmgr;
pub mod salloc;
pub mod sattach;
pub mod sbatch;
pub mod sbcast;
pub mod scancel;
pub mod scontrol;
pub mod sdiag;
pub mod seff;
pub mod sinfo;
pub mod sprio;
pub mod squeue;
pub mod sreport;
pub mod srun;
pub mod sshare;
pub mod sstat;
pub mod strftime;
pub mod support;
/// Every `unsafe` block of the commands (terminal and time zone calls).
#[allow(unsafe_code)]
pub mod sys;
pub mod timefmt;
pub mod up;
pub mod users;

/// The Slurm release whose interface Drover follows.
pub const SLURM_VERSION: &str = "23.11.0";
pub const SLURM_MAJOR: &str = "23";
pub const SLURM_MINOR: &str = "11";
pub const SLURM_MICRO: &str = "0";

/// `sbatch --version` and friends print Slurm's line, which tools parse.
pub fn print_version() {
    println!("slurm {SLURM_VERSION}");
}

/// The commands this binary answers to.
pub const COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sstat", "sprio", "sshare",
    "sacctmgr", "sreport", "seff", "srun", "salloc", "sdiag", "sbcast", "sattach",
];

fn drover_usage() -> String {
    format!(
        "Usage: drover <command> [args...]\n\
         \n\
         Slurm-compatible commands: {}\n\
         \n\
         Admin commands:\n\
         \x20 drover up --dir DIR [--nodes N] [--cpus-per-node C] [--mem-per-node MB]\n\
         \x20           [--gpus-per-node G] [--partition NAME]   run a local cluster\n\
         \x20 drover keygen [PATH]                                 write a cluster key\n\
         \x20 drover install [--prefix DIR] [--unit-dir DIR]       install binaries, links, units\n\
         \x20 drover ca init|issue|rotate|retire ...              the TLS CA and host certificates\n\
         \x20 drover mail-to-file FILE -s SUBJECT RECIPIENT       a MailProg that appends to FILE\n\
         \x20 drover sim -c slurm.conf (--sacct F|--swf F|--synthetic N) [--compare C] [--plot SVG]\n\
         \x20                                                      simulate a policy on a workload\n\
         \x20 drover version                                       print the version\n\
         \n\
         User commands:\n\
         \x20 drover advise [-u USER] [--since DAYS]              what to ask for next time (seff's advice)\n",
        COMMANDS.join(" ")
    )
}

/// Run a command by name with its arguments (without the program name).
pub fn run_command(cmd: &str, args: &[String]) -> i32 {
    match cmd {
        "sbatch" => sbatch::run(args),
        "squeue" => squeue::run(args),
        "sinfo" => sinfo::run(args),
        "scancel" => scancel::run(args),
        "scontrol" => scontrol::run(args),
        "sacct" => sacct::run(args),
        "sstat" => sstat::run(args),
        "sprio" => sprio::run(args),
        "sshare" => sshare::run(args),
        "sacctmgr" => sacctmgr::run(args),
        "sreport" => sreport::run(args),
        "seff" => seff::run(args),
        "srun" => srun::run(args),
        "salloc" => salloc::run(args),
        "sdiag" => sdiag::run(args),
        "sbcast" => sbcast::run(args),
        "sattach" => sattach::run(args),
        "up" => up::run(args),
        "keygen" => up::keygen(args),
        "install" => install::run(args),
        "ca" => ca::run(args),
        "mail-to-file" => mailfile::run(args),
        "bench" => bench::run(args),
        "advise" => advise::run(args),
        "sim" => sim(args),
        "version" | "--version" | "-V" => {
            println!(
                "drover {} (Slurm {SLURM_VERSION} compatible)",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
        "help" | "--help" | "-h" => {
            print!("{}", drover_usage());
            0
        }
        other => {
            eprintln!("drover: unknown command '{other}'");
            eprint!("{}", drover_usage());
            1
        }
    }
}

/// `drover sim`: the simulator is its own binary (`droversim`, beside this
/// one), so that the client carries no controller code.
fn sim(args: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().and_then(std::fs::canonicalize);
    let bin = match &exe {
        Ok(e) => e.with_file_name("droversim"),
        Err(e) => {
            eprintln!("drover sim: cannot find the drover binary: {e}");
            return 1;
        }
    };
    let err = std::process::Command::new(&bin).args(args).exec();
    eprintln!("drover sim: cannot run {}: {err}", bin.display());
    1
}

/// Entry point: dispatch on the basename of argv[0], else on argv[1].
pub fn main_with_args(argv: Vec<String>) -> i32 {
    let prog = argv
        .first()
        .map(|a| {
            std::path::Path::new(a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    if COMMANDS.contains(&prog.as_str()) {
        return run_command(&prog, &argv[1..]);
    }
    // `drover up`'s MailProg: DIR/bin/drover-mail writes DIR/mail.log.
    if prog == mailfile::LINK_NAME {
        let Some(file) = argv
            .first()
            .and_then(|a| mailfile::file_for_link(std::path::Path::new(a)))
        else {
            eprintln!(
                "drover-mail: error: run it by its path (DIR/bin/drover-mail writes DIR/mail.log)"
            );
            return 1;
        };
        return mailfile::deliver(&file, &argv[1..]);
    }
    match argv.get(1) {
        Some(cmd) => run_command(cmd, &argv[2..]),
        None => {
            eprint!("{}", drover_usage());
            1
        }
    }
}

pub fn main() -> i32 {
    // Writing to a closed pipe (`squeue | head`) must end quietly; a
    // socket's peer going away must not.
    sys::install_sigpipe();
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    main_with_args(argv)
}
