//! Writing the log: each batch of frames is appended and `fdatasync`ed,
//! under the fence when there is one, and only then are the
//! acknowledgements waiting on it run.
//!
//! Two hands write, one at a time: the writer thread, which takes batches
//! while the owner goes on with the next commands (group commit under
//! load), snapshots, and a full disk waited out; and the owner task itself,
//! which writes a batch in place when the thread has nothing queued and no
//! command is waiting behind it. A lone submission's answer then waits on
//! the disk alone: on a 2-vCPU VM, waking the thread and then waking the
//! runtime back from it cost 0.1-0.3 ms per call.

use std::fs::File;
use std::io::{IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};

use drover_proto::state::{wal_record::Kind, WalRecord};

use super::{frame, fsync_dir, wal_path, Ack};
use crate::runtime::fence::{Fence, Held};

enum Msg {
    Append(Vec<u8>, Vec<Ack>),
    Rotate { generation: u64, snapshot: Vec<u8> },
}

/// The owner's side: where batches go.
pub(super) struct Writer {
    tx: mpsc::Sender<Msg>,
    shared: Arc<Shared>,
}

struct Shared {
    log: Mutex<Log>,
    /// Messages sent to the thread whose acknowledgements have not run.
    queued: AtomicUsize,
    /// How long the last sync took, in nanoseconds.
    last_sync_ns: AtomicU64,
}

/// The log file, the fence it is written under, and the epoch mark that
/// starts each batch.
struct Log {
    out: Out,
    fence: Option<Fence>,
    epoch_mark: Vec<u8>,
}

impl Writer {
    /// Start the writer thread appending to `file` (`len` bytes long) in
    /// `dir`.
    pub(super) fn start(
        dir: &Path,
        file: File,
        len: u64,
        fence: Option<Fence>,
    ) -> Result<Writer, String> {
        let epoch_mark = match &fence {
            Some(f) => {
                let mut mark = Vec::with_capacity(16);
                frame(
                    &WalRecord {
                        kind: Some(Kind::Epoch(f.epoch)),
                    },
                    &mut mark,
                );
                mark
            }
            None => Vec::new(),
        };
        let shared = Arc::new(Shared {
            log: Mutex::new(Log {
                out: Out {
                    len,
                    file,
                    dir: dir.to_path_buf(),
                    waiting_since: None,
                },
                fence,
                epoch_mark,
            }),
            queued: AtomicUsize::new(0),
            last_sync_ns: AtomicU64::new(0),
        });
        let (tx, rx) = mpsc::channel::<Msg>();
        let theirs = shared.clone();
        let dir = dir.to_path_buf();
        std::thread::Builder::new()
            .name("wal-writer".into())
            .spawn(move || run(&dir, &theirs, &rx))
            .map_err(|e| format!("cannot start state writer: {e}"))?;
        Ok(Writer { tx, shared })
    }

    /// Append `bytes`, sync, then run `acks`: here when `in_place` and the
    /// thread is idle (unless the disk is full: the thread waits that out),
    /// else by the thread.
    pub(super) fn append(&self, bytes: Vec<u8>, acks: Vec<Ack>, in_place: bool) {
        if in_place && self.shared.queued.load(Ordering::Acquire) == 0 && self.write_here(&bytes) {
            for a in acks {
                a();
            }
            return;
        }
        self.send(Msg::Append(bytes, acks));
    }

    /// Write and sync `bytes` on the caller's thread; false (nothing
    /// written) when the disk is full.
    fn write_here(&self, bytes: &[u8]) -> bool {
        // Only the owner sends to the thread, and it has nothing queued:
        // the lock is free.
        let mut log = self.shared.lock();
        let log = &mut *log;
        let _held = hold(&log.fence);
        if log.out.try_append(&[&log.epoch_mark, bytes]).is_err() {
            return false;
        }
        self.shared.sync(&log.out.file);
        true
    }

    /// Replace the log by a new generation that starts from `snapshot`.
    pub(super) fn rotate(&self, generation: u64, snapshot: Vec<u8>) {
        self.send(Msg::Rotate {
            generation,
            snapshot,
        });
    }

    /// How long the last sync of the log took.
    pub(super) fn last_sync(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.shared.last_sync_ns.load(Ordering::Relaxed))
    }

    /// Has the thread batches not yet acknowledged?
    #[cfg(test)]
    pub(super) fn busy(&self) -> bool {
        self.shared.queued.load(Ordering::Acquire) > 0
    }

    fn send(&self, msg: Msg) {
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(msg).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `fdatasync` the log, or end the controller: without durable state
    /// it must not go on.
    fn sync(&self, f: &File) {
        let started = std::time::Instant::now();
        let r = f.sync_data();
        let took = started.elapsed();
        drover_proto::metrics::WAL_FSYNC.observe(took);
        self.last_sync_ns
            .store(took.as_nanos() as u64, Ordering::Relaxed);
        if let Err(e) = r {
            tracing::error!("state log fsync failed: {e}; exiting");
            std::process::exit(1);
        }
    }
}

/// Hold the fence's lock while the epoch is still ours; a deposed
/// controller (or one whose lock is gone) stops here, its acknowledgements
/// unsent, so no client hears of an unlogged change.
fn hold(fence: &Option<Fence>) -> Option<Held<'_>> {
    fence.as_ref().map(|f| match f.hold() {
        Ok(h) => h,
        Err(e) => {
            tracing::error!("{e}; exiting");
            std::process::exit(1);
        }
    })
}

