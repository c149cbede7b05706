//! cgroup v2 device control: v2 has no `devices.deny` file; access to
//! device nodes is decided by `BPF_PROG_TYPE_CGROUP_DEVICE` programs
//! attached to the cgroup. This module assembles a small deny-list program
//! (pure, unit-tested) and loads/attaches it with the raw `bpf(2)` call.

use std::os::fd::AsRawFd;
use std::path::Path;

use super::plan::Dev;

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    /// dst_reg in the low nibble, src_reg in the high one.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_ne_bytes());
        b[4..8].copy_from_slice(&self.imm.to_ne_bytes());
        b
    }
}

// Opcodes (linux/bpf_common.h, linux/bpf.h).
const LDX_MEM_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
const ALU64_AND_K: u8 = 0x57; // BPF_ALU64 | BPF_AND | BPF_K
const JMP_JNE_K: u8 = 0x55; // BPF_JMP | BPF_JNE | BPF_K
const ALU64_MOV_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
const JMP_EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT

/// `BPF_DEVCG_DEV_CHAR`: the low 16 bits of `access_type`.
const DEV_CHAR: i32 = 2;

fn regs(dst: u8, src: u8) -> u8 {
    (src << 4) | (dst & 0x0f)
}

/// The program: deny (return 0) any access to the listed character
/// devices, allow (return 1) everything else. Context (`struct
/// bpf_cgroup_dev_ctx`): `u32 access_type` (type | access << 16), `u32
/// major`, `u32 minor`.
pub fn deny_program(deny: &[Dev]) -> Vec<Insn> {
    let mut p = vec![
        // r2 = ctx->access_type & 0xffff (device type)
        Insn {
            code: LDX_MEM_W,
            regs: regs(2, 1),
            off: 0,
            imm: 0,
        },
        Insn {
            code: ALU64_AND_K,
            regs: regs(2, 0),
            off: 0,
            imm: 0xffff,
        },
        // r3 = ctx->major, r4 = ctx->minor
        Insn {
            code: LDX_MEM_W,
            regs: regs(3, 1),
            off: 4,
            imm: 0,
        },
        Insn {
            code: LDX_MEM_W,
            regs: regs(4, 1),
            off: 8,
            imm: 0,
        },
    ];
    for d in deny {
        // Five instructions per rule; a mismatch skips the rest of the block.
        p.push(Insn {
            code: JMP_JNE_K,
            regs: regs(2, 0),
            off: 4,
            imm: DEV_CHAR,
        });
        p.push(Insn {
            code: JMP_JNE_K,
            regs: regs(3, 0),
            off: 3,
            imm: d.major as i32,
        });
        p.push(Insn {
            code: JMP_JNE_K,
            regs: regs(4, 0),
            off: 2,
            imm: d.minor as i32,
        });
        p.push(Insn {
            code: ALU64_MOV_K,
            regs: regs(0, 0),
            off: 0,
            imm: 0,
        });
        p.push(Insn {
            code: JMP_EXIT,
            regs: 0,
            off: 0,
            imm: 0,
        });
    }
    p.push(Insn {
        code: ALU64_MOV_K,
        regs: regs(0, 0),
        off: 0,
        imm: 1,
    });
    p.push(Insn {
        code: JMP_EXIT,
        regs: 0,
        off: 0,
        imm: 0,
    });
    p
}

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_TYPE_CGROUP_DEVICE: u32 = 15;
const BPF_CGROUP_DEVICE: u32 = 6;
const BPF_F_ALLOW_MULTI: u32 = 2;

/// `union bpf_attr`, as raw bytes: big enough for the commands used here
/// (the kernel treats a shorter attr as zero-extended).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn put_u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn put_u64(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
}

/// The addresses put into `attr` point at buffers alive for the call
/// (the instructions, license and log of [`attach_deny`]).
fn bpf(cmd: libc::c_long, attr: &mut Attr) -> Result<i32, std::io::Error> {
    crate::sys::bpf(cmd, &mut attr.0)
}

