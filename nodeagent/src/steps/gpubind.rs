//! Which of the step's GPUs each task gets (`--gpus-per-task`,
//! `--gpu-bind`), as Slurm's GPU plugin does (pure). Drover has no GPU
//! topology, so `closest` splits the step's GPUs evenly over the tasks.

use drover_proto::bindopt::{mask_text, GpuBind, GpuMode};

/// The step's GPUs on this node and how a task is placed among them.
#[derive(Debug, Clone, Copy)]
pub struct Gpus<'a> {
    /// The step's GPUs (node indices, ascending).
    pub step: &'a [u32],
    /// The job's GPUs here (node indices, ascending): `map_gpu`/`mask_gpu`
    /// ids count among them under ConstrainDevices.
    pub job: &'a [u32],
    /// ConstrainDevices is on.
    pub constrained: bool,
    pub gpus_per_task: u32,
    /// Tasks of the step on this node.
    pub ntasks: u32,
}

/// The binding in effect: the option, else `per_task:N` with
/// `--gpus-per-task`, else none.
fn mode(opt: &GpuBind, g: &Gpus<'_>) -> Option<GpuMode> {
    match &opt.mode {
        Some(GpuMode::None) => None,
        Some(m) => Some(m.clone()),
        None if g.gpus_per_task > 0 => Some(GpuMode::PerTask(g.gpus_per_task)),
        None => None,
    }
}

/// An id of `map_gpu`/`mask_gpu` to a node index.
fn node_index(id: u32, g: &Gpus<'_>) -> Option<u32> {
    if g.constrained {
        g.job.get(id as usize).copied()
    } else {
        Some(id)
    }
}

fn chunk(step: &[u32], local: u32, per: u32) -> Vec<u32> {
    let per = per.max(1) as usize;
    (0..per)
        .map(|k| step[(local as usize * per + k) % step.len()])
        .collect()
}

/// The GPUs (node indices) task `local` may use; None: all of the step's.
pub fn task_gpus(opt: &GpuBind, g: &Gpus<'_>, local: u32) -> Option<Vec<u32>> {
    if g.step.is_empty() {
        return None;
    }
    let picked: Vec<u32> = match mode(opt, g)? {
        GpuMode::None => return None,
        GpuMode::PerTask(n) => chunk(g.step, local, n),
        GpuMode::Closest => {
            let per = if g.gpus_per_task > 0 {
                g.gpus_per_task
            } else {
                (g.step.len() as u32 / g.ntasks.max(1)).max(1)
            };
            chunk(g.step, local, per)
        }
        GpuMode::Single(n) => vec![g.step[(local / n.max(1)) as usize % g.step.len()]],
        GpuMode::Map(list) if !list.is_empty() => node_index(list[local as usize % list.len()], g)
            .into_iter()
            .collect(),
        GpuMode::Mask(list) if !list.is_empty() => list[local as usize % list.len()]
            .iter()
            .filter_map(|i| node_index(*i, g))
            .collect(),
        GpuMode::Map(_) | GpuMode::Mask(_) => return None,
    };
    let mut mine: Vec<u32> = picked.into_iter().filter(|i| g.step.contains(i)).collect();
    mine.sort_unstable();
    mine.dedup();
    // A binding naming none of the step's GPUs leaves the task all of them.
    (!mine.is_empty()).then_some(mine)
}

/// Slurm's `gpu-bind: usable_gres=...` line for a task (`verbose`).
pub fn verbose_line(mine: &[u32], step: &[u32], local: u32, visible: &str) -> String {
    let ids: Vec<String> = mine.iter().map(u32::to_string).collect();
    format!(
        "gpu-bind: usable_gres=0x{}; bit_alloc=0x{}; local_inx={local}; global_list={}; local_list={visible}\n",
        mask_text(mine),
        mask_text(step),
        ids.join(","),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::bindopt::parse_gpu_bind;

    fn g<'a>(step: &'a [u32], job: &'a [u32], per_task: u32, ntasks: u32) -> Gpus<'a> {
        Gpus {
            step,
            job,
            constrained: false,
            gpus_per_task: per_task,
            ntasks,
        }
    }

    fn bind(s: &str) -> GpuBind {
        parse_gpu_bind(s).unwrap()
    }

    #[test]
    fn gpus_per_task_splits_the_step() {
        let none = GpuBind::default();
        let x = g(&[2, 3], &[2, 3], 1, 2);
        assert_eq!(task_gpus(&none, &x, 0), Some(vec![2]));
        assert_eq!(task_gpus(&none, &x, 1), Some(vec![3]));
        let x = g(&[0, 1, 2, 3], &[0, 1, 2, 3], 2, 2);
        assert_eq!(task_gpus(&none, &x, 1), Some(vec![2, 3]));
        // No --gpus-per-task and no --gpu-bind: every task sees the step's.
        let x = g(&[0, 1], &[0, 1], 0, 2);
        assert_eq!(task_gpus(&none, &x, 1), None);
        // --gpu-bind=none turns per-task binding off.
        let x = g(&[0, 1], &[0, 1], 1, 2);
        assert_eq!(task_gpus(&bind("none"), &x, 1), None);
    }

    #[test]
    fn closest_single_map_mask() {
        let x = g(&[0, 1, 2, 3], &[0, 1, 2, 3], 0, 2);
        assert_eq!(task_gpus(&bind("closest"), &x, 1), Some(vec![2, 3]));
        assert_eq!(task_gpus(&bind("single:2"), &x, 0), Some(vec![0]));
        assert_eq!(task_gpus(&bind("single:2"), &x, 1), Some(vec![0]));
        assert_eq!(task_gpus(&bind("single:2"), &x, 2), Some(vec![1]));
        assert_eq!(task_gpus(&bind("map_gpu:3,1"), &x, 0), Some(vec![3]));
        assert_eq!(task_gpus(&bind("map_gpu:3,1"), &x, 1), Some(vec![1]));
        assert_eq!(task_gpus(&bind("map_gpu:3,1"), &x, 2), Some(vec![3]));
        assert_eq!(
            task_gpus(&bind("mask_gpu:0x5,0x2"), &x, 0),
            Some(vec![0, 2])
        );
        // A GPU outside the step: the task keeps all of the step's.
        let y = g(&[0, 1], &[0, 1], 0, 2);
        assert_eq!(task_gpus(&bind("map_gpu:7"), &y, 0), None);
    }

    #[test]
    fn constrained_ids_count_among_the_jobs_gpus() {
        let mut x = g(&[2, 5], &[2, 5], 0, 2);
        x.constrained = true;
        assert_eq!(task_gpus(&bind("map_gpu:1,0"), &x, 0), Some(vec![5]));
        assert_eq!(task_gpus(&bind("map_gpu:1,0"), &x, 1), Some(vec![2]));
        x.constrained = false;
        assert_eq!(task_gpus(&bind("map_gpu:5"), &x, 0), Some(vec![5]));
    }

    #[test]
    fn verbose_words() {
        assert_eq!(
            verbose_line(&[1], &[0, 1], 1, "0"),
            "gpu-bind: usable_gres=0x2; bit_alloc=0x3; local_inx=1; global_list=1; local_list=0\n"
        );
    }
}
