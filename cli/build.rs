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
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
        println!("cargo:rustc-link-arg-bin=drover=-no-pie");
        println!("cargo:rustc-link-arg-bin=drover=-static");
        println!("cargo:rustc-link-arg-bin=drover=-L{dir}/static-libc");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=static-libc");
}