/// Load the deny program and attach it to the cgroup directory `cg`
/// (with BPF_F_ALLOW_MULTI: programs of ancestors still apply too). The
/// attachment lives as long as the cgroup.
pub fn attach_deny(cg: &Path, deny: &[Dev]) -> Result<(), String> {
    let insns: Vec<u8> = deny_program(deny)
        .into_iter()
        .flat_map(Insn::to_bytes)
        .collect();
    let license = c"GPL";
    let mut log = vec![0u8; 4096];
    let mut a = Attr([0; 128]);
    a.put_u32(0, BPF_PROG_TYPE_CGROUP_DEVICE);
    a.put_u32(4, (insns.len() / 8) as u32);
    a.put_u64(8, insns.as_ptr() as u64);
    a.put_u64(16, license.as_ptr() as u64);
    a.put_u32(24, 1); // log_level
    a.put_u32(28, log.len() as u32);
    a.put_u64(32, log.as_mut_ptr() as u64);
    a.0[48..48 + 11].copy_from_slice(b"drover_devs");
    a.put_u32(68, BPF_CGROUP_DEVICE); // expected_attach_type
    let prog = bpf(BPF_PROG_LOAD, &mut a).map_err(|e| {
        let verifier = String::from_utf8_lossy(&log);
        let verifier = verifier.trim_end_matches('\0').trim();
        format!("cannot load the device-control BPF program: {e} {verifier}")
    })?;
    let prog = crate::sys::own_new_fd(prog);
    let dir = std::fs::File::open(cg).map_err(|e| format!("cannot open {}: {e}", cg.display()))?;
    let mut a = Attr([0; 128]);
    a.put_u32(0, dir.as_raw_fd() as u32);
    a.put_u32(4, prog.as_raw_fd() as u32);
    a.put_u32(8, BPF_CGROUP_DEVICE);
    a.put_u32(12, BPF_F_ALLOW_MULTI);
    bpf(BPF_PROG_ATTACH, &mut a)
        .map_err(|e| format!("cannot attach the device program to {}: {e}", cg.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the program over a context the way the kernel would (a tiny
    /// interpreter for the instructions we emit).
    fn run(p: &[Insn], ty: u32, access: u32, major: u32, minor: u32) -> u64 {
        let ctx = [ty | (access << 16), major, minor];
        let mut r = [0u64; 11];
        let mut pc = 0usize;
        loop {
            let i = p[pc];
            let dst = (i.regs & 0x0f) as usize;
            pc += 1;
            match i.code {
                LDX_MEM_W => r[dst] = u64::from(ctx[i.off as usize / 4]),
                ALU64_AND_K => r[dst] &= i.imm as i64 as u64,
                ALU64_MOV_K => r[dst] = i.imm as i64 as u64,
                JMP_JNE_K => {
                    if r[dst] != i.imm as i64 as u64 {
                        pc += i.off as usize;
                    }
                }
                JMP_EXIT => return r[0],
                c => panic!("unexpected opcode {c:#x}"),
            }
        }
    }

    #[test]
    fn program_denies_exactly_the_listed_devices() {
        let deny = [
            Dev {
                major: 195,
                minor: 0,
            },
            Dev {
                major: 195,
                minor: 3,
            },
        ];
        let p = deny_program(&deny);
        assert_eq!(p.len(), 4 + 5 * 2 + 2);
        assert_eq!(run(&p, 2, 7, 195, 0), 0);
        assert_eq!(run(&p, 2, 2, 195, 3), 0);
        assert_eq!(run(&p, 2, 7, 195, 1), 1);
        assert_eq!(run(&p, 2, 7, 195, 255), 1, "nvidiactl stays usable");
        assert_eq!(run(&p, 1, 7, 195, 0), 1, "block devices are not GPUs");
        assert_eq!(run(&p, 2, 7, 1, 3), 1, "/dev/null");
        assert_eq!(run(&deny_program(&[]), 2, 7, 195, 0), 1);
    }
}
