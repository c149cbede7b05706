//! The `drover` command is linked as a position-dependent executable.
//!
//! Every command a user types (`sbatch`, `squeue`, ... are links to it) is
//! a fresh process, and scripts run them in loops. As a position-independent
//! executable the dynamic loader first applies ~15,700 relocations, writing
//! a pointer into every page of its ~245 KB of relocated read-only data
//! (vtables, tables of string slices): about 65 copy-on-write page faults
//! per run, a third of all the command's faults. Linked at a fixed address,
//! those pointers are final in the file and the pages are shared from the
//! page cache. Measured on the project's VM (docs/benchmarks.md): 150 -> 86
//! page faults and 1.26 -> 1.09 ms for `drover version`; the `sbatch` loop
//! ~3.5 % faster. The code is still compiled position-independent (only the
//! link changes), and the daemons stay position-independent executables:
//! the executable's own address is no longer randomised for the commands
//! only, which run as their caller and parse nothing but their own options,
//! files and the controller's authenticated answers.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=drover=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
