//! What the core asks the world to do. Handlers never write the log, call
//! an agent, start a timer or answer a client themselves: they push an
//! [`Effect`] on `Ctld::effects`, and the runtime
//! (`runtime/`) performs the batch's effects, in order, after applying it.
//! Scenario tests read them instead (`scenario/`).

use std::fmt;
use std::time::Duration;

use crate::refusal::Refusal;
use drover_proto::state::{MailRecord, WalRecord};
use drover_proto::{LaunchRequest, SignalJobRequest, SuspendJobRequest};

use crate::job::Job;

/// An operation on the state `S` (the core), applied by the owner task.
pub type Op<S> = Box<dyn FnOnce(&mut S) + Send>;

/// What the core asks the world to do; callbacks apply to the state `S`.
pub enum Effect<S> {
    /// Append a record to the write-ahead log (in the order pushed).
    Log(Box<WalRecord>),
    /// Run once everything logged before it is durable: an answer to a
    /// client ("durable before acknowledged").
    AfterDurable(Box<dyn FnOnce() + Send>),
    /// Queue the job's current state (as of `now`) for the accounting daemon.
    Account { job: Box<Job>, now: i64 },
    /// Start the job's batch script on `node`; the agent's answer comes
    /// back as `Ctld::launch_done(job, start, ..)`.
    Launch {
        node: String,
        req: Box<LaunchRequest>,
        start: i64,
    },
    /// Signal a job or a step on `node` (signal 0: terminate it).
    Signal { node: String, req: SignalJobRequest },
    /// Stop or continue a job's processes on `node`; a failure comes back
    /// as `Ctld::suspend_failed`.
    Suspend {
        node: String,
        req: SuspendJobRequest,
        start: i64,
        attempt: u32,
    },
    /// Apply `op` after `delay`.
    Later { delay: Duration, op: Op<S> },
    /// Plan a big scheduling pass off the owner task over a snapshot: `work`
    /// returns the operation that applies its decisions.
    Plan {
        work: Box<dyn FnOnce() -> Op<S> + Send>,
        depth: usize,
        queue_len: usize,
    },
    /// Forget agent connections (the configuration changed).
    ForgetAgents,
    /// Ask these agents (node, address) to re-read their config.
    ReconfigureAgents { agents: Vec<(String, String)> },
    /// Accounting was switched on by a reconfigure: open the outbox, start
    /// the sender and queue a record of every job known.
    StartAccounting,
    /// Run MailProg for this mail once what was logged before is durable
    /// (its `mail_due` record); the runtime answers `Ctld::mail_sent`.
    Mail(Box<MailRecord>),
    /// Run a power-saving program (`kind`: SuspendProgram, ResumeProgram,
    /// ResumeFailProgram) at `path` with the nodes' hostlist as argument,
    /// killed after `timeout`; a failure comes back as
    /// `Ctld::program_failed(kind, nodes, why)`.
    RunProgram {
        kind: &'static str,
        path: String,
        nodes: Vec<String>,
        timeout: Duration,
    },
}

impl<S> fmt::Debug for Effect<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::Log(r) => write!(f, "Log({:?})", r.kind.as_ref().map(kind_name)),
            Effect::AfterDurable(_) => write!(f, "AfterDurable"),
            Effect::Account { job, .. } => write!(f, "Account(job {})", job.rec.job_id),
            Effect::Launch { node, req, .. } => write!(f, "Launch(job {} on {node})", req.job_id),
            Effect::Signal { node, req } => {
                write!(
                    f,
                    "Signal(job {} on {node}, signal {})",
                    req.job_id, req.signal
                )
            }
            Effect::Suspend { node, req, .. } => write!(
                f,
                "Suspend(job {} on {node}, suspend {})",
                req.job_id, req.suspend
            ),
            Effect::Later { delay, .. } => write!(f, "Later({delay:?})"),
            Effect::Plan { depth, .. } => write!(f, "Plan({depth} jobs)"),
            Effect::ForgetAgents => write!(f, "ForgetAgents"),
            Effect::ReconfigureAgents { agents } => {
                write!(f, "ReconfigureAgents({} agents)", agents.len())
            }
            Effect::StartAccounting => write!(f, "StartAccounting"),
            Effect::Mail(m) => write!(f, "Mail({} job {}: {})", m.id, m.job_id, m.subject),
            Effect::RunProgram { kind, nodes, .. } => {
                write!(f, "RunProgram({kind} {})", nodes.join(","))
            }
        }
    }
}

fn kind_name(k: &drover_proto::state::wal_record::Kind) -> String {
    use drover_proto::state::wal_record::Kind;
    match k {
        Kind::Job(j) => format!("Job {}", j.job_id),
        Kind::Runtime(u) => format!("Runtime {}", u.job_id),
        Kind::Purge(id) => format!("Purge {id}"),
        Kind::Blob(b) => format!("Blob {}", b.id),
        Kind::Node(n) => format!("Node {}", n.name),
        Kind::NextJobId(n) => format!("NextJobId {n}"),
        Kind::Usage(_) => "Usage".into(),
        Kind::Resv(r) => format!("Resv {}", r.name),
        Kind::ResvDelete(n) => format!("ResvDelete {n}"),
        Kind::MailDue(m) => format!("MailDue {}", m.id),
        Kind::MailSent(id) => format!("MailSent {id}"),
        Kind::Epoch(e) => format!("Epoch {e}"),
        Kind::PartEdits(e) => format!("PartEdits {}", e.edits.len()),
    }
}

/// Where the answer to a request goes: a callback the runtime supplies
/// (it hands the value to the waiting RPC).
pub struct Reply<T>(Box<dyn FnOnce(Result<T, Refusal>) -> bool + Send>);

impl<T> Reply<T> {
    /// `deliver` returns whether the asker was still there.
    pub fn new(deliver: impl FnOnce(Result<T, Refusal>) -> bool + Send + 'static) -> Self {
        Reply(Box::new(deliver))
    }

    /// Answer now; false when the asker has gone away.
    pub fn send(self, value: Result<T, Refusal>) -> bool {
        (self.0)(value)
    }
}
