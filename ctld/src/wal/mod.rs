//! Durable controller state: a write-ahead log with group commit, plus
//! snapshots that let the log be truncated.
//!
//! Files in `StateSaveLocation`: `snapshot` (a [`Snapshot`]) and
//! `wal.<generation>`, a sequence of frames `len:u32le crc32:u32le
//! bytes` each holding one [`WalRecord`]. The snapshot names the first log
//! generation that still applies; older logs are deleted.
//!
//! The owner task appends encoded records to a buffer and, at the end of each
//! batch of commands, commits the buffer plus the acknowledgements waiting on
//! it: written, `fdatasync`ed once, then the acknowledgements run, so many
//! submissions share one fsync and nobody hears "ok" before their record is
//! on disk. The owner writes a lone command's batch itself; otherwise
//! the writer thread does, while the owner goes on ([`writer`]).
//!
//! With a [`Fence`] (a backup controller is configured, or always in the
//! daemon) each batch is written under the state directory's lock after
//! checking the epoch, and starts with an `epoch` record: a controller
//! deposed by another writes nothing, and recovery skips any batch whose
//! epoch is lower than one already seen.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};

use drover_proto::private;
use drover_proto::state::{wal_record::Kind, Snapshot, WalRecord};
use prost::Message;

use crate::runtime::fence::Fence;
use writer::Writer;

mod writer;

pub type Ack = Box<dyn FnOnce() + Send>;

/// Handle used by the owner task.
pub struct Wal {
    writer: Writer,
    buf: Vec<u8>,
    acks: Vec<Ack>,
    generation: u64,
    /// Bytes in the current generation (to decide when to snapshot).
    pub bytes_in_generation: u64,
}

/// What recovery finds, in order: the snapshot (if any), then each log
/// record written after it. Each value is moved once, into the caller's
/// hands; none is stored, so the record is not boxed (no allocation each).
#[allow(clippy::large_enum_variant)]
pub enum Found {
    Snapshot(Box<Snapshot>),
    Record(WalRecord),
}

/// What recovery learnt of the files on disk.
pub struct Recovery {
    /// Log records handed over (not counting the snapshot).
    pub records: usize,
    pub generation: u64,
    /// A torn frame at the end of the last log (crash mid-write) was dropped.
    pub torn_tail: bool,
    /// Records skipped as written by a deposed controller (a batch whose
    /// epoch is lower than one before it).
    pub stale: usize,
}

fn wal_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("wal.{generation}"))
}

fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Read snapshot and logs, handing each thing found to `on` as it is
/// decoded (a record is applied and dropped before the next is decoded, so
/// a restart never holds the whole decoded log). Errors only on I/O
/// failures or a corrupt snapshot.
pub fn recover(dir: &Path, on: &mut dyn FnMut(Found)) -> Result<Recovery, String> {
    // Job scripts and environments live here: 0700, every file 0600,
    // including what an older version left readable.
    private::ensure_dir(dir)?;
    let tightened = private::tighten_tree(dir, &|_| false)?;
    if tightened > 0 {
        tracing::warn!("{tightened} entries under {} made private", dir.display());
    }
    let snap_path = dir.join("snapshot");
    let snapshot = match std::fs::read(&snap_path) {
        Ok(bytes) => Some(
            Snapshot::decode(bytes.as_slice())
                .map_err(|e| format!("corrupt snapshot {}: {e}", snap_path.display()))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", snap_path.display())),
    };
    let first_gen = snapshot.as_ref().map_or(0, |s| s.wal_generation);
    if let Some(s) = snapshot {
        on(Found::Snapshot(Box::new(s)));
    }
    let mut gens: Vec<u64> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("wal."))
                .and_then(|g| g.parse::<u64>().ok())
        })
        .collect();
    gens.sort_unstable();
    let mut records = 0usize;
    let mut torn_tail = false;
    let mut last_gen = first_gen;
    let mut max_epoch = 0u64;
    let mut skipping = false;
    let mut stale = 0usize;
    for g in gens {
        let path = wal_path(dir, g);
        if g < first_gen {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        last_gen = last_gen.max(g);
        let mut data = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut data))
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut pos = 0usize;
        while pos < data.len() {
            let Some(header) = data.get(pos..pos + 8) else {
                torn_tail = true;
                break;
            };
            let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
            let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
            let Some(body) = data.get(pos + 8..pos + 8 + len) else {
                torn_tail = true;
                break;
            };
            if crc32fast::hash(body) != crc {
                torn_tail = true;
                break;
            }
            match WalRecord::decode(body) {
                Ok(WalRecord {
                    kind: Some(Kind::Epoch(e)),
                }) => {
                    skipping = e < max_epoch;
                    max_epoch = max_epoch.max(e);
                }
                Ok(_) if skipping => stale += 1,
                Ok(r) => {
                    records += 1;
                    on(Found::Record(r));
                }
                Err(_) => {
                    torn_tail = true;
                    break;
                }
            }
            pos += 8 + len;
        }
        if torn_tail {
            // Cut the torn frame off so new records follow good ones.
            if let Ok(f) = OpenOptions::new().write(true).open(&path) {
                let _ = f.set_len(pos as u64);
                let _ = f.sync_all();
            }
        }
    }
    Ok(Recovery {
        records,
        generation: last_gen,
        torn_tail,
        stale,
    })
}

