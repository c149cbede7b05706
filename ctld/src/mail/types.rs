//! `--mail-type` values as Slurm's `MAIL_*` bits (slurm.h), and the words
//! each mail is named by (`SLURM_JOB_MAIL_TYPE`, the subject line).

pub const BEGIN: u32 = 0x0001;
pub const END: u32 = 0x0002;
pub const FAIL: u32 = 0x0004;
pub const REQUEUE: u32 = 0x0008;
pub const TIME100: u32 = 0x0010;
pub const TIME90: u32 = 0x0020;
pub const TIME80: u32 = 0x0040;
pub const TIME50: u32 = 0x0080;
pub const STAGE_OUT: u32 = 0x0100;
pub const ARRAY_TASKS: u32 = 0x0200;
pub const INVALID_DEPEND: u32 = 0x0400;

/// `ALL`: every mail but the time-limit ones and ARRAY_TASKS (Slurm's
/// `parse_mail_type`).
pub const ALL: u32 = BEGIN | END | FAIL | REQUEUE | INVALID_DEPEND | STAGE_OUT;

/// The bits of a `--mail-type` list (`BEGIN,END`, any case). `NONE`
/// anywhere means none; unknown words (sbatch refuses them) are ignored.
pub fn parse(text: &str) -> u32 {
    let mut bits = 0;
    for word in text.split(',') {
        let w = word.trim().to_ascii_uppercase();
        bits |= match w.as_str() {
            "NONE" => return 0,
            "BEGIN" => BEGIN,
            "END" => END,
            "FAIL" => FAIL,
            "REQUEUE" => REQUEUE,
            "INVALID_DEPEND" => INVALID_DEPEND,
            "STAGE_OUT" => STAGE_OUT,
            "TIME_LIMIT" => TIME100,
            "TIME_LIMIT_90" => TIME90,
            "TIME_LIMIT_80" => TIME80,
            "TIME_LIMIT_50" => TIME50,
            "ARRAY_TASKS" => ARRAY_TASKS,
            "ALL" => ALL,
            _ => 0,
        };
    }
    bits
}

/// One mail's name, as Slurm's `_mail_type_str` (`kind` is one bit).
pub fn words(kind: u32) -> &'static str {
    match kind {
        INVALID_DEPEND => "Invalid dependency",
        BEGIN => "Began",
        END => "Ended",
        FAIL => "Failed",
        REQUEUE => "Requeued",
        STAGE_OUT => "StageOut/Teardown",
        TIME100 => "Reached time limit",
        TIME90 => "Reached 90% of time limit",
        TIME80 => "Reached 80% of time limit",
        TIME50 => "Reached 50% of time limit",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(parse("BEGIN,END,FAIL"), BEGIN | END | FAIL);
        assert_eq!(parse("begin, time_limit_50"), BEGIN | TIME50);
        assert_eq!(parse("ALL"), ALL);
        assert_eq!(parse("ALL,ARRAY_TASKS"), ALL | ARRAY_TASKS);
        assert_eq!(parse("END,NONE"), 0);
        assert_eq!(parse(""), 0);
        assert_eq!(parse("SOMETIMES"), 0);
        assert_eq!(ALL & (TIME50 | TIME100), 0);
        assert_eq!(words(TIME50), "Reached 50% of time limit");
        assert_eq!(words(BEGIN | END), "unknown");
    }
}
