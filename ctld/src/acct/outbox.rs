//! The accounting outbox: job records on their way to droverdbd, kept on
//! disk (StateSaveLocation/acct/) until the daemon has stored them, so an
//! outage of any length loses nothing and order is kept.
//!
//! Layout: segment files `outbox.<n>` of frames `[len u32][crc32 u32][bytes]`,
//! appended by one writer thread (one fsync per batch, at most one per
//! 20 ms), and `outbox.ack`
//! holding the (segment, offset) up to which the daemon has acknowledged.
//! Fully acknowledged segments are deleted.

use drover_proto::private;
use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};

/// Roll to a new segment past this size.
const SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
/// The writer syncs at most this often (and the record builder wakes at
/// most this often). A record not yet synced when the controller dies is
/// built again: a restart sends every job it holds again
/// (`resend_accounting`).
pub const PACE: std::time::Duration = std::time::Duration::from_millis(20);

/// A position in the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    pub seg: u64,
    pub off: u64,
}

/// What the writer has made durable, shared with the sender.
pub struct Shared {
    pub durable: Mutex<Pos>,
    pub notify: tokio::sync::Notify,
}

pub fn seg_path(dir: &Path, seg: u64) -> PathBuf {
    dir.join(format!("outbox.{seg}"))
}

fn segments(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(|n| n.strip_prefix("outbox."))
                        .and_then(|n| n.parse().ok())
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// Encode one frame.
pub fn frame(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 8);
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// Split a buffer into frames; returns them and the bytes consumed (a torn
/// or corrupt tail stops the scan).
pub fn parse_frames(buf: &[u8]) -> (Vec<&[u8]>, usize) {
    let mut out = Vec::new();
    let mut i = 0;
    while buf.len() - i >= 8 {
        let len = u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]) as usize;
        let crc = u32::from_le_bytes([buf[i + 4], buf[i + 5], buf[i + 6], buf[i + 7]]);
        if buf.len() - i - 8 < len {
            break;
        }
        let data = &buf[i + 8..i + 8 + len];
        if crc32fast::hash(data) != crc {
            break;
        }
        out.push(data);
        i += 8 + len;
    }
    (out, i)
}

/// `outbox.ack`: how far the daemon has acknowledged, as the segment and
/// the offset (little-endian u64 each) and their CRC-32. One file written
/// over in place, one `pwrite` per delivered batch (not a new file renamed
/// over the last: an inode made and freed per batch). Not fsynced: losing
/// it, or a write torn by a crash (the CRC fails), only causes resends,
/// which the accounting daemon recognises and skips (`dbd::jobs::record`).
pub struct AckFile(File);

const ACK_FILE: &str = "outbox.ack";

impl AckFile {
    pub fn open(dir: &Path) -> std::io::Result<AckFile> {
        private::open_rw(&dir.join(ACK_FILE)).map(AckFile)
    }

    pub fn store(&self, p: Pos) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.0.write_all_at(&encode_ack(p), 0)
    }
}

