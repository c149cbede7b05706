#![forbid(unsafe_code)]

fn main() {
    std::process::exit(drover_nodeagent::main_entry());
}
