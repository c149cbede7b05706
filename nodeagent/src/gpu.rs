//! NVIDIA GPUs through NVML (`nvml-wrapper`, which dlopens
//! `libnvidia-ml.so.1` at run time: the agent runs on nodes without a
//! driver, and then says so once in its log).
//!
//! Two uses: `AutoDetect=nvml` in gres.conf fills the node's GPU inventory
//! (device files, types) from the driver; and the usage sampler records
//! each job's GPU utilization and memory peak for the job record and
//! `sstat`. NVML index (PCI bus order), `/dev/nvidiaN` minor number and
//! CUDA ordinal can all differ: the inventory is kept in PCI bus order (the
//! order CUDA uses with `CUDA_DEVICE_ORDER=PCI_BUS_ID`, which jobs get),
//! device files are named by minor number, and the sampler finds devices by
//! minor number.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use drover_proto::GresInventory;
use nvml_wrapper::Nvml;

/// One GPU as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    pub nvml_index: u32,
    pub minor: u32,
    pub name: String,
    pub bus_id: String,
}

/// Slurm's GPU type from an NVML name: lower case, spaces to `_`
/// (`NVIDIA A100-SXM4-80GB` → `nvidia_a100-sxm4-80gb`).
pub fn slurm_type(name: &str) -> String {
    name.trim()
        .to_ascii_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join("_")
}

/// Does a configured type (`a100`) name a detected one? Slurm compares
/// case-insensitively and accepts a part of the detected name.
pub fn type_matches(configured: &str, detected: &str) -> bool {
    configured.is_empty() || detected.contains(&configured.to_ascii_lowercase())
}

/// Fill the node's `gpu` inventory entries from detected GPUs (pure):
/// each configured entry takes, in PCI bus order, the detected GPUs of its
/// type, up to its count. Returns the new inventory and warnings.
pub fn autodetect_inventory(
    configured: &[GresInventory],
    detected: &[Gpu],
    dev_dir: &str,
) -> (Vec<GresInventory>, Vec<String>) {
    let mut gpus: Vec<&Gpu> = detected.iter().collect();
    gpus.sort_by(|a, b| a.bus_id.cmp(&b.bus_id));
    let mut used = vec![false; gpus.len()];
    let mut warnings = Vec::new();
    let mut out = Vec::new();
    for inv in configured {
        if inv.name != "gpu" {
            out.push(inv.clone());
            continue;
        }
        let mut files = Vec::new();
        let mut minors = Vec::new();
        for (k, g) in gpus.iter().enumerate() {
            if files.len() as u64 >= inv.count {
                break;
            }
            if used[k] || !type_matches(&inv.r#type, &slurm_type(&g.name)) {
                continue;
            }
            used[k] = true;
            files.push(format!("{dev_dir}/nvidia{}", g.minor));
            minors.push(g.minor);
        }
        if (files.len() as u64) < inv.count {
            warnings.push(format!(
                "gres/gpu{}: configured count {} but NVML found {} matching GPU(s)",
                if inv.r#type.is_empty() {
                    String::new()
                } else {
                    format!(":{}", inv.r#type)
                },
                inv.count,
                files.len()
            ));
        }
        out.push(GresInventory {
            files,
            minors,
            autodetect: "nvml".into(),
            ..inv.clone()
        });
    }
    if let Some(extra) = used.iter().position(|u| !u) {
        warnings.push(format!(
            "NVML found GPU {} ({}) that no Gres= entry of the node uses",
            gpus[extra].bus_id, gpus[extra].name
        ));
    }
    (out, warnings)
}

static NVML: OnceLock<Option<Nvml>> = OnceLock::new();

/// NVML, initialised once; None (logged once) when there is no driver.
pub fn nvml() -> Option<&'static Nvml> {
    NVML.get_or_init(|| match Nvml::init() {
        Ok(n) => {
            tracing::info!("NVML initialised: GPU discovery and usage sampling available");
            Some(n)
        }
        Err(e) => {
            tracing::info!(
                "NVML not available ({e}): no GPU auto-detection or GPU usage figures on this node"
            );
            None
        }
    })
    .as_ref()
}

/// Every GPU NVML sees.
pub fn detect() -> Result<Vec<Gpu>, String> {
    let n = nvml().ok_or("NVML is not available (no NVIDIA driver?)")?;
    let count = n.device_count().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for i in 0..count {
        let d = n.device_by_index(i).map_err(|e| format!("GPU {i}: {e}"))?;
        out.push(Gpu {
            nvml_index: i,
            minor: d
                .minor_number()
                .map_err(|e| format!("GPU {i}: minor number: {e}"))?,
            name: d.name().unwrap_or_default(),
            bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
        });
    }
    Ok(out)
}

/// Per-job GPU usage gathered by sampling.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuUsage {
    pub util_sum: u64,
    pub samples: u64,
    pub mem_max_mb: u64,
}

impl GpuUsage {
    pub fn mean_util(&self) -> u32 {
        self.util_sum.checked_div(self.samples).unwrap_or(0) as u32
    }
}

/// Jobs with GPUs on this agent: job id -> (device minors, usage so far).
#[derive(Default)]
pub struct Sampler {
    jobs: Mutex<HashMap<u32, (Vec<u32>, GpuUsage)>>,
}