impl Wal {
    /// Start the writer thread appending to `wal.<generation>`, fenced by
    /// `fence` when given.
    pub fn start(dir: &Path, generation: u64, fence: Option<Fence>) -> Result<Wal, String> {
        let p = wal_path(dir, generation);
        let file = private::append(&p).map_err(|e| format!("cannot open {}: {e}", p.display()))?;
        fsync_dir(dir).map_err(|e| format!("cannot sync {}: {e}", dir.display()))?;
        let bytes_in_generation = file.metadata().map(|m| m.len()).unwrap_or(0);
        let writer = Writer::start(dir, file, bytes_in_generation, fence)?;
        Ok(Wal {
            writer,
            buf: Vec::with_capacity(64 * 1024),
            acks: Vec::new(),
            generation,
            bytes_in_generation,
        })
    }

    /// Queue a record (not yet durable).
    pub fn append(&mut self, rec: &WalRecord) {
        frame(rec, &mut self.buf);
    }

    /// Run `ack` once everything appended so far is on disk.
    pub fn after_durable(&mut self, ack: Ack) {
        self.acks.push(ack);
    }

    /// Hand the batch to the writer thread.
    pub fn flush(&mut self) {
        self.commit(false);
    }

    /// Make the batch durable, then run its acknowledgements: in place
    /// when the writer thread is idle and `lone` (a lone command's answer
    /// then waits on no thread hand-off); else by the thread, so that the
    /// owner goes on with the next commands while the disk syncs (group
    /// commit).
    pub fn commit(&mut self, lone: bool) {
        if self.buf.is_empty() && self.acks.is_empty() {
            return;
        }
        self.bytes_in_generation += self.buf.len() as u64;
        let bytes = std::mem::replace(&mut self.buf, Vec::with_capacity(64 * 1024));
        let acks = std::mem::take(&mut self.acks);
        self.writer.append(bytes, acks, lone);
    }

    /// How long the last sync of the log took (what a batch committed in
    /// place keeps the owner from other commands).
    pub fn last_sync(&self) -> std::time::Duration {
        self.writer.last_sync()
    }

    /// Replace the log by a snapshot of the whole state (built by the caller).
    pub fn snapshot(&mut self, mut snap: Snapshot) {
        self.snapshot_encoded(|generation| {
            snap.wal_generation = generation;
            snap.encode_to_vec()
        });
    }

    /// [`Wal::snapshot`] with the snapshot's bytes made by `encode`, given
    /// the new generation (its `wal_generation`).
    pub fn snapshot_encoded(&mut self, encode: impl FnOnce(u64) -> Vec<u8>) {
        self.flush();
        self.generation += 1;
        self.bytes_in_generation = 0;
        self.writer.rotate(self.generation, encode(self.generation));
    }

    /// Block until everything appended so far is durable (shutdown).
    pub fn sync_blocking(&mut self) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.after_durable(Box::new(move || {
            let _ = tx.send(());
        }));
        self.flush();
        let _ = rx.recv_timeout(std::time::Duration::from_secs(30));
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// One frame: len | crc32 | body, the body encoded in place.
fn frame(rec: &WalRecord, buf: &mut Vec<u8>) {
    let len = rec.encoded_len();
    buf.reserve(8 + len);
    buf.extend_from_slice(&(len as u32).to_le_bytes());
    let crc_at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    let body = buf.len();
    rec.encode_raw(buf);
    let crc = crc32fast::hash(&buf[body..]);
    buf[crc_at..body].copy_from_slice(&crc.to_le_bytes());
}

#[cfg(test)]
mod tests {
    /// What `recover` found, collected (the tests look at all of it).
    struct Recovered {
        snapshot: Option<Snapshot>,
        records: Vec<WalRecord>,
        generation: u64,
        torn_tail: bool,
        stale: usize,
    }

    fn recover(dir: &Path) -> Result<Recovered, String> {
        let (mut snapshot, mut records) = (None, Vec::new());
        let r = super::recover(dir, &mut |f| match f {
            Found::Snapshot(s) => snapshot = Some(*s),
            Found::Record(r) => records.push(r),
        })?;
        assert_eq!(r.records, records.len());
        Ok(Recovered {
            snapshot,
            records,
            generation: r.generation,
            torn_tail: r.torn_tail,
            stale: r.stale,
        })
    }

    use super::*;
    use drover_proto::state::wal_record::Kind;
    use std::io::Write;
    use std::sync::mpsc;

    fn wait_durable(w: &mut Wal) {
        let (tx, rx) = mpsc::channel();
        w.after_durable(Box::new(move || {
            let _ = tx.send(());
        }));
        w.flush();
        rx.recv().unwrap();
    }

