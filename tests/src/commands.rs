//! Driving a test cluster through the real commands (`sbatch`, `squeue`,
//! `scontrol`, ... on any host) and waiting for jobs, states and files.

use super::*;

impl Cluster {
    /// A command as a user would type it (`sbatch`, `squeue`, ...); on
    /// the controller host in multi-host mode.
    pub fn cmd(&self, prog: &str) -> Command {
        self.cmd_on("ctl", prog)
    }

    /// A command typed on host `host` (multi-host mode; the one host
    /// otherwise).
    pub fn cmd_on(&self, host: &str, prog: &str) -> Command {
        let mut c = match &self.net {
            Some(net) => net.command(host, self.bin.join(prog)),
            None => Command::new(self.bin.join(prog)),
        };
        c.env("DROVER_CONF", &self.conf)
            .env_remove("SLURM_CONF")
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display()),
            )
            .current_dir(self.path());
        c
    }

    pub fn run(&self, prog: &str, args: &[&str]) -> Output {
        self.cmd(prog).args(args).output().expect("run command")
    }

    /// Run a command on host `host` (multi-host mode).
    pub fn run_on(&self, host: &str, prog: &str, args: &[&str]) -> Output {
        self.cmd_on(host, prog)
            .args(args)
            .output()
            .expect("run command")
    }

    /// Run as another user (uid = gid = `uid`).
    pub fn run_as(&self, uid: u32, prog: &str, args: &[&str]) -> Output {
        let mut c = self.cmd(prog);
        c.args(args).uid(uid).gid(uid);
        c.output().expect("run command as user")
    }

    /// Run and require success; stdout as text.
    pub fn ok(&self, prog: &str, args: &[&str]) -> String {
        let out = self.run(prog, args);
        assert!(
            out.status.success(),
            "{prog} {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Write a script file in the cluster dir and return its path.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.path().join(name);
        fs::write(&p, body).expect("write script");
        p
    }

    /// `sbatch --parsable ARGS SCRIPT` -> job id.
    pub fn sbatch(&self, args: &[&str], script: &str) -> u32 {
        self.sbatch_env(args, script, &[])
    }

    /// Same, with extra variables in the submitting environment.
    pub fn sbatch_env(&self, args: &[&str], script: &str, env: &[(&str, &str)]) -> u32 {
        let p = self.script(&format!("job-{}.sh", unique()), script);
        let mut all: Vec<&str> = vec!["--parsable"];
        all.extend_from_slice(args);
        let ps = p.display().to_string();
        all.push(&ps);
        let mut cmd = self.cmd("sbatch");
        cmd.args(&all);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().expect("run sbatch");
        assert!(
            o.status.success(),
            "sbatch {all:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.trim()
            .split(';')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("sbatch printed {out:?}"))
    }

    /// A job field from `scontrol show job -o ID` (`JobState`, `ExitCode`, ...).
    pub fn job_field(&self, id: &str, key: &str) -> Option<String> {
        let out = self.run("scontrol", &["show", "job", "-o", id]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        field(&text, key)
    }

    /// Wait until the job's state is one of `states` (Slurm long names).
    pub fn wait_state(&self, id: &str, states: &[&str], timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut last = String::new();
        loop {
            if let Some(s) = self.job_field(id, "JobState") {
                if states.contains(&s.as_str()) {
                    return s;
                }
                last = s;
            }
            if Instant::now() > deadline {
                panic!(
                    "job {id} did not reach {states:?} (last {last}):\n{}\n--- ctld\n{}\n--- agent\n{}",
                    self.ok("scontrol", &["show", "job", id]),
                    tail(&self.log_text("droverctld")),
                    tail(&self.log_text("droverd"))
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn wait_done(&self, id: u32) -> String {
        self.wait_state(
            &id.to_string(),
            &[
                "COMPLETED",
                "FAILED",
                "CANCELLED",
                "TIMEOUT",
                "NODE_FAIL",
                "OUT_OF_MEMORY",
            ],
            Duration::from_secs(60),
        )
    }

    /// Wait for the end and require a final state, with diagnostics if not.
    pub fn expect_end(&self, id: u32, want: &str) {
        let got = self.wait_done(id);
        if got != want {
            panic!(
                "job {id} ended {got}, expected {want}:\n{}\n--- ctld\n{}\n--- agent\n{}",
                self.ok("scontrol", &["show", "job", &id.to_string()]),
                tail(&self.log_text("droverctld")),
                tail(&self.log_text("droverd"))
            );
        }
    }

    /// Wait for a file to exist with content matching `pred`.
    pub fn wait_file(&self, path: &Path, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(t) = fs::read_to_string(path) {
                if pred(&t) {
                    return t;
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "{} never matched; content: {:?}",
                    path.display(),
                    fs::read_to_string(path).ok()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
