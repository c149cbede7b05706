#![forbid(unsafe_code)]

// A simulation allocates and frees a pass's working vectors thousands of
// times a simulated hour; mimalloc does it in about 18 % less time than
// glibc's allocator (docs/benchmarks.md, "drover sim").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Writing to a closed pipe (`drover sim ... | head`) must end quietly.
    drover_proto::sys::signal_default(libc::SIGPIPE);
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(drover_sim::cli::run(&args));
}