    #[test]
    fn batches_written_in_place_and_by_the_thread_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let fence = Fence::take(dir.path()).unwrap();
        let mut w = Wal::start(dir.path(), 0, Some(fence)).unwrap();
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        for i in 1..=60u32 {
            w.append(&WalRecord {
                kind: Some(Kind::NextJobId(i)),
            });
            let a = acked.clone();
            w.after_durable(Box::new(move || a.lock().unwrap().push(i)));
            if i % 10 == 0 {
                // An idle writer thread: this batch is written in place,
                // durable and acknowledged before commit returns.
                while w.writer.busy() {
                    std::thread::yield_now();
                }
                w.commit(true);
                assert_eq!(acked.lock().unwrap().last(), Some(&i));
            } else {
                // Others queued behind it: the thread's, maybe several at once.
                w.commit(i % 3 == 0);
            }
        }
        wait_durable(&mut w);
        assert_eq!(*acked.lock().unwrap(), (1..=60).collect::<Vec<u32>>());
        let r = recover(dir.path()).unwrap();
        let ids: Vec<u32> = r
            .records
            .iter()
            .map(|r| match r.kind {
                Some(Kind::NextJobId(i)) => i,
                ref k => panic!("unexpected {k:?}"),
            })
            .collect();
        assert_eq!(ids, (1..=60).collect::<Vec<u32>>());
        assert_eq!(r.stale, 0);
        assert!(!r.torn_tail);
    }

    #[test]
    fn records_survive_and_torn_tail_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::start(dir.path(), 0, None).unwrap();
        for i in 1..=100u32 {
            w.append(&WalRecord {
                kind: Some(Kind::NextJobId(i)),
            });
        }
        wait_durable(&mut w);
        drop(w);
        // Simulate a crash mid-frame.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("wal.0"))
            .unwrap();
        f.write_all(&[200, 0, 0, 0, 1, 2]).unwrap();
        let r = recover(dir.path()).unwrap();
        assert_eq!(r.records.len(), 100);
        assert!(r.torn_tail);
        let r2 = recover(dir.path()).unwrap();
        assert!(!r2.torn_tail, "torn tail was truncated");

        let mut w = Wal::start(dir.path(), r.generation, None).unwrap();
        w.snapshot(Snapshot {
            next_job_id: 101,
            ..Default::default()
        });
        w.append(&WalRecord {
            kind: Some(Kind::NextJobId(500)),
        });
        wait_durable(&mut w);
        let r = recover(dir.path()).unwrap();
        assert_eq!(r.snapshot.unwrap().next_job_id, 101);
        assert_eq!(r.records.len(), 1);
        assert!(!dir.path().join("wal.0").exists());
    }

    /// A deposed controller's batch (lower epoch after a higher one) is
    /// skipped at recovery; the fenced writer marks each batch.
    #[test]
    fn batches_of_a_deposed_epoch_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let old = Fence::take(dir.path()).unwrap();
        let mut w = Wal::start(dir.path(), 0, Some(old)).unwrap();
        w.append(&WalRecord {
            kind: Some(Kind::NextJobId(10)),
        });
        wait_durable(&mut w);
        drop(w);
        let r = recover(dir.path()).unwrap();
        assert_eq!(r.records.len(), 1);
        assert_eq!(r.stale, 0);
        // Frames as a deposed writer racing an epoch-2 writer would leave.
        let mut bytes = Vec::new();
        for k in [
            Kind::Epoch(2),
            Kind::NextJobId(20),
            Kind::Epoch(1),
            Kind::NextJobId(99),
        ] {
            frame(&WalRecord { kind: Some(k) }, &mut bytes);
        }
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("wal.0"))
            .unwrap();
        f.write_all(&bytes).unwrap();
        let r = recover(dir.path()).unwrap();
        assert_eq!(r.stale, 1);
        let ids: Vec<_> = r.records.iter().map(|r| r.kind.clone()).collect();
        assert_eq!(
            ids,
            vec![Some(Kind::NextJobId(10)), Some(Kind::NextJobId(20))]
        );
    }

    /// A snapshot that cannot be written (here: `snapshot.new` is taken by
    /// a directory) leaves the old snapshot and log in force, and the log
    /// goes on taking records.
    #[test]
    fn a_failed_snapshot_keeps_the_current_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Wal::start(dir.path(), 0, None).unwrap();
        w.append(&WalRecord {
            kind: Some(Kind::NextJobId(7)),
        });
        wait_durable(&mut w);
        std::fs::create_dir(dir.path().join("snapshot.new")).unwrap();
        w.snapshot(Snapshot {
            next_job_id: 8,
            ..Default::default()
        });
        w.append(&WalRecord {
            kind: Some(Kind::NextJobId(9)),
        });
        wait_durable(&mut w);
        assert!(!dir.path().join("wal.1").exists());
        assert!(!dir.path().join("snapshot").exists());
        let r = recover(dir.path()).unwrap();
        assert!(r.snapshot.is_none());
        let ids: Vec<_> = r.records.iter().map(|r| r.kind.clone()).collect();
        assert_eq!(
            ids,
            vec![Some(Kind::NextJobId(7)), Some(Kind::NextJobId(9))]
        );
    }
}
