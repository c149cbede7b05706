fn main() {
    // Writing to a closed pipe (`drover sim ... | head`) must end quietly.
    // SAFETY: restoring the default SIGPIPE disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(drover_sim::cli::run(&args));
}
