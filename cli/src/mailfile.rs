//! `drover mail-to-file FILE -s SUBJECT RECIPIENT...`: a MailProg that
//! appends each mail (the body on standard input) to FILE in mbox format
//! (readable with `mail -f FILE`), created 0600. `drover up` points
//! `MailProg` at `DIR/bin/drover-mail`, this program under a name of its
//! own that writes `DIR/mail.log`, so a local cluster shows its job mail
//! without a mail server.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The name `drover up` links MailProg to; the mail goes to `../mail.log`.
pub const LINK_NAME: &str = "drover-mail";

/// The mail file of `DIR/bin/drover-mail`: `DIR/mail.log`.
pub fn file_for_link(argv0: &Path) -> Option<PathBuf> {
    let bin = argv0.parent()?;
    Some(bin.parent()?.join("mail.log"))
}

/// One mbox message. Pure.
pub fn entry(subject: &str, to: &[String], body: &str, date: &str) -> String {
    let mut e = format!(
        "From drover {date}\nFrom: drover\nTo: {}\nSubject: {}\n\n",
        to.join(", "),
        subject.replace('\n', " ")
    );
    for line in body.lines() {
        // mbox: a body line starting with "From " would start a message.
        if line.trim_start_matches('>').starts_with("From ") {
            e.push('>');
        }
        e.push_str(line);
        e.push('\n');
    }
    e.push('\n');
    e
}

/// `Wed Nov 25 15:11:46 2026` (asctime, as mbox's From line has it).
fn asctime(t: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let tm = crate::timefmt::localtime(t);
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[tm.wday as usize % 7],
        MONTHS[(tm.month as usize + 11) % 12],
        tm.day,
        tm.hour,
        tm.min,
        tm.sec,
        tm.year
    )
}

/// Append one mail to `file`, locked against a concurrent writer.
fn append(file: &Path, text: &str) -> Result<(), String> {
    let mut f =
        drover_proto::private::append(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let _ = drover_proto::sys::flock(&f, libc::LOCK_EX);
    f.write_all(text.as_bytes())
        .and_then(|_| f.flush())
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// Run with the mail file known; `args` as MailProg gets them
/// (`-s SUBJECT RECIPIENT...`).
pub fn deliver(file: &Path, args: &[String]) -> i32 {
    let mut subject = String::new();
    let mut to = Vec::new();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-s" => {
                let Some(s) = args.get(i + 1) else {
                    eprintln!("drover mail-to-file: error: -s needs a subject");
                    return 1;
                };
                subject = s.clone();
                i += 2;
            }
            a => {
                to.push(a.to_string());
                i += 1;
            }
        }
    }
    if to.is_empty() {
        eprintln!("drover mail-to-file: error: no recipient");
        return 1;
    }
    let mut body = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut body) {
        eprintln!("drover mail-to-file: error: reading the body: {e}");
        return 1;
    }
    let text = entry(
        &subject,
        &to,
        &String::from_utf8_lossy(&body),
        &asctime(crate::timefmt::now()),
    );
    match append(file, &text) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("drover mail-to-file: error: {e}");
            1
        }
    }
}

/// `drover mail-to-file FILE -s SUBJECT RECIPIENT...`
pub fn run(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        None | Some("-h" | "--help") => {
            println!("Usage: drover mail-to-file FILE -s SUBJECT RECIPIENT...\n\nAppends the mail (body on standard input) to FILE (mbox format, mode 0600).");
            i32::from(args.is_empty())
        }
        Some(f) => deliver(Path::new(f), &args[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbox_entries() {
        let e = entry(
            "Slurm Job_id=4 Name=x Began, Queued time 00:00:01",
            &["alice".into()],
            "Job ID: 4\nFrom here on\n",
            "Wed Nov 25 15:11:46 2026",
        );
        assert_eq!(
            e,
            "From drover Wed Nov 25 15:11:46 2026\nFrom: drover\nTo: alice\n\
             Subject: Slurm Job_id=4 Name=x Began, Queued time 00:00:01\n\n\
             Job ID: 4\n>From here on\n\n"
        );
        assert_eq!(
            file_for_link(Path::new("/c/bin/drover-mail")),
            Some(PathBuf::from("/c/mail.log"))
        );
    }

    #[test]
    fn appends_privately() {
        let d = std::env::temp_dir().join(format!("drover-mailfile-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let f = d.join("mail.log");
        let _ = std::fs::remove_file(&f);
        append(&f, "one\n").unwrap();
        append(&f, "two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "one\ntwo\n");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(deliver(&f, &["-s".into()]), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
