#![forbid(unsafe_code)]

fn main() {
    std::process::exit(drover_cli::main());
}
