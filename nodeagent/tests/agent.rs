//! The whole agent (`droverd -D`) against a fake controller: registration,
//! launch, JobEnded, signals, authentication, kill_jobs, restart with a
//! running job.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_proto::auth::{now_secs, ClusterKey};
use drover_proto::client::Credential;
use drover_proto::controller_server::{Controller, ControllerServer};
use drover_proto::*;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

#[derive(Debug)]
enum Event {
    Register(RegisterRequest),
    JobEnded(JobEndedRequest),
}

struct FakeCtl {
    events: mpsc::UnboundedSender<Event>,
    /// kill_jobs for the next heartbeat.
    kill_next_heartbeat: Mutex<Vec<u32>>,
    /// Fail this many JobEnded calls with Unavailable first.
    fail_job_ended: AtomicU32,
}

fn unimpl<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("fake controller"))
}

#[tonic::async_trait]
impl Controller for FakeCtl {
    async fn submit(&self, _: Request<SubmitRequest>) -> Result<Response<SubmitResponse>, Status> {
        unimpl()
    }
    async fn get_jobs(
        &self,
        _: Request<GetJobsRequest>,
    ) -> Result<Response<GetJobsResponse>, Status> {
        unimpl()
    }
    async fn cancel(&self, _: Request<CancelRequest>) -> Result<Response<CancelResponse>, Status> {
        unimpl()
    }
    async fn update_job(
        &self,
        _: Request<UpdateJobRequest>,
    ) -> Result<Response<UpdateJobResponse>, Status> {
        unimpl()
    }
    async fn wait_job(
        &self,
        _: Request<WaitJobRequest>,
    ) -> Result<Response<WaitJobResponse>, Status> {
        unimpl()
    }
    async fn get_nodes(
        &self,
        _: Request<GetNodesRequest>,
    ) -> Result<Response<GetNodesResponse>, Status> {
        unimpl()
    }
    async fn update_node(
        &self,
        _: Request<UpdateNodeRequest>,
    ) -> Result<Response<UpdateNodeResponse>, Status> {
        unimpl()
    }
    async fn get_partitions(
        &self,
        _: Request<GetPartitionsRequest>,
    ) -> Result<Response<GetPartitionsResponse>, Status> {
        unimpl()
    }
    async fn ping(&self, _: Request<PingRequest>) -> Result<Response<PingResponse>, Status> {
        unimpl()
    }
    async fn takeover(
        &self,
        _: Request<TakeoverRequest>,
    ) -> Result<Response<TakeoverResponse>, Status> {
        unimpl()
    }
    async fn relinquish(
        &self,
        _: Request<RelinquishRequest>,
    ) -> Result<Response<RelinquishResponse>, Status> {
        unimpl()
    }
    async fn edit_partition(
        &self,
        _: Request<PartitionEdit>,
    ) -> Result<Response<PartitionEditResponse>, Status> {
        unimpl()
    }
    async fn get_config(
        &self,
        _: Request<ConfigRequest>,
    ) -> Result<Response<ConfigResponse>, Status> {
        unimpl()
    }
    async fn reconfigure(
        &self,
        _: Request<ReconfigureRequest>,
    ) -> Result<Response<ReconfigureResponse>, Status> {
        unimpl()
    }
    async fn get_config_files(
        &self,
        _: Request<drover_proto::ConfigFilesRequest>,
    ) -> Result<Response<drover_proto::ConfigFilesResponse>, Status> {
        unimpl()
    }
    async fn shutdown(
        &self,
        _: Request<ShutdownRequest>,
    ) -> Result<Response<ShutdownResponse>, Status> {
        unimpl()
    }
    async fn register(
        &self,
        req: Request<RegisterRequest>,
    ) -> Result<Response<RegisterResponse>, Status> {
        let _ = self.events.send(Event::Register(req.into_inner()));
        Ok(Response::new(RegisterResponse {
            kill_jobs: vec![],
            heartbeat_interval: 1,
            errors: vec![],
        }))
    }
    async fn heartbeat(
        &self,
        _: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        let kill = std::mem::take(&mut *self.kill_next_heartbeat.lock().unwrap());
        Ok(Response::new(HeartbeatResponse {
            kill_jobs: kill,
            reregister: false,
        }))
    }
    async fn job_ended(
        &self,
        req: Request<JobEndedRequest>,
    ) -> Result<Response<JobEndedResponse>, Status> {
        let left = self.fail_job_ended.load(Ordering::SeqCst);
        if left > 0 {
            self.fail_job_ended.store(left - 1, Ordering::SeqCst);
            return Err(Status::unavailable("controller busy"));
        }
        let _ = self.events.send(Event::JobEnded(req.into_inner()));
        Ok(Response::new(JobEndedResponse {}))
    }
    async fn job_stats(
        &self,
        _: Request<JobStatsRequest>,
    ) -> Result<Response<JobStatsResponse>, Status> {
        Err(Status::unimplemented("the fake controller has no sstat"))
    }
    async fn create_step(
        &self,
        _: Request<drover_proto::StepRequest>,
    ) -> Result<Response<drover_proto::CreateStepResponse>, Status> {
        Err(Status::unimplemented("the fake controller has no steps"))
    }
    async fn complete_allocation(
        &self,
        _: Request<drover_proto::CompleteAllocationRequest>,
    ) -> Result<Response<drover_proto::CompleteAllocationResponse>, Status> {
        Err(Status::unimplemented(
            "the fake controller has no allocations",
        ))
    }
    async fn allocation_alive(
        &self,
        _: Request<drover_proto::AllocationAliveRequest>,
    ) -> Result<Response<drover_proto::AllocationAliveResponse>, Status> {
        Err(Status::unimplemented(
            "the fake controller has no allocations",
        ))
    }
    async fn get_job_script(
        &self,
        _: Request<drover_proto::JobScriptRequest>,
    ) -> Result<Response<drover_proto::JobScriptResponse>, Status> {
        Err(Status::unimplemented(
            "the fake controller keeps no scripts",
        ))
    }
    async fn get_diag(
        &self,
        _: Request<drover_proto::DiagRequest>,
    ) -> Result<Response<drover_proto::DiagResponse>, Status> {
        Err(Status::unimplemented(
            "the fake controller keeps no statistics",
        ))
    }
    async fn mint_token(
        &self,
        _: Request<drover_proto::MintTokenRequest>,
    ) -> Result<Response<drover_proto::MintTokenResponse>, Status> {
        Err(Status::unimplemented("the fake controller mints no tokens"))
    }
    async fn get_metrics(
        &self,
        _: Request<drover_proto::MetricsRequest>,
    ) -> Result<Response<drover_proto::MetricsResponse>, Status> {
        Err(Status::unimplemented(
            "the fake controller keeps no metrics",
        ))
    }
    async fn get_jobs_since(
        &self,
        _: Request<drover_proto::GetJobsSinceRequest>,
    ) -> Result<Response<drover_proto::GetJobsSinceResponse>, Status> {
        unimpl()
    }
    async fn step_ended(
        &self,
        _: Request<drover_proto::StepEndedRequest>,
    ) -> Result<Response<drover_proto::StepEndedResponse>, Status> {
        Err(Status::unimplemented("the fake controller has no steps"))
    }
}

