//! `SlurmUser`: the controller and the accounting daemon need no root.
//!
//! Started as root with `SlurmUser=NAME` (not root), a daemon reads what
//! only root may read (the configuration and `AuthKeyFile`) and then calls
//! [`become_slurm_user`] before it serves anything: its state directory is
//! checked (or made) to be NAME's, and the process takes NAME's uid, gid and
//! groups for good. Started as NAME itself it only checks the directory.
//! Any other user is refused, as slurmctld refuses to start when it cannot
//! become SlurmUser.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::sys;
use crate::sysdb::{passwd_by_name, passwd_by_uid, user_name_or_number, Passwd};

/// The user `SlurmUser` names (a name, or a number as Slurm also takes);
/// `None` for root.
pub fn lookup(setting: &str) -> Result<Option<Passwd>, String> {
    let pw = match setting.parse::<u32>() {
        Ok(uid) => passwd_by_uid(uid),
        Err(_) => passwd_by_name(setting),
    }
    .ok_or_else(|| format!("SlurmUser={setting}: no such user"))?;
    Ok((pw.uid != 0).then_some(pw))
}

/// Check that `dir` (the `key` setting's directory) belongs to `pw`; make it
/// (0700, owned by `pw`) when it is missing and this process is root.
pub fn check_dir(key: &str, dir: &Path, pw: &Passwd) -> Result<(), String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.uid() == pw.uid => Ok(()),
        Ok(m) => Err(format!(
            "{key} {} is owned by {}({}), not SlurmUser {}({}): chown it to {}",
            dir.display(),
            user_name_or_number(m.uid()),
            m.uid(),
            pw.name,
            pw.uid,
            pw.name
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && sys::is_root() => {
            let made = std::fs::create_dir_all(dir)
                .and_then(|()| std::os::unix::fs::chown(dir, Some(pw.uid), Some(pw.gid)))
                .and_then(|()| {
                    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                });
            made.map_err(|e| format!("{key} {}: cannot make it: {e}", dir.display()))
        }
        // Started as SlurmUser: the daemon makes it itself, as that user.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{key} {}: {e}", dir.display())),
    }
}

/// Become `SlurmUser` (see the module's text). `dirs` are the daemon's
/// state directories with the names of their settings. Returns the user
/// now run as, `None` when `SlurmUser` is root (nothing changes).
pub fn become_slurm_user(
    daemon: &str,
    setting: &str,
    dirs: &[(&str, &Path)],
) -> Result<Option<Passwd>, String> {
    let Some(pw) = lookup(setting)? else {
        return Ok(None);
    };
    let euid = sys::geteuid();
    if euid != 0 && euid != pw.uid {
        return Err(format!(
            "running as {}({euid}): with SlurmUser={} start {daemon} as root or as {}",
            user_name_or_number(euid),
            pw.name,
            pw.name
        ));
    }
    for (key, dir) in dirs {
        check_dir(key, dir, &pw)?;
    }
    if euid == 0 {
        let groups = sys::grouplist(&pw.name, pw.gid);
        sys::set_ids(pw.uid, pw.gid, &groups)
            .map_err(|e| format!("cannot become SlurmUser {}({}): {e}", pw.name, pw.uid))?;
        if sys::can_regain_root() {
            return Err(format!(
                "cannot become SlurmUser {}({}): root could be regained",
                pw.name, pw.uid
            ));
        }
    }
    Ok(Some(pw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_means_no_change() {
        assert_eq!(lookup("root").unwrap(), None);
        assert_eq!(lookup("0").unwrap(), None);
        assert_eq!(become_slurm_user("droverctld", "root", &[]).unwrap(), None);
        assert_eq!(
            lookup("no-such-user-here").unwrap_err(),
            "SlurmUser=no-such-user-here: no such user"
        );
    }

    #[test]
    fn a_directory_of_another_owner_is_named() {
        let Some(nobody) = lookup("65534").ok().flatten() else {
            return;
        };
        let d = tempfile::tempdir().unwrap();
        let owner = std::fs::metadata(d.path()).unwrap().uid();
        if owner == nobody.uid {
            return;
        }
        let e = check_dir("StateSaveLocation", d.path(), &nobody).unwrap_err();
        assert!(
            e.starts_with(&format!(
                "StateSaveLocation {} is owned by {}({owner}), not SlurmUser {}(65534)",
                d.path().display(),
                user_name_or_number(owner),
                nobody.name
            )),
            "{e}"
        );
        if sys::is_root() {
            let made = d.path().join("state");
            check_dir("StateSaveLocation", &made, &nobody).unwrap();
            let m = std::fs::metadata(&made).unwrap();
            assert_eq!((m.uid(), m.mode() & 0o777), (65534, 0o700));
        }
    }
}
