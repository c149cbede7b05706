//! gres.conf: which generic resources each node has and how to find them.

use std::path::Path;

use crate::error::{ConfError, ConfWarning};
use crate::hostlist;
use crate::include::{self, Resolver};
use crate::lexer::Pair;
use crate::nodes::parse_gres_count;
use crate::values::{canonical, err, opt_string, UnknownKeys};

/// The parsed gres.conf.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GresConf {
    /// Global `AutoDetect=` (a line with no Name= and no NodeName=).
    pub auto_detect: Option<String>,
    pub entries: Vec<GresConfEntry>,
    /// Every per-node AutoDetect setting in file order: (NodeName list,
    /// None = all nodes; value). Includes the AutoDetect of entries.
    pub node_auto_detect: Vec<(Option<Vec<String>>, String)>,
}

/// One `Name=` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GresConfEntry {
    /// Expanded `NodeName=`; None = all nodes.
    pub node_names: Option<Vec<String>>,
    pub name: String,
    pub r#type: Option<String>,
    /// `File=/dev/nvidia[0-3]` expanded, in order.
    pub files: Vec<String>,
    /// Count= or, when absent, the number of files (1 with MultipleFiles).
    pub count: Option<u64>,
    pub cores: Option<String>,
    pub links: Option<String>,
    pub flags: Option<String>,
    pub auto_detect: Option<String>,
}

impl GresConfEntry {
    fn applies_to(&self, node: &str) -> bool {
        names_match(&self.node_names, node)
    }
}

fn names_match(names: &Option<Vec<String>>, node: &str) -> bool {
    match names {
        None => true,
        Some(v) => v.iter().any(|n| n == node),
    }
}

impl GresConf {
    /// Entries that apply to `node` (its own lines and lines without NodeName).
    pub fn for_node(&self, node: &str) -> Vec<&GresConfEntry> {
        self.entries.iter().filter(|e| e.applies_to(node)).collect()
    }

    /// AutoDetect mode for `node`: the last per-node setting that applies,
    /// else the global one.
    pub fn auto_detect_for(&self, node: &str) -> Option<&str> {
        self.node_auto_detect
            .iter()
            .rev()
            .find(|(names, _)| names_match(names, node))
            .map(|(_, v)| v.as_str())
            .or(self.auto_detect.as_deref())
    }
}

pub(crate) const GRES_KEYS: &[&str] = &[
    "AutoDetect",
    "Count",
    "Cores",
    "CPUs",
    "File",
    "MultipleFiles",
    "Flags",
    "Links",
    "Name",
    "NodeName",
    "Type",
];

fn parse_line(
    pairs: &[Pair],
    conf: &mut GresConf,
    unknown: &mut UnknownKeys,
    warnings: &mut Vec<ConfWarning>,
) -> Result<(), ConfError> {
    let mut e = GresConfEntry::default();
    let mut name_seen = false;
    let mut auto: Option<String> = None;
    let mut count_given = false;
    let mut multiple = false;
    let mut first: Option<&Pair> = None;
    for p in pairs {
        first.get_or_insert(p);
        let Some(key) = canonical(GRES_KEYS, &p.key) else {
            unknown.note("", p, warnings);
            continue;
        };
        let v = p.value.trim();
        match key {
            "AutoDetect" => {
                let lower = v.to_ascii_lowercase();
                if lower.is_empty() {
                    return Err(err(p, key, "empty value"));
                }
                auto = Some(lower);
            }
            "Count" => {
                e.count = Some(parse_gres_count(v).map_err(|m| err(p, key, m))?);
                count_given = true;
            }
            "Cores" | "CPUs" => e.cores = opt_string(v),
            "File" | "MultipleFiles" => {
                e.files = hostlist::expand(v).map_err(|x| err(p, key, x.to_string()))?;
                multiple = key == "MultipleFiles";
            }
            "Flags" => e.flags = opt_string(v),
            "Links" => e.links = opt_string(v),
            "Name" => {
                if v.is_empty() {
                    return Err(err(p, key, "empty value"));
                }
                e.name = v.to_string();
                name_seen = true;
            }
            "NodeName" => {
                let names = hostlist::expand(v).map_err(|x| err(p, key, x.to_string()))?;
                if names.is_empty() {
                    return Err(err(p, key, "empty value"));
                }
                e.node_names = Some(names);
            }
            "Type" => e.r#type = opt_string(v),
            _ => unknown.note("", p, warnings),
        }
    }
    let Some(first) = first else { return Ok(()) };
    if !name_seen {
        let only_auto = pairs.iter().all(|p| {
            matches!(
                canonical(GRES_KEYS, &p.key),
                Some("AutoDetect" | "NodeName") | None
            )
        });
        if !only_auto || auto.is_none() {
            if pairs.iter().all(|p| canonical(GRES_KEYS, &p.key).is_none()) {
                return Ok(()); // nothing but unknown keys: already warned
            }
            return Err(err(first, "Name", "missing Name= on this line"));
        }
        if let Some(a) = auto {
            match e.node_names {
                None => conf.auto_detect = Some(a),
                Some(names) => conf.node_auto_detect.push((Some(names), a)),
            }
        }
        return Ok(());
    }
    if let Some(a) = auto {
        e.auto_detect = Some(a.clone());
        conf.node_auto_detect.push((e.node_names.clone(), a));
    }
    if !count_given && !e.files.is_empty() {
        e.count = Some(if multiple { 1 } else { e.files.len() as u64 });
    }
    conf.entries.push(e);
    Ok(())
}

