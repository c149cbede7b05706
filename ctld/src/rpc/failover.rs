//! The calls between controllers and `scontrol takeover` (see
//! `runtime::ha`): answered without the owner task, which a standby
//! controller does not run.

use std::sync::atomic::Ordering;
use std::time::Duration;

use drover_proto::{
    PingResponse, RelinquishRequest, RelinquishResponse, TakeoverRequest, TakeoverResponse,
};
use tonic::{Request, Response, Status};

use super::controller::Svc;
use crate::ctld::Ctld;
use crate::submit::msg;

impl Svc {
    /// Ping in standby (None when active: the owner answers).
    pub(crate) fn standby_ping(&self) -> Option<PingResponse> {
        (!self.ha.active.load(Ordering::Acquire)).then(|| self.ha.standby_ping())
    }

    /// (index, epoch, configured host name) for an active controller's Ping.
    pub(crate) fn ha_place(&self) -> (u32, u64, Option<String>) {
        (
            self.ha.index as u32,
            self.ha.epoch.load(Ordering::Acquire),
            (!self.ha.names.is_empty()).then(|| self.ha.name()),
        )
    }

    /// `scontrol takeover`: a standby controller takes control now.
    pub(crate) async fn takeover_now(
        &self,
        req: Request<TakeoverRequest>,
    ) -> Result<Response<TakeoverResponse>, Status> {
        let who = self.who(&req)?;
        if !(who.daemon || who.uid == 0 || who.uid == self.ha.admin_uid) {
            return Err(Status::permission_denied(msg::ACCESS));
        }
        if !self.ha.active.load(Ordering::Acquire) {
            tracing::info!("takeover requested by uid {} on {}", who.uid, who.host);
            self.ha.takeover.notify_one();
        }
        Ok(Response::new(TakeoverResponse {}))
    }

    /// Another controller takes control: write everything, stop writing,
    /// answer once the log is on disk and nothing more will be written.
    pub(crate) async fn relinquish_now(
        &self,
        req: Request<RelinquishRequest>,
    ) -> Result<Response<RelinquishResponse>, Status> {
        let who = self.who(&req)?;
        if !who.daemon {
            return Err(Status::permission_denied(msg::ACCESS));
        }
        let to = req.into_inner().to_host;
        // New calls are refused from here on (clients move to the next).
        if !self.ha.active.swap(false, Ordering::AcqRel) {
            return Ok(Response::new(RelinquishResponse {}));
        }
        tracing::info!("controller {to} takes control: writing the state and stepping down");
        self.ha.stepping_down.store(true, Ordering::Release);
        let mut stopped = self.ha.stopped.subscribe();
        let _ = self
            .tx
            .send(Box::new(|c: &mut Ctld| c.shutdown = true))
            .await;
        let done = tokio::time::timeout(Duration::from_secs(50), stopped.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok());
        if done {
            Ok(Response::new(RelinquishResponse {}))
        } else {
            Err(Status::unavailable("the state was not written in time"))
        }
    }
}