/// The writer thread: everything queued is written, then synced once,
/// then acknowledged.
fn run(dir: &Path, shared: &Shared, rx: &mpsc::Receiver<Msg>) {
    let mut acks: Vec<Ack> = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut taken = 0usize;
        {
            let mut log = shared.lock();
            let log = &mut *log;
            let held = hold(&log.fence);
            log.out.append(&[&log.epoch_mark]);
            let mut next = Some(first);
            let mut dirty = false;
            while let Some(msg) = next.take() {
                taken += 1;
                match msg {
                    Msg::Append(bytes, a) => {
                        log.out.append(&[&bytes]);
                        dirty = true;
                        acks.extend(a);
                    }
                    Msg::Rotate {
                        generation,
                        snapshot,
                    } => {
                        if dirty {
                            shared.sync(&log.out.file);
                            dirty = false;
                        }
                        match rotate(dir, generation, &snapshot) {
                            Ok(f) => {
                                log.out.file = f;
                                log.out.len = 0;
                                // The new log starts with the epoch too.
                                log.out.append(&[&log.epoch_mark]);
                            }
                            // The old log and snapshot still hold
                            // everything: go on appending to them.
                            Err(e) => tracing::error!(
                                "state snapshot in {} failed: {e}; the current log is kept",
                                dir.display()
                            ),
                        }
                    }
                }
                next = rx.try_recv().ok();
            }
            if dirty || held.is_some() {
                shared.sync(&log.out.file);
            }
        }
        for a in acks.drain(..) {
            a();
        }
        shared.queued.fetch_sub(taken, Ordering::AcqRel);
    }
}

/// The log file being appended to, and how much of it is whole frames.
struct Out {
    file: File,
    len: u64,
    dir: PathBuf,
    /// Since when a write has been failing for want of space.
    waiting_since: Option<std::time::Instant>,
}

/// A write found the disk (or the quota) full; what it wrote was cut off.
struct NoSpace(std::io::Error);

impl Out {
    /// Append `parts` in one write where the kernel takes it whole. A full
    /// disk (or quota) cuts the partial write off and is the caller's to
    /// wait out; any other failure ends the controller: without durable
    /// state it must not go on.
    fn try_append(&mut self, parts: &[&[u8]]) -> Result<(), NoSpace> {
        let mut slices: Vec<IoSlice> = parts
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| IoSlice::new(p))
            .collect();
        let total: usize = slices.iter().map(|s| s.len()).sum();
        let mut rest = &mut slices[..];
        while !rest.is_empty() {
            match self.file.write_vectored(rest) {
                Ok(0) => {
                    tracing::error!("state log write wrote nothing; exiting");
                    std::process::exit(1);
                }
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if is_no_space(&e) => {
                    // Frames after a torn one would be lost at recovery.
                    if let Err(t) = self.file.set_len(self.len) {
                        tracing::error!(
                            "state log write failed: {e}, and cutting it back: {t}; exiting"
                        );
                        std::process::exit(1);
                    }
                    return Err(NoSpace(e));
                }
                Err(e) => {
                    tracing::error!("state log write failed: {e}; exiting");
                    std::process::exit(1);
                }
            }
        }
        self.len += total as u64;
        Ok(())
    }

    /// Append `parts`, waiting out a full disk: the same bytes are tried
    /// again every second, the acknowledgements held, while new
    /// submissions are refused ([`crate::runtime::disk`]).
    fn append(&mut self, parts: &[&[u8]]) {
        while let Err(NoSpace(e)) = self.try_append(parts) {
            if self.waiting_since.is_none() {
                self.waiting_since = Some(std::time::Instant::now());
                crate::runtime::disk::LOG_WAITING_FOR_SPACE.store(true, Ordering::Release);
                tracing::error!(
                    "state log write in {} failed: {e}; waiting for space \
                     (new submissions are refused meanwhile)",
                    self.dir.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        if let Some(t) = self.waiting_since.take() {
            crate::runtime::disk::LOG_WAITING_FOR_SPACE.store(false, Ordering::Release);
            tracing::info!(
                "state log in {} written again after {} s without space",
                self.dir.display(),
                t.elapsed().as_secs()
            );
        }
    }
}

fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

/// New log first, then the snapshot that points at it, then drop old logs.
/// On failure before the snapshot is in place, what was made is removed
/// and the old snapshot and log stay in force.
fn rotate(dir: &Path, generation: u64, snapshot: &[u8]) -> Result<File, String> {
    let new_log = wal_path(dir, generation);
    let tmp = dir.join("snapshot.new");
    let made = (|| -> std::io::Result<File> {
        let f = drover_proto::private::append(&new_log)?;
        let mut t = drover_proto::private::create(&tmp)?;
        t.write_all(snapshot)?;
        t.sync_all()?;
        std::fs::rename(&tmp, dir.join("snapshot"))?;
        Ok(f)
    })();
    let f = match made {
        Ok(f) => f,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&new_log);
            return Err(e.to_string());
        }
    };
    // The new snapshot is in place; if the directory cannot be synced, a
    // crash may bring back the old one, which with the old logs kept still
    // gives the same state.
    if let Err(e) = fsync_dir(dir) {
        tracing::warn!("cannot sync {}: {e}; older logs kept", dir.display());
        return Ok(f);
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(g) = name
                .to_str()
                .and_then(|n| n.strip_prefix("wal."))
                .and_then(|g| g.parse::<u64>().ok())
            else {
                continue;
            };
            if g < generation {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(f)
}
