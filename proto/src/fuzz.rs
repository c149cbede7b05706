//! Fuzz target for what this crate reads from other processes: the local
//! calls' frames (`localcall::wire`), as the controller reads a request
//! and a command reads an answer. Run by `bench/fuzz.sh local_call`;
//! `cargo test` replays the saved corpus (`fuzz/corpus/local_call`).

use std::future::Future;
use std::task::{Context, Poll, Waker};

use crate::localcall::wire::{self, Kind};

/// Run a future that cannot wait (it reads from a byte slice).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a read from a slice waited"),
    }
}

/// `data` as a connection's bytes after its magic: every frame read as
/// the side reading it would, and every head that parses written back to
/// the same head.
pub fn local_call(data: &[u8]) {
    let mut r = data;
    while let Ok(Some((kind, payload))) = now(wire::read_frame(&mut r)) {
        match kind {
            Kind::Head => {
                if let Ok((path, headers)) = wire::parse_request_head(&payload) {
                    let again = wire::request_head(&path, &headers);
                    assert_eq!(wire::parse_request_head(&again), Ok((path, headers)));
                }
                if let Ok((status, headers)) = wire::parse_response_head(&payload) {
                    let again = wire::response_head(status, &headers);
                    assert_eq!(wire::parse_response_head(&again), Ok((status, headers)));
                }
            }
            Kind::Trailers => {
                if let Ok(t) = wire::parse_trailers(&payload) {
                    assert_eq!(wire::parse_trailers(&wire::trailers(&t)), Ok(t));
                }
            }
            Kind::Data | Kind::End => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn saved_inputs_replay() {
        let n = drover_conf::fuzz::replay("local_call", super::local_call);
        assert!(n > 0, "no saved inputs for local_call");
    }
}
