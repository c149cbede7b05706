//! The byte stream between a node agent and srun for one step.
//!
//! srun listens on a TCP port; each node's agent connects, sends `Hello`
//! (its step node index, and the step's I/O key as payload), then streams
//! task output and exit statuses; srun sends stdin and signals back on the
//! same connection. A closed connection means srun is gone: the agent kills
//! the step's tasks on that node.
//!
//! Frame: kind (u8), task (u32 BE), length (u32 BE), payload.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest payload accepted (output is sent in chunks well below this).
pub const MAX_FRAME: u32 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// agent -> srun: task = step node index, payload = I/O key.
    Hello = 1,
    Stdout = 2,
    Stderr = 3,
    /// payload: exit code (i32 BE), signal (i32 BE).
    Exit = 4,
    /// payload: error text (task = u32::MAX for the node).
    Error = 5,
    /// srun -> agent: stdin bytes for `task`; empty = end of input.
    Stdin = 10,
    /// srun -> agent: payload = signal number (i32 BE), to every task.
    Signal = 11,
    /// srun -> agent (`--pty`): terminal size, rows and columns (u16 BE each).
    Winsize = 12,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Hello,
            2 => Kind::Stdout,
            3 => Kind::Stderr,
            4 => Kind::Exit,
            5 => Kind::Error,
            10 => Kind::Stdin,
            11 => Kind::Signal,
            12 => Kind::Winsize,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub kind: Kind,
    pub task: u32,
    pub data: Vec<u8>,
}

impl Frame {
    pub fn new(kind: Kind, task: u32, data: impl Into<Vec<u8>>) -> Frame {
        Frame {
            kind,
            task,
            data: data.into(),
        }
    }

    pub fn exit(task: u32, code: i32, signal: i32) -> Frame {
        let mut d = code.to_be_bytes().to_vec();
        d.extend_from_slice(&signal.to_be_bytes());
        Frame::new(Kind::Exit, task, d)
    }

    /// (exit code, signal) of an `Exit` frame.
    pub fn exit_status(&self) -> (i32, i32) {
        let get = |i: usize| {
            self.data
                .get(i..i + 4)
                .and_then(|b| b.try_into().ok())
                .map(i32::from_be_bytes)
                .unwrap_or(0)
        };
        (get(0), get(4))
    }

    pub fn winsize(rows: u16, cols: u16) -> Frame {
        let mut d = rows.to_be_bytes().to_vec();
        d.extend_from_slice(&cols.to_be_bytes());
        Frame::new(Kind::Winsize, 0, d)
    }

    /// (rows, columns) of a `Winsize` frame.
    pub fn winsize_value(&self) -> (u16, u16) {
        let get = |i: usize| {
            self.data
                .get(i..i + 2)
                .and_then(|b| b.try_into().ok())
                .map(u16::from_be_bytes)
                .unwrap_or(0)
        };
        (get(0), get(2))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + self.data.len());
        out.push(self.kind as u8);
        out.extend_from_slice(&self.task.to_be_bytes());
        out.extend_from_slice(&(self.data.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.data);
        out
    }
}

pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, f: &Frame) -> std::io::Result<()> {
    w.write_all(&f.encode()).await?;
    w.flush().await
}

/// Next frame; `Ok(None)` at a clean end of stream.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Option<Frame>> {
    let mut head = [0u8; 9];
    match r.read_exact(&mut head[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut head[1..]).await?;
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let kind = Kind::from_u8(head[0]).ok_or_else(|| bad("unknown frame kind"))?;
    let task = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    let len = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
    if len > MAX_FRAME {
        return Err(bad("frame too large"));
    }
    let mut data = vec![0u8; len as usize];
    r.read_exact(&mut data).await?;
    Ok(Some(Frame { kind, task, data }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn round_trip_and_errors() {
        let frames = vec![
            Frame::new(Kind::Hello, 3, b"key".to_vec()),
            Frame::new(Kind::Stdout, 7, b"hello\n".to_vec()),
            Frame::exit(2, 1, 9),
        ];
        let mut buf = Vec::new();
        for f in &frames {
            write_frame(&mut buf, f).await.unwrap();
        }
        let mut r = &buf[..];
        for f in &frames {
            assert_eq!(read_frame(&mut r).await.unwrap().as_ref(), Some(f));
        }
        assert_eq!(read_frame(&mut r).await.unwrap(), None);
        assert_eq!(frames[2].exit_status(), (1, 9));
        assert_eq!(Frame::winsize(40, 120).winsize_value(), (40, 120));
        let mut bad: &[u8] = &[99, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(read_frame(&mut bad).await.is_err());
        let mut huge: &[u8] = &[2, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut huge).await.is_err());
    }
}