fn encode_ack(p: Pos) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..8].copy_from_slice(&p.seg.to_le_bytes());
    b[8..16].copy_from_slice(&p.off.to_le_bytes());
    let crc = crc32fast::hash(&b[0..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The acknowledged position; the start when there is none or it does
/// not check (16 bytes without a CRC: an older controller's file).
pub fn read_ack(dir: &Path) -> Pos {
    let b = fs::read(dir.join(ACK_FILE)).unwrap_or_default();
    let pos = |b: &[u8]| Pos {
        seg: u64::from_le_bytes(b[0..8].try_into().unwrap_or_default()),
        off: u64::from_le_bytes(b[8..16].try_into().unwrap_or_default()),
    };
    match b.len() {
        16 => pos(&b),
        20 if crc32fast::hash(&b[0..16]).to_le_bytes() == b[16..20] => pos(&b),
        _ => Pos::default(),
    }
}

/// Open the outbox: repair a torn tail, start the writer thread.
/// Returns the sender of encoded records and the shared progress.
pub fn open(dir: &Path) -> Result<(mpsc::Sender<Vec<u8>>, Arc<Shared>), String> {
    private::ensure_dir(dir)?;
    let segs = segments(dir);
    let seg = segs.last().copied().unwrap_or(1);
    let path = seg_path(dir, seg);
    let mut file =
        private::append(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (_, good) = parse_frames(&buf);
    if good < buf.len() {
        tracing::warn!(
            "accounting outbox {} ended in a torn record; it was dropped",
            path.display()
        );
        file.set_len(good as u64)
            .map_err(|e| format!("cannot repair {}: {e}", path.display()))?;
    }
    let shared = Arc::new(Shared {
        durable: Mutex::new(Pos {
            seg,
            off: good as u64,
        }),
        notify: tokio::sync::Notify::new(),
    });
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let sh = shared.clone();
    let dir = dir.to_path_buf();
    std::thread::Builder::new()
        .name("acct-outbox".into())
        .spawn(move || writer(dir, file, seg, good as u64, rx, sh))
        .map_err(|e| format!("cannot start the outbox writer: {e}"))?;
    Ok((tx, shared))
}

fn writer(
    dir: PathBuf,
    mut file: File,
    mut seg: u64,
    mut len: u64,
    rx: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    let mut batch = Vec::new();
    while let Ok(first) = rx.recv() {
        batch.clear();
        batch.extend_from_slice(&frame(&first));
        let mut drained = true;
        while let Ok(more) = rx.try_recv() {
            batch.extend_from_slice(&frame(&more));
            if batch.len() > 4 * 1024 * 1024 {
                drained = false;
                break;
            }
        }
        // Retry until the disk takes it: records must not be lost.
        loop {
            let r = file.write_all(&batch).and_then(|_| file.sync_data());
            match r {
                Ok(()) => break,
                Err(e) => {
                    tracing::error!("accounting outbox write failed: {e}; retrying");
                    let _ = file.seek(SeekFrom::Start(len));
                    let _ = file.set_len(len);
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        }
        len += batch.len() as u64;
        if len >= SEGMENT_BYTES {
            let next = seg + 1;
            match private::append(&seg_path(&dir, next)) {
                Ok(f) => {
                    file = f;
                    seg = next;
                    len = 0;
                    if let Ok(d) = File::open(&dir) {
                        let _ = d.sync_all();
                    }
                }
                Err(e) => tracing::error!("cannot start outbox segment {next}: {e}"),
            }
        }
        *shared.durable.lock().unwrap_or_else(|p| p.into_inner()) = Pos { seg, off: len };
        shared.notify.notify_one();
        // At most one write and sync per PACE: records that come one at a
        // time (a loop of submissions) wait in the channel meanwhile,
        // without waking this thread, and then share a sync instead of
        // each asking the disk for one beside the state log's. The first
        // record after a quiet spell is written at once.
        if drained {
            std::thread::sleep(PACE);
        }
    }
}

/// Records durable but not yet acknowledged, from `from` up to `durable`,
/// at most `max_bytes` of them. Returns (records, position after them).
/// Skips segments that no longer exist.
pub fn read_pending(
    dir: &Path,
    mut from: Pos,
    durable: Pos,
    max_bytes: usize,
) -> std::io::Result<(Vec<Vec<u8>>, Pos)> {
    loop {
        if from >= durable {
            return Ok((Vec::new(), from));
        }
        let path = seg_path(dir, from.seg);
        let mut f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                from = Pos {
                    seg: from.seg + 1,
                    off: 0,
                };
                continue;
            }
            Err(e) => return Err(e),
        };
        let end = if from.seg == durable.seg {
            durable.off
        } else {
            f.metadata()?.len()
        };
        if from.off >= end {
            if from.seg < durable.seg {
                from = Pos {
                    seg: from.seg + 1,
                    off: 0,
                };
                continue;
            }
            return Ok((Vec::new(), from));
        }
        f.seek(SeekFrom::Start(from.off))?;
        let want = ((end - from.off) as usize).min(max_bytes.max(8));
        let mut buf = vec![0u8; want];
        f.read_exact(&mut buf)?;
        let (frames, used) = parse_frames(&buf);
        if frames.is_empty() {
            // A single record larger than the window: read it whole.
            if buf.len() >= 8 {
                let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if (len + 8) as u64 <= end - from.off && len + 8 > buf.len() {
                    f.seek(SeekFrom::Start(from.off))?;
                    let mut big = vec![0u8; len + 8];
                    f.read_exact(&mut big)?;
                    let (fr, used) = parse_frames(&big);
                    let recs = fr.iter().map(|d| d.to_vec()).collect();
                    return Ok((
                        recs,
                        Pos {
                            seg: from.seg,
                            off: from.off + used as u64,
                        },
                    ));
                }
            }
            // Corrupt data inside the durable range: skip the segment.
            tracing::error!(
                "accounting outbox {} is corrupt at offset {}; skipping the rest of it",
                path.display(),
                from.off
            );
            from = Pos {
                seg: from.seg + 1,
                off: 0,
            };
            continue;
        }
        let recs = frames.iter().map(|d| d.to_vec()).collect();
        return Ok((
            recs,
            Pos {
                seg: from.seg,
                off: from.off + used as u64,
            },
        ));
    }
}

/// Delete segments wholly before `ack`.
pub fn drop_acked(dir: &Path, ack: Pos) {
    for s in segments(dir) {
        if s < ack.seg {
            let _ = fs::remove_file(seg_path(dir, s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn frames_round_trip_and_torn_tail() {
        let mut buf = frame(b"one");
        buf.extend(frame(b"two"));
        let whole = buf.len();
        buf.extend(&frame(b"three")[..5]);
        let (f, used) = parse_frames(&buf);
        assert_eq!(f, vec![&b"one"[..], &b"two"[..]]);
        assert_eq!(used, whole);
        let mut bad = frame(b"x");
        bad[8] = b'y';
        assert_eq!(parse_frames(&bad).0.len(), 0);
    }

    #[test]
    fn write_read_ack_across_restart() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (tx, sh) = open(d).unwrap();
        for i in 0..10u8 {
            tx.send(vec![i; 10]).unwrap();
        }
        let want = Pos {
            seg: 1,
            off: 10 * 18,
        };
        for _ in 0..500 {
            if *sh.durable.lock().unwrap() == want {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let durable = *sh.durable.lock().unwrap();
        assert_eq!(durable, want);
        let (recs, next) = read_pending(d, read_ack(d), durable, 40).unwrap();
        assert!(!recs.is_empty() && recs.len() < 10);
        assert_eq!(recs[0], vec![0u8; 10]);
        AckFile::open(d).unwrap().store(next).unwrap();
        assert_eq!(read_ack(d), next);
        drop(tx);
        // A torn tail from a crash is cut off at the next open.
        let mut f = OpenOptions::new()
            .append(true)
            .open(seg_path(d, 1))
            .unwrap();
        f.write_all(&frame(b"torn")[..6]).unwrap();
        let (_tx, sh) = open(d).unwrap();
        let durable = *sh.durable.lock().unwrap();
        assert_eq!(durable, want);
        let (rest, end) = read_pending(d, read_ack(d), durable, 1 << 20).unwrap();
        assert_eq!(recs.len() + rest.len(), 10);
        assert_eq!(end, want);
    }

    #[test]
    fn acknowledgements_are_written_in_place_and_checked() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(read_ack(d), Pos::default());
        let ack = AckFile::open(d).unwrap();
        let ino = fs::metadata(d.join(ACK_FILE)).unwrap().ino();
        for off in [10, 20, 7] {
            ack.store(Pos { seg: 3, off }).unwrap();
            assert_eq!(read_ack(d), Pos { seg: 3, off });
        }
        assert_eq!(fs::metadata(d.join(ACK_FILE)).unwrap().ino(), ino);
        assert_eq!(
            fs::metadata(d.join(ACK_FILE)).unwrap().mode() & 0o777,
            0o600
        );
        // A torn write reads as no acknowledgement (everything is resent).
        let mut b = fs::read(d.join(ACK_FILE)).unwrap();
        b[9] ^= 1;
        fs::write(d.join(ACK_FILE), &b).unwrap();
        assert_eq!(read_ack(d), Pos::default());
        // An older controller's 16 bytes still count.
        fs::write(d.join(ACK_FILE), &b[0..16]).unwrap();
        assert_eq!(read_ack(d).seg, 3);
    }
}