struct Cluster {
    tmp: tempfile::TempDir,
    conf: PathBuf,
    key: ClusterKey,
    agent_port: u16,
    ctl: Arc<FakeCtl>,
    events: mpsc::UnboundedReceiver<Event>,
    agent: Option<Child>,
}

impl Cluster {
    async fn new() -> Cluster {
        // DROVER_TEST_TMPDIR puts the cluster elsewhere (e.g. tmpfs) for comparisons.
        let tmp = match std::env::var_os("DROVER_TEST_TMPDIR") {
            Some(d) => tempfile::tempdir_in(d).unwrap(),
            None => tempfile::tempdir().unwrap(),
        };
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let key_path = tmp.path().join("drover.key");
        ClusterKey::generate(&key_path).unwrap();
        let key = ClusterKey::load(&key_path).unwrap();

        let (tx, rx) = mpsc::unbounded_channel();
        let ctl = Arc::new(FakeCtl {
            events: tx,
            kill_next_heartbeat: Mutex::new(vec![]),
            fail_job_ended: AtomicU32::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ctl_port = listener.local_addr().unwrap().port();
        let svc = ControllerServer::from_arc(ctl.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(svc)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );

        // Below the ephemeral range: no client connection holds it meanwhile.
        let agent_port = drover_proto::ports::pick().unwrap().1;
        let conf = tmp.path().join("drover.conf");
        let d = tmp.path().display();
        std::fs::write(
            &conf,
            format!(
                "ClusterName=testcl\n\
                 SlurmctldHost=localhost(127.0.0.1)\n\
                 SlurmctldPort={ctl_port}\n\
                 SlurmdPort={agent_port}\n\
                 SlurmdSpoolDir={d}/spool\n\
                 AuthKeyFile={d}/drover.key\n\
                 AuthInfo=socket={d}/auth.sock\n\
                 KillWait=5\n\
                 NodeName=node[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000\n\
                 PartitionName=debug Nodes=node[1-2] Default=YES\n"
            ),
        )
        .unwrap();
        std::fs::create_dir(tmp.path().join("work")).unwrap();
        std::fs::set_permissions(
            tmp.path().join("work"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        let mut c = Cluster {
            tmp,
            conf,
            key,
            agent_port,
            ctl,
            events: rx,
            agent: None,
        };
        c.start_agent();
        c
    }

    fn start_agent(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.tmp.path().join("droverd.log"))
            .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_droverd"))
            .args(["-D", "--emulate", "2", "-f"])
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.agent = Some(child);
    }

    fn stop_agent(&mut self) {
        if let Some(mut c) = self.agent.take() {
            let _ = drover_proto::sys::kill(c.id() as i32, libc::SIGTERM);
            let t0 = Instant::now();
            loop {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(10) {
                    let _ = c.kill();
                    let _ = c.wait();
                    panic!("agent did not stop on SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn work(&self) -> PathBuf {
        self.tmp.path().join("work")
    }

    fn spool(&self) -> PathBuf {
        self.tmp.path().join("spool")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.tmp.path().join("droverd.log")).unwrap_or_default()
    }

    fn client(&self) -> drover_proto::client::Agent {
        drover_proto::client::agent(
            &format!("127.0.0.1:{}", self.agent_port),
            Credential::daemon(self.key.clone(), "testctl".into()),
        )
        .unwrap()
    }

    async fn next_event(&mut self) -> Event {
        match tokio::time::timeout(Duration::from_secs(30), self.events.recv()).await {
            Ok(Some(e)) => e,
            _ => panic!("no event from the agent in time; log:\n{}", self.log()),
        }
    }

    async fn registered(&mut self) -> RegisterRequest {
        loop {
            if let Event::Register(r) = self.next_event().await {
                return r;
            }
        }
    }

    async fn job_ended(&mut self, job_id: u32) -> JobEndedRequest {
        loop {
            if let Event::JobEnded(r) = self.next_event().await {
                if r.job_id == job_id {
                    return r;
                }
            }
        }
    }

    fn launch_request(&self, job_id: u32, node: &str, script: &str) -> LaunchRequest {
        let (uid, gid) = (drover_proto::sys::getuid(), drover_proto::sys::getgid());
        LaunchRequest {
            job_id,
            spec: Some(JobSpec {
                name: format!("job{job_id}"),
                work_dir: self.work().to_string_lossy().into_owned(),
                script: script.as_bytes().to_vec(),
                environment: vec!["PATH=/usr/bin:/bin".into()],
                ..Default::default()
            }),
            info: Some(JobInfo {
                job_id,
                partition: "debug".into(),
                alloc: vec![NodeAlloc {
                    node: node.into(),
                    cpus: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            uid,
            gid,
            user_name: "tester".into(),
            node: node.into(),
            expires: now_secs() + 60,
            kill_wait: 5,
            cluster_name: "testcl".into(),
            ..Default::default()
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut c) = self.agent.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(t) => drover_nodeagent::proctree::parse_stat(&t).is_some_and(|p| p.state != 'Z'),
        Err(_) => false,
    }
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_end_to_end() {
    let mut c = Cluster::new().await;
    let reg = c.registered().await;
    let names: Vec<&str> = reg.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, vec!["node1", "node2"]);
    assert!(reg
        .nodes
        .iter()
        .all(|n| n.cpus == 2 && n.real_memory == 1000));
    assert!(reg.nodes.iter().all(|n| n.port == u32::from(c.agent_port)));
    assert!(reg.jobs.is_empty());
    assert!(c.log().contains("spool dir"), "{}", c.log());
    // The agent serves the auth socket since nothing else does.
    let auth = c.tmp.path().join("auth.sock");
    wait_until("auth socket", || auth.exists()).await;
    let bind = drover_proto::auth::Binding::new("/drover.NodeAgent/Ping", b"");
    let token = drover_proto::auth::request_token(&auth, &bind)
        .await
        .unwrap();
    let v = c
        .key
        .verify(&token, &bind, drover_proto::auth::now_millis(), 60_000)
        .unwrap();
    assert!(!v.identity.daemon);

    let mut agent = c.client();

    // A simple job: launch, JobEnded, job directory removed.
    let script = "#!/bin/sh\necho \"ran $SLURM_JOB_ID on $SLURMD_NODENAME\" >> runs.txt\nexit 4\n";
    let t0 = Instant::now();
    agent
        .launch(c.launch_request(1, "node2", script))
        .await
        .unwrap();
    let launch_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let ended = c.job_ended(1).await;
    eprintln!("launch RPC took {launch_ms:.1} ms");
    assert_eq!(ended.node, "node2");
    assert_eq!(ended.exit_code, 4);
    assert!(!ended.launch_failed);
    let spool = c.spool();
    wait_until("job1 dir removed", || !spool.join("job1").exists()).await;
    // A repeated launch does not run the job again.
    agent
        .launch(c.launch_request(1, "node2", script))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        std::fs::read_to_string(c.work().join("runs.txt")).unwrap(),
        "ran 1 on node2\n"
    );

    // A requeued job (same id, higher restart count) runs again.
    let mut r = c.launch_request(1, "node2", script);
    r.info.as_mut().unwrap().restart_count = 1;
    agent.launch(r).await.unwrap();
    let ended = c.job_ended(1).await;
    assert_eq!(ended.exit_code, 4);
    assert_eq!(ended.restart_count, 1);
    assert_eq!(
        std::fs::read_to_string(c.work().join("runs.txt")).unwrap(),
        "ran 1 on node2\nran 1 on node2\n"
    );

    // Authentication: a user credential may not launch; no credential is refused.
    let mut user_agent = drover_proto::client::agent(
        &format!("127.0.0.1:{}", c.agent_port),
        Credential::user(auth.clone()),
    )
    .unwrap();
    let e = user_agent
        .launch(c.launch_request(2, "node1", script))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied);
    assert_eq!(e.message(), "Access/permission denied");
    let other_key = ClusterKey::from_bytes(b"some other key of enough length");
    let mut bad = drover_proto::client::agent(
        &format!("127.0.0.1:{}", c.agent_port),
        Credential::daemon(other_key, "x".into()),
    )
    .unwrap();
    assert_eq!(
        bad.ping(AgentPingRequest {}).await.unwrap_err().code(),
        tonic::Code::Unauthenticated
    );

    // Expired credential, unknown node.
    let mut r = c.launch_request(2, "node1", script);
    r.expires = now_secs() - 10;
    assert!(agent.launch(r).await.is_err());
    assert!(agent
        .launch(c.launch_request(2, "node9", script))
        .await
        .is_err());

    // Launch failure reported through JobEnded.
    let mut r = c.launch_request(3, "node1", script);
    r.spec.as_mut().unwrap().work_dir = "/nonexistent/dir".into();
    agent.launch(r).await.unwrap();
    let ended = c.job_ended(3).await;
    assert!(ended.launch_failed);
    assert_eq!(
        ended.failure,
        "chdir(/nonexistent/dir): No such file or directory"
    );

    // SignalJob: terminate a running job; signals to unknown jobs.
    agent
        .launch(c.launch_request(4, "node1", "#!/bin/sh\nsleep 1000\n"))
        .await
        .unwrap();
    let ping = agent.ping(AgentPingRequest {}).await.unwrap().into_inner();
    assert!(ping.jobs.iter().any(|j| j.job_id == 4 && j.running));
    agent
        .signal_job(SignalJobRequest {
            job_id: 4,
            signal: 0,
            kill_wait: 5,
            timeout: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let ended = c.job_ended(4).await;
    assert_eq!(ended.exit_signal, libc::SIGTERM);
    assert!(ended.timeout);
    let e = agent
        .signal_job(SignalJobRequest {
            job_id: 999,
            signal: 10,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound);
    assert_eq!(e.message(), "Invalid job id specified");
    agent
        .signal_job(SignalJobRequest {
            job_id: 999,
            signal: 0,
            ..Default::default()
        })
        .await
        .unwrap();

    // kill_jobs from a heartbeat terminates the job; its end is not
    // reported (the controller disowned it).
    agent
        .launch(c.launch_request(5, "node1", "#!/bin/sh\nsleep 1000\n"))
        .await
        .unwrap();
    c.ctl.kill_next_heartbeat.lock().unwrap().push(5);
    let t0 = Instant::now();
    loop {
        let ping = agent.ping(AgentPingRequest {}).await.unwrap().into_inner();
        if !ping.jobs.iter().any(|j| j.job_id == 5) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "job 5 not killed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!c.spool().join("job5").exists());
    while let Ok(e) = c.events.try_recv() {
        if let Event::JobEnded(r) = e {
            assert_ne!(r.job_id, 5, "disowned job reported");
        }
    }

    // JobEnded is retried until the controller takes it.
    c.ctl.fail_job_ended.store(2, Ordering::SeqCst);
    agent
        .launch(c.launch_request(6, "node2", "#!/bin/sh\nexit 0\n"))
        .await
        .unwrap();
    let ended = c.job_ended(6).await;
    assert_eq!(ended.exit_code, 0);
    assert_eq!(c.ctl.fail_job_ended.load(Ordering::SeqCst), 0);

    // Agent restart: the job keeps running, is reported in Register, and
    // can still be cancelled; its double-forked daemon dies with it.
    let script7 =
        "#!/bin/bash\n( setsid sh -c 'echo $$ > daemon7.pid; exec sleep 1000' & )\nsleep 1000\n";
    agent
        .launch(c.launch_request(7, "node2", script7))
        .await
        .unwrap();
    let pidfile = c.work().join("daemon7.pid");
    wait_until("daemon7.pid", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let dpid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    c.stop_agent();
    assert!(alive(dpid), "job survives an agent stop");
    assert!(
        drover_nodeagent::stepd_socket::connect(&c.spool().join("job7")).is_ok(),
        "its supervisor still listens"
    );
    c.start_agent();
    let reg = c.registered().await;
    assert!(
        reg.jobs
            .iter()
            .any(|j| j.job_id == 7 && j.running && j.node == "node2"),
        "{:?}",
        reg.jobs
    );
    let mut agent = c.client();
    let mut tries = 0;
    loop {
        match agent
            .signal_job(SignalJobRequest {
                job_id: 7,
                signal: 0,
                kill_wait: 5,
                ..Default::default()
            })
            .await
        {
            Ok(_) => break,
            Err(e) if tries < 50 => {
                tries += 1;
                eprintln!("retrying signal: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let ended = c.job_ended(7).await;
    assert_eq!(ended.exit_signal, libc::SIGTERM);
    assert!(!alive(dpid), "daemon of job 7 killed");
    c.stop_agent();
}

/// Many trivial jobs through one agent serving two nodes, at most 32 at a
/// time (like a controller filling 4 nodes x 8 CPUs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drains_many_trivial_jobs() {
    let mut c = Cluster::new().await;
    c.registered().await;
    let agent = c.client();
    let n: u32 = 400;
    let in_flight: u32 = 32;
    let mut template = c.launch_request(0, "node1", "#!/bin/sh\ntrue\n");
    template.spec.as_mut().unwrap().std_out = "/dev/null".into();
    let launch = |i: u32| {
        let mut a = agent.clone();
        let mut r = template.clone();
        r.job_id = 1000 + i;
        r.node = if i.is_multiple_of(2) {
            "node1"
        } else {
            "node2"
        }
        .into();
        if let Some(info) = r.info.as_mut() {
            info.job_id = r.job_id;
            info.alloc[0].node = r.node.clone();
        }
        tokio::spawn(async move { a.launch(r).await.map(|_| ()) })
    };
    let t0 = Instant::now();
    let mut next = 0;
    let mut launches = Vec::new();
    while next < in_flight.min(n) {
        launches.push(launch(next));
        next += 1;
    }
    let mut seen = std::collections::HashSet::new();
    while seen.len() < n as usize {
        if let Event::JobEnded(r) = c.next_event().await {
            assert_eq!(r.exit_code, 0, "{r:?}");
            seen.insert(r.job_id);
            if next < n {
                launches.push(launch(next));
                next += 1;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    for t in launches {
        t.await.unwrap().unwrap();
    }
    eprintln!("{n} jobs in {secs:.2} s: {:.0} jobs/s", f64::from(n) / secs);

    // Launch latency, one job at a time: RPC answered once the script runs.
    let mut lat = Vec::new();
    for i in 0..21 {
        let mut r = template.clone();
        r.job_id = 5000 + i;
        let mut a = agent.clone();
        let t = Instant::now();
        a.launch(r).await.unwrap();
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        c.job_ended(5000 + i).await;
    }
    lat.sort_by(f64::total_cmp);
    eprintln!(
        "launch RPC latency: median {:.2} ms, max {:.2} ms",
        lat[10], lat[20]
    );
    let spool = c.spool();
    wait_until("no job directory left", || {
        std::fs::read_dir(&spool)
            .map(|d| {
                d.flatten()
                    .all(|e| !e.file_name().to_string_lossy().starts_with("job"))
            })
            .unwrap_or(false)
    })
    .await;
    c.stop_agent();
}

#[test]
fn config_errors_exit_1_with_location() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("bad.conf");
    std::fs::write(&conf, "ClusterName=x\nNodeName=n1 CPUs=abc\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_droverd"))
        .args(["-D", "-f"])
        .arg(&conf)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:2:", conf.display())), "{err}");

    let missing = Path::new("/nonexistent/drover.conf");
    let out = Command::new(env!("CARGO_BIN_EXE_droverd"))
        .args(["-D", "-f"])
        .arg(missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));

    let out = Command::new(env!("CARGO_BIN_EXE_droverd"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