fn parse_with(
    text: &str,
    file_name: &str,
    resolver: &mut Resolver<'_>,
) -> Result<(GresConf, Vec<ConfWarning>), ConfError> {
    let mut warnings = Vec::new();
    let lines = include::collect(text, file_name, resolver, &mut warnings)?;
    let mut conf = GresConf::default();
    let mut unknown = UnknownKeys::default();
    for pairs in &lines {
        parse_line(pairs, &mut conf, &mut unknown, &mut warnings)?;
    }
    Ok((conf, warnings))
}

/// Parse gres.conf text (`Include` is not available here; use [`load`]).
pub fn parse_str(text: &str, file_name: &str) -> Result<(GresConf, Vec<ConfWarning>), ConfError> {
    parse_with(text, file_name, &mut include::no_includes)
}

/// Read and parse a gres.conf file (and its `Include`s). A missing file is a
/// line-0 error; callers that treat gres.conf as optional check first.
pub fn load(path: &Path) -> Result<(GresConf, Vec<ConfWarning>), ConfError> {
    include::load_with(path, parse_with)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (GresConf, Vec<ConfWarning>) {
        parse_str(text, "gres.conf").unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn files_expand_and_count() {
        let (g, w) = parse(
            "AutoDetect=off\n\
             NodeName=lab-gpu-[01-02] Name=gpu Type=rtx4080 File=/dev/nvidia[0-3] Cores=0-11\n\
             Name=mps Count=400\n",
        );
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(g.auto_detect.as_deref(), Some("off"));
        assert_eq!(g.entries.len(), 2);
        let e = &g.entries[0];
        assert_eq!(
            e.node_names,
            Some(vec!["lab-gpu-01".into(), "lab-gpu-02".into()])
        );
        assert_eq!(e.name, "gpu");
        assert_eq!(e.r#type.as_deref(), Some("rtx4080"));
        assert_eq!(
            e.files,
            vec![
                "/dev/nvidia0",
                "/dev/nvidia1",
                "/dev/nvidia2",
                "/dev/nvidia3"
            ]
        );
        assert_eq!(e.count, Some(4));
        assert_eq!(e.cores.as_deref(), Some("0-11"));
        assert_eq!(g.entries[1].count, Some(400));
        assert_eq!(g.entries[1].node_names, None);
        assert_eq!(g.for_node("lab-gpu-01").len(), 2);
        assert_eq!(g.for_node("other").len(), 1);
    }

    #[test]
    fn count_overrides_files_and_multiple_files() {
        let (g, _) = parse(
            "Name=gpu File=/dev/nvidia0,/dev/nvidia1 Count=1\n\
             Name=gpu MultipleFiles=/dev/dri/card0,/dev/dri/renderD128\n\
             Name=nic\n",
        );
        assert_eq!(g.entries[0].count, Some(1));
        assert_eq!(g.entries[1].count, Some(1));
        assert_eq!(g.entries[1].files.len(), 2);
        assert_eq!(g.entries[2].count, None);
    }

    #[test]
    fn auto_detect_per_node() {
        let (g, _) = parse(
            "AutoDetect=nvml\n\
             NodeName=a[1-2] AutoDetect=off\n\
             NodeName=b Name=gpu AutoDetect=RSMI File=/dev/dri/card0\n",
        );
        assert_eq!(g.auto_detect_for("a1"), Some("off"));
        assert_eq!(g.auto_detect_for("b"), Some("rsmi"));
        assert_eq!(g.auto_detect_for("c"), Some("nvml"));
        assert_eq!(g.entries.len(), 1);
        assert_eq!(g.entries[0].auto_detect.as_deref(), Some("rsmi"));
        let (g, _) = parse("Name=gpu File=/dev/nvidia0");
        assert_eq!(g.auto_detect_for("x"), None);
    }

    #[test]
    fn unknown_keys_warn_once() {
        let (g, w) = parse("Name=gpu Colour=red\nName=gpu colour=blue\nBogus=1\n");
        assert_eq!(g.entries.len(), 2);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].to_string().starts_with("gres.conf:1: Colour: "));
    }

    #[test]
    fn errors() {
        let cases = [
            ("Name=gpu File=/dev/nvidia[0-", 1, "File"),
            ("\nName=gpu Count=lots", 2, "Count"),
            ("Type=a100 Count=2", 1, "Name"),
            ("NodeName=n[1-2", 1, "NodeName"),
            ("Name=", 1, "Name"),
            ("Include other.conf", 1, "Include"),
        ];
        for (text, line, key) in cases {
            let e = parse_str(text, "g.conf").unwrap_err();
            assert_eq!((e.line, e.key.as_str()), (line, key), "{text}: {e}");
            assert!(e
                .to_string()
                .starts_with(&format!("g.conf:{line}: {key}: ")));
        }
    }
}
