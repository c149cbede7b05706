//! The kinds of job a pass meets, so that what it learns about one job
//! serves the others of its kind: an *ask* (the request, the partitions
//! and the reservation: who could hold it, whether anything ever could)
//! and, within it, a *shape* (an ask for one length: its plans). Each is
//! looked up once per job; everything else is keyed by small numbers.

use super::memo::ShapeMemos;
use super::FxMap;
use crate::sched::{JobSnap, Request};

/// Jobs asking for the same resources the same way, whatever their
/// length.
#[derive(Clone, Copy)]
struct Ask<'a>(&'a JobSnap);

impl std::hash::Hash for Ask<'_> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.partitions.hash(h);
        self.0.req.hash(h);
        self.0.reservation.hash(h);
    }
}

impl PartialEq for Ask<'_> {
    fn eq(&self, o: &Self) -> bool {
        let (a, b) = (self.0, o.0);
        a.partitions == b.partitions && a.reservation == b.reservation && a.req == b.req
    }
}

impl Eq for Ask<'_> {}

/// What a pass knows of an ask (none of it changes within the pass).
#[derive(Default)]
pub(super) struct AskInfo {
    /// Its request's number: asks with equal requests share it.
    pub rid: u32,
    /// Could it ever run on the usable nodes.
    pub ever: Option<bool>,
    /// Per partition: nodes that could hold it if empty.
    pub nodes: FxMap<usize, Vec<usize>>,
}

/// What a pass knows of a shape: what is learnt about one job holds for
/// all of them within a pass, since a pass only ever takes resources
/// (until a preemption gives some back: a new generation).
#[derive(Default)]
pub(super) struct ShapeInfo {
    /// Per node: last earliest-start answers.
    pub memos: ShapeMemos,
    /// Could not start now (this generation).
    pub now_fails: bool,
    /// No planned start before this (this generation).
    pub earliest_lb: i64,
    pub generation: u32,
}

/// A pass's asks and shapes, by number.
#[derive(Default)]
pub(super) struct Kinds<'j> {
    asks: FxMap<Ask<'j>, usize>,
    requests: FxMap<&'j Request, u32>,
    shapes: FxMap<(usize, i64), usize>,
    pub ask: Vec<AskInfo>,
    pub shape: Vec<ShapeInfo>,
}

impl<'j> Kinds<'j> {
    /// The numbers of `job`'s ask and shape.
    pub fn of(&mut self, job: &'j JobSnap) -> (usize, usize) {
        let aid = match self.asks.get(&Ask(job)) {
            Some(&a) => a,
            None => {
                let next = self.requests.len() as u32;
                let rid = *self.requests.entry(&job.req).or_insert(next);
                self.ask.push(AskInfo {
                    rid,
                    ..AskInfo::default()
                });
                self.asks.insert(Ask(job), self.ask.len() - 1);
                self.ask.len() - 1
            }
        };
        let sid = *self.shapes.entry((aid, job.time_limit)).or_insert_with(|| {
            self.shape.push(ShapeInfo::default());
            self.shape.len() - 1
        });
        (aid, sid)
    }
}
