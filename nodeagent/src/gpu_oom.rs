//! Recognising a GPU out-of-memory failure in the end of a job's stderr.
//! Pure: the caller reads the file (see `failure_scan.rs`).
//!
//! The host's memory limit is the cgroup's business (an OOM kill ends the
//! job OUT_OF_MEMORY); a GPU running out of memory is not seen by the
//! kernel: the framework raises an error, prints it and the script exits
//! non-zero. The messages recognised are those the common frameworks print.

use drover_proto::GPU_OOM_COMMENT;

/// How much of the end of the file is read.
pub const TAIL_BYTES: u64 = 64 * 1024;

/// The longest line kept in the comment (the rest of PyTorch's message is
/// advice about allocator settings).
const MAX_LINE: usize = 200;

/// Does this line report a GPU out-of-memory error?
fn is_gpu_oom(line: &str) -> bool {
    // PyTorch/CUDA: "torch.OutOfMemoryError: CUDA out of memory. Tried to
    // allocate ..." (older: "RuntimeError: CUDA out of memory."), ROCm:
    // "HIP out of memory.", the CUDA runtime's "CUDA error: out of memory",
    // cuBLAS's handle allocation.
    const ANYWHERE: &[&str] = &[
        "CUDA out of memory",
        "CUDA error: out of memory",
        "CUBLAS_STATUS_ALLOC_FAILED",
        "HIP out of memory",
        "hipErrorOutOfMemory",
        "cudaErrorMemoryAllocation",
    ];
    if ANYWHERE.iter().any(|p| line.contains(p)) {
        return true;
    }
    // TensorFlow: "ResourceExhaustedError: OOM when allocating tensor ...";
    // JAX/XLA: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate".
    (line.contains("ResourceExhaustedError") && line.contains("OOM"))
        || (line.contains("RESOURCE_EXHAUSTED") && line.contains("Out of memory"))
}

/// The job's SystemComment when the text (the end of its stderr) reports
/// a GPU out-of-memory error: `GPU out of memory: LINE`, LINE being the
/// last such line, control characters replaced and cut to 200 characters.
pub fn scan(tail: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(tail);
    // Progress bars end lines with '\r': split on both.
    let line: String = text
        .split(['\n', '\r'])
        .rev()
        .find(|l| is_gpu_oom(l))?
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = line.trim();
    let mut kept: String = line.chars().take(MAX_LINE).collect();
    if line.chars().count() > MAX_LINE {
        kept.push_str("...");
    }
    Some(format!("{GPU_OOM_COMMENT}: {kept}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TORCH: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate \
20.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 3.94 GiB is free. Including \
non-PyTorch memory, this process has 75.20 GiB memory in use. Of the allocated memory \
74.51 GiB is allocated by PyTorch, and 201.43 MiB is reserved by PyTorch but unallocated. \
If reserved but unallocated memory is large try setting \
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";

    fn traceback(last: &str) -> String {
        format!(
            "epoch 1: loss 0.93\nTraceback (most recent call last):\n  File \"train.py\", \
             line 12, in <module>\n    y = model(x)\n{last}\n"
        )
    }

    #[test]
    fn pytorch_cuda_message() {
        let c = scan(traceback(TORCH).as_bytes()).unwrap();
        assert!(
            c.starts_with("GPU out of memory: torch.OutOfMemoryError: CUDA out of memory. Tried"),
            "{c}"
        );
        assert!(c.ends_with("..."), "cut: {c}");
        assert!(c.chars().count() <= GPU_OOM_COMMENT.len() + 2 + 200 + 3);
    }

    #[test]
    fn other_frameworks() {
        for line in [
            "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB",
            "RuntimeError: CUDA error: out of memory",
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB",
            "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating \
             tensor with shape[8192,8192]",
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying \
             to allocate 17179869184 bytes.",
        ] {
            let c = scan(traceback(line).as_bytes()).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(c, format!("GPU out of memory: {line}"));
        }
    }

    #[test]
    fn ordinary_failures_are_not_gpu_oom() {
        for text in [
            "Traceback (most recent call last):\nValueError: bad shape\n",
            "MemoryError\n",
            "Killed\n",
            "ResourceExhaustedError: too many open files\n",
            "",
        ] {
            assert_eq!(scan(text.as_bytes()), None, "{text}");
        }
    }

    #[test]
    fn last_match_wins_and_odd_bytes_are_harmless() {
        let mut t = b"CUDA out of memory (first)\r\x1b[2Kprogress 10%\r".to_vec();
        t.extend_from_slice(&[0xff, 0xfe, b'\n']);
        t.extend_from_slice(b"RuntimeError: CUDA error: out of memory\x07\n");
        assert_eq!(
            scan(&t).unwrap(),
            "GPU out of memory: RuntimeError: CUDA error: out of memory"
        );
        // A cut in the middle of a UTF-8 sequence (the tail starts anywhere).
        let mut t = "é".as_bytes()[1..].to_vec();
        t.extend_from_slice(b"HIP out of memory\n");
        assert!(scan(&t).is_some());
    }
}
