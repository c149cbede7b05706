#![forbid(unsafe_code)]

fn main() {
    // Writing to a closed pipe (`drover sim ... | head`) must end quietly.
    drover_proto::sys::signal_default(libc::SIGPIPE);
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(drover_sim::cli::run(&args));
}
