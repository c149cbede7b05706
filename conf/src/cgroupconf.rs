//! cgroup.conf: how slurmd confines jobs with cgroups.

use std::path::Path;

use crate::error::{ConfError, ConfWarning};
use crate::include::{self, Resolver};
use crate::units;
use crate::values::{self, canonical, err, UnknownKeys};

/// The parsed cgroup.conf.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupConf {
    pub cgroup_plugin: String,
    pub cgroup_mountpoint: String,
    pub constrain_ram_space: bool,
    pub constrain_swap_space: bool,
    pub constrain_cores: bool,
    pub constrain_devices: bool,
    /// Percent of the job's allocated memory.
    pub allowed_ram_space: f64,
    /// Percent of the job's allocated memory, on top of the RAM limit.
    pub allowed_swap_space: f64,
    /// Percent of the node's memory.
    pub max_ram_percent: f64,
    /// Percent of the node's memory.
    pub max_swap_percent: f64,
    /// MB.
    pub min_ram_space: u64,
    pub ignore_systemd: bool,
    /// Every Key=Value seen, in file order (canonical key spelling).
    pub raw: Vec<(String, String)>,
}

impl Default for CgroupConf {
    fn default() -> Self {
        CgroupConf {
            cgroup_plugin: "autodetect".to_string(),
            cgroup_mountpoint: "/sys/fs/cgroup".to_string(),
            constrain_ram_space: false,
            constrain_swap_space: false,
            constrain_cores: false,
            constrain_devices: false,
            allowed_ram_space: 100.0,
            allowed_swap_space: 0.0,
            max_ram_percent: 100.0,
            max_swap_percent: 100.0,
            min_ram_space: 30,
            ignore_systemd: false,
            raw: Vec::new(),
        }
    }
}

pub(crate) const CGROUP_KEYS: &[&str] = &[
    "CgroupPlugin",
    "CgroupMountpoint",
    "ConstrainRAMSpace",
    "ConstrainSwapSpace",
    "ConstrainCores",
    "ConstrainDevices",
    "AllowedRAMSpace",
    "AllowedSwapSpace",
    "MaxRAMPercent",
    "MaxSwapPercent",
    "MinRAMSpace",
    "IgnoreSystemd",
];

/// Recognised, kept in `raw` only.
pub(crate) const CGROUP_RAW_KEYS: &[&str] = &[
    "AllowedKmemSpace",
    "CgroupAutomount",
    "CgroupReleaseAgentDir",
    "ConstrainKmemSpace",
    "EnableControllers",
    "IgnoreSystemdFailure",
    "MaxKmemPercent",
    "MemorySwappiness",
    "MinKmemSpace",
    "SystemdTimeout",
];

fn parse_with(
    text: &str,
    file_name: &str,
    resolver: &mut Resolver<'_>,
) -> Result<(CgroupConf, Vec<ConfWarning>), ConfError> {
    let mut warnings = Vec::new();
    let lines = include::collect(text, file_name, resolver, &mut warnings)?;
    let mut c = CgroupConf::default();
    let mut unknown = UnknownKeys::default();
    for p in lines.iter().flatten() {
        let Some(key) = canonical(CGROUP_KEYS, &p.key) else {
            match canonical(CGROUP_RAW_KEYS, &p.key) {
                Some(k) => c.raw.push((k.to_string(), p.value.clone())),
                None => {
                    unknown.note("", p, &mut warnings);
                    c.raw.push((p.key.clone(), p.value.clone()));
                }
            }
            continue;
        };
        c.raw.push((key.to_string(), p.value.clone()));
        let v = p.value.trim();
        let e = |m: String| err(p, key, m);
        let boolv = || values::parse_bool(v).map_err(e);
        let pct = || values::parse_percent(v).map_err(e);
        let nonempty = || {
            if v.is_empty() {
                Err(e("empty value".to_string()))
            } else {
                Ok(v.to_string())
            }
        };
        match key {
            "CgroupPlugin" => c.cgroup_plugin = nonempty()?,
            "CgroupMountpoint" => c.cgroup_mountpoint = nonempty()?,
            "ConstrainRAMSpace" => c.constrain_ram_space = boolv()?,
            "ConstrainSwapSpace" => c.constrain_swap_space = boolv()?,
            "ConstrainCores" => c.constrain_cores = boolv()?,
            "ConstrainDevices" => c.constrain_devices = boolv()?,
            "AllowedRAMSpace" => c.allowed_ram_space = pct()?,
            "AllowedSwapSpace" => c.allowed_swap_space = pct()?,
            "MaxRAMPercent" => c.max_ram_percent = pct()?,
            "MaxSwapPercent" => c.max_swap_percent = pct()?,
            "MinRAMSpace" => c.min_ram_space = units::parse_mem_mb(v).map_err(e)?,
            "IgnoreSystemd" => c.ignore_systemd = boolv()?,
            _ => {}
        }
    }
    Ok((c, warnings))
}

