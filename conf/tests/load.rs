//! `load` functions: reading files, Include resolution and globs.

use std::fs;
use std::path::PathBuf;

use drover_conf::{cgroupconf, gresconf, slurmconf};

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("drover-conf-{}-{}", std::process::id(), name));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.0.join(rel);
        if let Some(dir) = p.parent() {
            fs::create_dir_all(dir).expect("mkdir");
        }
        fs::write(&p, text).expect("write");
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn load_with_relative_and_absolute_includes() {
    let d = TempDir::new("incl");
    let abs = d.write(
        "abs/parts.conf",
        "PartitionName=p Nodes=n[1-2] Default=YES\n",
    );
    d.write("sub/nodes.conf", "NodeName=n1 CPUs=2\nInclude more.conf\n");
    d.write("sub/more.conf", "NodeName=n2 CPUs=4\n");
    let main = d.write(
        "drover.conf",
        &format!(
            "ClusterName=t\nSlurmctldHost=localhost\nInclude sub/nodes.conf\nInclude {}\n",
            abs.display()
        ),
    );
    let (c, w) = slurmconf::load(&main).expect("load");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.nodes.len(), 2);
    assert_eq!(c.node("n2").map(|n| n.cpus), Some(4));
    assert_eq!(c.default_partition().map(|p| p.nodes.len()), Some(2));
}

#[test]
fn load_glob_include_in_name_order() {
    let d = TempDir::new("glob");
    d.write("conf.d/20-b.conf", "NodeName=b1\n");
    d.write("conf.d/10-a.conf", "NodeName=a1\n");
    d.write("conf.d/.hidden.conf", "NodeName=hidden\n");
    d.write("conf.d/readme.txt", "garbage without equals\n");
    let main = d.write(
        "drover.conf",
        "SlurmctldHost=c\nInclude conf.d/*.conf\nInclude conf.d/none-*.conf\n",
    );
    let (c, w) = slurmconf::load(&main).expect("load");
    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a1", "b1"]);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!((w[0].line, w[0].key.as_str()), (3, "Include"));
}

#[test]
fn load_error_in_included_file_names_that_file() {
    let d = TempDir::new("inclerr");
    d.write("bad.conf", "\n\nNodeName=n1 CPUs=abc\n");
    let main = d.write("drover.conf", "SlurmctldHost=c\nInclude bad.conf\n");
    let e = slurmconf::load(&main).unwrap_err();
    assert_eq!(e.line, 3);
    assert_eq!(e.key, "CPUs");
    assert!(e.file.ends_with("bad.conf"), "{e}");
    assert!(
        e.to_string()
            .ends_with("bad.conf:3: CPUs: invalid number 'abc'"),
        "{e}"
    );
}

#[test]
fn load_missing_include_and_missing_file() {
    let d = TempDir::new("missing");
    let main = d.write("drover.conf", "SlurmctldHost=c\nInclude nope.conf\n");
    let e = slurmconf::load(&main).unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (2, "Include"));
    let e = slurmconf::load(&d.0.join("absent.conf")).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(e.to_string().contains("absent.conf:0: "), "{e}");
    let e = gresconf::load(&d.0.join("gres.conf")).unwrap_err();
    assert_eq!(e.line, 0);
    let e = cgroupconf::load(&d.0.join("cgroup.conf")).unwrap_err();
    assert_eq!(e.line, 0);
}

#[test]
fn include_loop_is_an_error() {
    let d = TempDir::new("loop");
    let main = d.write("drover.conf", "Include drover.conf\n");
    let e = slurmconf::load(&main).unwrap_err();
    assert_eq!(e.key, "Include");
}

#[test]
fn load_gres_and_cgroup() {
    let d = TempDir::new("gres");
    d.write(
        "gres.d/gpu.conf",
        "NodeName=g1 Name=gpu File=/dev/nvidia[0-1]\n",
    );
    let g = d.write("gres.conf", "AutoDetect=off\nInclude gres.d/*\n");
    let (gc, w) = gresconf::load(&g).expect("gres");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(gc.for_node("g1").len(), 1);
    assert_eq!(gc.for_node("g1")[0].count, Some(2));
    let cg = d.write("cgroup.conf", "ConstrainCores=yes\nConstrainRAMSpace=yes\n");
    let (cc, w) = cgroupconf::load(&cg).expect("cgroup");
    assert!(w.is_empty());
    assert!(cc.constrain_cores && cc.constrain_ram_space);
}
