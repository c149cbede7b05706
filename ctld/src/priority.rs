//! `priority/multifactor`: a job's priority as the weighted sum of its
//! age, fair-share, job size, partition, QOS and TRES factors, minus its
//! nice value (Slurm's formula). Pure: the controller gathers the facts.

use drover_conf::slurmconf::Config;

use crate::assoc::Tres;

/// The `Priority*` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PrioConf {
    pub multifactor: bool,
    pub w_age: u32,
    pub w_assoc: u32,
    pub w_fairshare: u32,
    pub w_jobsize: u32,
    pub w_partition: u32,
    pub w_qos: u32,
    /// PriorityWeightTRES, keys lower-cased (`cpu`, `mem`, `gres/gpu`).
    pub w_tres: Vec<(String, f64)>,
    /// PriorityMaxAge, seconds (default 7 days).
    pub max_age: i64,
    pub favor_small: bool,
    /// PriorityDecayHalfLife, seconds (default 7 days; 0 = no decay).
    pub half_life: i64,
    /// PriorityCalcPeriod, seconds (default 5 minutes): how often running
    /// jobs' usage is charged and every pending job's priority recomputed
    /// (0: at every full pass; UNLIMITED: never, new jobs aside).
    pub calc_period: i64,
    /// Fair Tree (the default) or classic (`PriorityFlags=NO_FAIR_TREE`).
    pub fair_tree: bool,
    pub weights_text: String,
}

/// Parse `a=1,b=2.5` with lower-cased keys; bad entries are skipped.
pub fn parse_weights(s: &str) -> Vec<(String, f64)> {
    s.split(',')
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            let v = v.trim().trim_end_matches(['G', 'g', 'M', 'm']);
            Some((k.trim().to_ascii_lowercase(), v.parse::<f64>().ok()?))
        })
        .collect()
}

impl PrioConf {
    pub fn from_config(cfg: &Config) -> PrioConf {
        let u = |k: &str| {
            cfg.priority_param(k)
                .and_then(|v| v.trim().parse::<u32>().ok())
                .unwrap_or(0)
        };
        let dur = |k: &str, def: i64| {
            cfg.priority_param(k)
                .and_then(|v| drover_conf::units::parse_duration(v).ok())
                .map_or(def, |v| v.map_or(0, |s| s as i64))
        };
        let flags = cfg.priority_param("PriorityFlags").unwrap_or("");
        let weights_text = cfg
            .priority_param("PriorityWeightTRES")
            .unwrap_or("")
            .to_string();
        PrioConf {
            multifactor: cfg.priority_type == "priority/multifactor",
            w_age: u("PriorityWeightAge"),
            w_assoc: u("PriorityWeightAssoc"),
            w_fairshare: u("PriorityWeightFairshare"),
            w_jobsize: u("PriorityWeightJobSize"),
            w_partition: u("PriorityWeightPartition"),
            w_qos: u("PriorityWeightQOS"),
            w_tres: parse_weights(&weights_text),
            max_age: dur("PriorityMaxAge", 7 * 86400).max(1),
            favor_small: cfg
                .priority_param("PriorityFavorSmall")
                .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "yes" | "true" | "1")),
            half_life: dur("PriorityDecayHalfLife", 7 * 86400),
            calc_period: cfg
                .priority_param("PriorityCalcPeriod")
                .and_then(|v| drover_conf::units::parse_duration(v).ok())
                .map_or(5 * 60, |v| v.map_or(i64::MAX, |s| s as i64)),
            fair_tree: !flags.to_ascii_uppercase().contains("NO_FAIR_TREE"),
            weights_text,
        }
    }
}

/// What the factors of one job are computed from (the TRES maps borrowed:
/// shared by every job of a partition or with the same request).
#[derive(Debug, Clone)]
pub struct JobFacts<'a> {
    /// When the job became eligible (0: not yet).
    pub eligible: i64,
    pub cpus: u64,
    pub nodes: u64,
    pub tres: &'a Tres,
    pub part_job_factor: u32,
    pub max_part_job_factor: u32,
    pub qos_priority: u32,
    pub max_qos_priority: u32,
    /// Fair-share factor, 0..1.
    pub fairshare: f64,
    pub nice: i32,
    pub total_cpus: u64,
    pub total_nodes: u64,
    /// TRES totals of the job's partition (for the TRES factors).
    pub part_tres: &'a Tres,
}

/// Weighted factors (what sprio shows).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Factors {
    pub age: f64,
    pub assoc: f64,
    pub fairshare: f64,
    pub jobsize: f64,
    pub partition: f64,
    pub qos: f64,
    pub tres: Vec<(String, f64)>,
    pub nice: i32,
}