/// Parse cgroup.conf text (`Include` is not available here; use [`load`]).
pub fn parse_str(text: &str, file_name: &str) -> Result<(CgroupConf, Vec<ConfWarning>), ConfError> {
    parse_with(text, file_name, &mut include::no_includes)
}

/// Read and parse a cgroup.conf file (and its `Include`s).
pub fn load(path: &Path) -> Result<(CgroupConf, Vec<ConfWarning>), ConfError> {
    include::load_with(path, parse_with)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let (c, w) = parse_str("", "cgroup.conf").unwrap();
        assert!(w.is_empty());
        assert_eq!(c, CgroupConf::default());
        assert_eq!(c.cgroup_plugin, "autodetect");
        assert_eq!(c.cgroup_mountpoint, "/sys/fs/cgroup");
        assert_eq!(c.allowed_ram_space, 100.0);
        assert_eq!(c.allowed_swap_space, 0.0);
        assert_eq!(c.min_ram_space, 30);
    }

    #[test]
    fn all_keys() {
        let (c, w) = parse_str(
            "CgroupPlugin=cgroup/v2\nCgroupMountpoint=/cg\n\
             ConstrainRAMSpace=yes ConstrainSwapSpace=YES ConstrainCores=true constraindevices=1\n\
             AllowedRAMSpace=95.5 AllowedSwapSpace=10 MaxRAMPercent=90 MaxSwapPercent=50\n\
             MinRAMSpace=1G IgnoreSystemd=yes CgroupAutomount=yes\n",
            "cgroup.conf",
        )
        .unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(c.cgroup_plugin, "cgroup/v2");
        assert_eq!(c.cgroup_mountpoint, "/cg");
        assert!(c.constrain_ram_space && c.constrain_swap_space);
        assert!(c.constrain_cores && c.constrain_devices);
        assert_eq!(c.allowed_ram_space, 95.5);
        assert_eq!(c.allowed_swap_space, 10.0);
        assert_eq!(c.max_ram_percent, 90.0);
        assert_eq!(c.max_swap_percent, 50.0);
        assert_eq!(c.min_ram_space, 1024);
        assert!(c.ignore_systemd);
        assert!(c.raw.iter().any(|(k, _)| k == "ConstrainDevices"));
        assert!(c.raw.iter().any(|(k, _)| k == "CgroupAutomount"));
    }

    #[test]
    fn unknown_keys_warn_once() {
        let (_, w) = parse_str("Foo=1\nfoo=2\nBar=3", "cg.conf").unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].to_string(), "cg.conf:1: Foo: unknown key, ignored");
    }

    #[test]
    fn errors() {
        let cases = [
            ("ConstrainCores=maybe", 1, "ConstrainCores"),
            ("\n\nAllowedRAMSpace=lots", 3, "AllowedRAMSpace"),
            ("MinRAMSpace=-1", 1, "MinRAMSpace"),
            ("CgroupPlugin=", 1, "CgroupPlugin"),
        ];
        for (text, line, key) in cases {
            let e = parse_str(text, "cg.conf").unwrap_err();
            assert_eq!((e.line, e.key.as_str()), (line, key), "{text}: {e}");
            assert!(e
                .to_string()
                .starts_with(&format!("cg.conf:{line}: {key}: ")));
        }
    }
}