impl Sampler {
    pub fn track(&self, job_id: u32, minors: Vec<u32>) {
        if minors.is_empty() {
            return;
        }
        self.lock().insert(job_id, (minors, GpuUsage::default()));
    }

    /// Stop tracking; what was gathered.
    pub fn finish(&self, job_id: u32) -> GpuUsage {
        self.lock()
            .remove(&job_id)
            .map(|(_, u)| u)
            .unwrap_or_default()
    }

    pub fn current(&self, job_id: u32) -> GpuUsage {
        self.lock()
            .get(&job_id)
            .map(|(_, u)| u.clone())
            .unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, (Vec<u32>, GpuUsage)>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One sample of every tracked job's GPUs (blocking NVML calls).
    pub fn sample(&self) {
        let Some(n) = nvml() else { return };
        let Ok(count) = n.device_count() else { return };
        let mut by_minor: HashMap<u32, (u32, u64)> = HashMap::new();
        for i in 0..count {
            let Ok(d) = n.device_by_index(i) else {
                continue;
            };
            let Ok(minor) = d.minor_number() else {
                continue;
            };
            let util = d.utilization_rates().map(|u| u.gpu).unwrap_or(0);
            let mem = d.memory_info().map(|m| m.used / (1024 * 1024)).unwrap_or(0);
            by_minor.insert(minor, (util, mem));
        }
        for (minors, usage) in self.lock().values_mut() {
            let seen: Vec<(u32, u64)> = minors
                .iter()
                .filter_map(|m| by_minor.get(m).copied())
                .collect();
            if seen.is_empty() {
                continue;
            }
            usage.util_sum +=
                seen.iter().map(|(u, _)| u64::from(*u)).sum::<u64>() / seen.len() as u64;
            usage.samples += 1;
            usage.mem_max_mb = usage.mem_max_mb.max(seen.iter().map(|(_, m)| *m).sum());
        }
    }
}

/// Minor numbers of the GPUs a launch gives this node's job (through the
/// node inventory's device files).
pub fn job_minors(inventory: &[GresInventory], req: &drover_proto::LaunchRequest) -> Vec<u32> {
    let job_alloc = crate::allocation::of(req);
    let Some(alloc) = crate::allocation::on_node(&job_alloc, &req.node) else {
        return Vec::new();
    };
    let files: Vec<&String> = inventory
        .iter()
        .filter(|i| i.name == "gpu")
        .flat_map(|i| i.files.iter())
        .collect();
    alloc
        .gres
        .iter()
        .filter(|g| g.name == "gpu")
        .flat_map(|g| g.indices.iter())
        .filter_map(|&i| files.get(i as usize))
        .filter_map(|f| crate::settings::device_minor(f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(minor: u32, name: &str, bus: &str) -> Gpu {
        Gpu {
            nvml_index: 0,
            minor,
            name: name.into(),
            bus_id: bus.into(),
        }
    }

    fn inv(ty: &str, count: u64) -> GresInventory {
        GresInventory {
            name: "gpu".into(),
            r#type: ty.into(),
            count,
            ..Default::default()
        }
    }

    #[test]
    fn types_and_inventory() {
        assert_eq!(slurm_type("NVIDIA A100-SXM4-80GB"), "nvidia_a100-sxm4-80gb");
        assert!(type_matches("A100", "nvidia_a100-sxm4-80gb"));
        assert!(!type_matches("h100", "nvidia_a100-sxm4-80gb"));
        let detected = vec![
            gpu(3, "NVIDIA H100 80GB HBM3", "00000000:C1:00.0"),
            gpu(0, "NVIDIA A100-SXM4-80GB", "00000000:41:00.0"),
            gpu(1, "NVIDIA A100-SXM4-80GB", "00000000:01:00.0"),
        ];
        let (out, warn) =
            autodetect_inventory(&[inv("a100", 2), inv("h100", 1)], &detected, "/dev");
        assert!(warn.is_empty(), "{warn:?}");
        // PCI bus order within a type; files by minor number.
        assert_eq!(out[0].files, ["/dev/nvidia1", "/dev/nvidia0"]);
        assert_eq!(out[1].files, ["/dev/nvidia3"]);
        let (_, warn) = autodetect_inventory(&[inv("", 4)], &detected, "/dev");
        assert_eq!(warn.len(), 1, "{warn:?}");
        let (_, warn) = autodetect_inventory(&[inv("a100", 1)], &detected, "/dev");
        assert!(
            warn.iter().any(|w| w.contains("no Gres= entry")),
            "{warn:?}"
        );
    }

    #[test]
    fn usage_means() {
        let s = Sampler::default();
        s.track(5, vec![0]);
        s.track(6, vec![]);
        assert_eq!(s.current(5), GpuUsage::default());
        let u = GpuUsage {
            util_sum: 150,
            samples: 2,
            mem_max_mb: 10,
        };
        assert_eq!(u.mean_util(), 75);
        assert_eq!(GpuUsage::default().mean_util(), 0);
        assert_eq!(s.finish(5), GpuUsage::default());
        assert_eq!(s.finish(6), GpuUsage::default());
    }
}