impl Factors {
    /// Slurm's sum, less nice, at least 1.
    pub fn priority(&self) -> u32 {
        let sum = self.age
            + self.assoc
            + self.fairshare
            + self.jobsize
            + self.partition
            + self.qos
            + self.tres.iter().map(|(_, v)| v).sum::<f64>()
            - f64::from(self.nice);
        sum.round().clamp(1.0, f64::from(u32::MAX - 1)) as u32
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b <= 0.0 {
        0.0
    } else {
        (a / b).clamp(0.0, 1.0)
    }
}

pub fn factors(c: &PrioConf, f: &JobFacts, now: i64) -> Factors {
    let age = if f.eligible > 0 && now > f.eligible {
        ratio((now - f.eligible) as f64, c.max_age as f64)
    } else {
        0.0
    };
    let tn = f.total_nodes.max(1) as f64;
    let tc = f.total_cpus.max(1) as f64;
    let nodes = f.nodes.max(1) as f64;
    let js = if c.favor_small {
        let mut v = (tn - nodes).max(0.0) / tn;
        if f.cpus > 0 {
            v = (v + (tc - f.cpus as f64).max(0.0) / tc) / 2.0;
        }
        v
    } else {
        let mut v = (nodes / tn).min(1.0);
        if f.cpus > 0 {
            v = (v + (f.cpus as f64 / tc).min(1.0)) / 2.0;
        }
        v
    };
    let tres = c
        .w_tres
        .iter()
        .map(|(k, w)| {
            let want = f.tres.get(k).copied().unwrap_or(0) as f64;
            let have = f.part_tres.get(k).copied().unwrap_or(0) as f64;
            (k.clone(), w * ratio(want, have))
        })
        .collect();
    Factors {
        age: f64::from(c.w_age) * age,
        assoc: 0.0,
        fairshare: f64::from(c.w_fairshare) * f.fairshare.clamp(0.0, 1.0),
        jobsize: f64::from(c.w_jobsize) * js,
        partition: f64::from(c.w_partition)
            * ratio(
                f64::from(f.part_job_factor),
                f64::from(f.max_part_job_factor),
            ),
        qos: f64::from(c.w_qos) * ratio(f64::from(f.qos_priority), f64::from(f.max_qos_priority)),
        tres,
        nice: f.nice,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> PrioConf {
        PrioConf {
            multifactor: true,
            w_age: 1000,
            w_assoc: 0,
            w_fairshare: 10000,
            w_jobsize: 100,
            w_partition: 2000,
            w_qos: 5000,
            w_tres: parse_weights("CPU=300,GRES/gpu=600"),
            max_age: 1000,
            favor_small: false,
            half_life: 0,
            calc_period: 0,
            fair_tree: true,
            weights_text: String::new(),
        }
    }

    fn facts() -> JobFacts<'static> {
        let mut t = Tres::new();
        t.insert("cpu".into(), 4);
        t.insert("gres/gpu".into(), 2);
        let mut pt = Tres::new();
        pt.insert("cpu".into(), 16);
        pt.insert("gres/gpu".into(), 8);
        JobFacts {
            eligible: 100,
            cpus: 4,
            nodes: 1,
            tres: Box::leak(Box::new(t)),
            part_job_factor: 1,
            max_part_job_factor: 2,
            qos_priority: 10,
            max_qos_priority: 100,
            fairshare: 0.5,
            nice: 0,
            total_cpus: 16,
            total_nodes: 4,
            part_tres: Box::leak(Box::new(pt)),
        }
    }

    #[test]
    fn weighted_sum() {
        let f = factors(&conf(), &facts(), 600);
        assert_eq!(f.age, 500.0);
        assert_eq!(f.fairshare, 5000.0);
        assert_eq!(f.partition, 1000.0);
        assert_eq!(f.qos, 500.0);
        // (1/4 + 4/16) / 2 = 0.25
        assert_eq!(f.jobsize, 25.0);
        assert_eq!(
            f.tres,
            vec![("cpu".into(), 75.0), ("gres/gpu".into(), 150.0)]
        );
        assert_eq!(f.priority(), 500 + 5000 + 1000 + 500 + 25 + 75 + 150);
        // Age saturates at PriorityMaxAge; nice lowers.
        let mut j = facts();
        j.nice = 100;
        let f2 = factors(&conf(), &j, 100_000);
        assert_eq!(f2.age, 1000.0);
        assert_eq!(f2.priority(), f.priority() + 500 - 100);
    }

    #[test]
    fn favor_small_and_floor() {
        let mut c = conf();
        c.favor_small = true;
        let f = factors(&c, &facts(), 100);
        // ((4-1)/4 + (16-4)/16) / 2 = 0.75
        assert_eq!(f.jobsize, 75.0);
        let mut j = facts();
        j.nice = 1_000_000;
        assert_eq!(factors(&c, &j, 100).priority(), 1);
    }
}
