//! `scontrol write batch_script JOBID [FILE|-]`: a batch job's script into
//! `slurm-JOBID.sh` (default), FILE, or standard output (`-`).

use std::io::Write;

use drover_proto::client::Controller;
use drover_proto::JobScriptRequest;

/// The file the script goes to: `None` for standard output.
pub fn target(job_id: u32, file: Option<&str>) -> Option<String> {
    match file {
        Some("-") => None,
        Some(f) => Some(f.to_string()),
        None => Some(format!("slurm-{job_id}.sh")),
    }
}

pub async fn batch_script(
    client: &mut Controller,
    job: &str,
    file: Option<&str>,
    quiet: bool,
) -> i32 {
    let Some(job_id) = job.trim().parse::<u32>().ok().filter(|&j| j > 0) else {
        eprintln!("job script retrieval failed: Invalid job id specified");
        return 1;
    };
    let script = match client.get_job_script(JobScriptRequest { job_id }).await {
        Ok(r) => r.into_inner().script,
        Err(st) => {
            // Slurm's slurm_perror("job script retrieval failed").
            let m = crate::conn::classify(&st).message();
            eprintln!("job script retrieval failed: {m}");
            return 1;
        }
    };
    match target(job_id, file) {
        None => {
            let mut out = std::io::stdout().lock();
            if out.write_all(&script).and_then(|()| out.flush()).is_err() {
                return 1;
            }
        }
        Some(path) => {
            if let Err(e) = std::fs::write(&path, &script) {
                let e = crate::conn::os_error_text(&e);
                eprintln!("failed to open file `{path}`: {e}");
                return 1;
            }
            if !quiet {
                println!("batch script for job {job_id} written to {path}");
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(target(12, None).as_deref(), Some("slurm-12.sh"));
        assert_eq!(target(12, Some("x.sh")).as_deref(), Some("x.sh"));
        assert_eq!(target(12, Some("-")), None);
    }
}
