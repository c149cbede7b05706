//! The `drover` command is linked statically, at a fixed address.
//!
//! Every command a user types (`sbatch`, `squeue`, ... are links to it) is
//! a fresh process, and scripts run them in loops: what a process pays
//! before `main` is paid per command. Linked dynamically, the loader maps
//! libc and libm, looks up and binds their symbols and relocates them at
//! every start; linked statically there is none of that, and `drover
//! version` starts as fast as `/bin/true` (0.74-0.88 ms against 1.0 ms on
//! the project's VM; the `sbatch` loop ~25 % faster: docs/benchmarks.md).
//!
//! * `-static`: rustc names the C libraries as `-lc`, `-lm`, ... in
//!   dynamic mode, so `static-libc/` holds linker scripts of those names
//!   that point the linker at the static archives (as
//!   `.cargo/static-unwinder` does for `-lgcc_s`); only this binary is
//!   given the directory. The daemons stay dynamic.
//! * A static C library must not load name service modules (sss, ldap,
//!   systemd): `drover_proto::sys::nss` routes the command's user, group
//!   and host look-ups through the C library only where every source is
//!   built in (`files`, `dns`), and otherwise through the file and the
//!   system's `getent`.
//! * `-no-pie`: at a fixed address, the pointers in the ~245 KB of
//!   relocated read-only data (vtables, tables of string slices) are final
//!   in the file; as a position-independent executable they were written at
//!   every start (~65 copy-on-write page faults). The code is still compiled
//!   position-independent; the executable's own address is not randomised
//!   for the commands only, which run as their caller and parse nothing but
//!   their own options, files and the controller's authenticated answers.
//!
//! Without the C library's static archives (`libc.a`: Debian's libc6-dev
//! has them, Fedora's glibc-static package), or when cross-compiling, the
//! binary is linked dynamically, with a warning; it works the same, starting
//! slower.
fn main() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" {
        println!("cargo:rustc-link-arg-bin=drover=-no-pie");
        if var("CARGO_CFG_TARGET_ENV") == "gnu" && var("TARGET") == var("HOST") {
            if has_static_libc() {
                let dir = var("CARGO_MANIFEST_DIR");
                println!("cargo:rustc-link-arg-bin=drover=-static");
                println!("cargo:rustc-link-arg-bin=drover=-L{dir}/static-libc");
            } else {
                println!(
                    "cargo:warning=no libc.a (the C library's static archives): \
                     the drover command is linked dynamically and starts slower"
                );
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=static-libc");
}

/// Does the C compiler (the linker rustc runs) find `libc.a`? It prints
/// the name alone when it does not.
fn has_static_libc() -> bool {
    std::process::Command::new("cc")
        .arg("-print-file-name=libc.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .is_some_and(|p| p.starts_with('/') && std::path::Path::new(&p).exists())
}
