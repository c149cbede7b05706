//! The `Scheduler` gRPC service: sprio, sshare and reservations.

use drover_proto::auth::Identity;
use drover_proto::scheduler_server::Scheduler;
use drover_proto::*;
use tonic::{Request, Response, Status};

use crate::ctld::Ctld;
use crate::refusal::Refusal;
use crate::rpc::controller::Svc;
use crate::submit::msg;

/// Same channel to the owner task and key as the controller service.
pub struct SchedSvc(pub Svc);

impl SchedSvc {
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Ctld) -> Result<T, Refusal> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        self.0
            .call(move |c, r| {
                let _ = r.send(f(c));
            })
            .await
    }

    fn who<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        self.0.who(req)
    }
}

fn admin(c: &Ctld, who: &Identity) -> Result<(), Refusal> {
    if c.is_admin(who) {
        Ok(())
    } else {
        Err(Refusal::permission_denied(msg::ACCESS))
    }
}

#[tonic::async_trait]
impl Scheduler for SchedSvc {
    async fn get_priorities(
        &self,
        req: Request<GetPrioritiesRequest>,
    ) -> Result<Response<GetPrioritiesResponse>, Status> {
        let who = self.who(&req)?;
        let req = req.into_inner();
        self.call(move |c| Ok(c.priorities(&who, req))).await
    }

    async fn get_shares(
        &self,
        req: Request<GetSharesRequest>,
    ) -> Result<Response<GetSharesResponse>, Status> {
        let who = self.who(&req)?;
        self.call(move |c| Ok(c.shares(&who))).await
    }

    async fn create_reservation(
        &self,
        req: Request<ReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let args = req.into_inner().args;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.create_reservation(&args, c.now)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn update_reservation(
        &self,
        req: Request<ReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let args = req.into_inner().args;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.update_reservation(&args, c.now)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn delete_reservation(
        &self,
        req: Request<DeleteReservationRequest>,
    ) -> Result<Response<ReservationResponse>, Status> {
        let who = self.who(&req)?;
        let name = req.into_inner().name;
        self.call(move |c| {
            admin(c, &who)?;
            let name = c.delete_reservation(&name)?;
            Ok(ReservationResponse { name })
        })
        .await
    }

    async fn get_reservations(
        &self,
        req: Request<GetReservationsRequest>,
    ) -> Result<Response<GetReservationsResponse>, Status> {
        let who = self.who(&req)?;
        let name = req.into_inner().name;
        self.call(move |c| {
            let t = c.now;
            c.resv_snaps(t);
            // PrivateData=reservations: only those the user may use.
            let mine = if c.private().reservations && !c.sees_all(&who) {
                let user = c.names.user(who.uid).to_string();
                let accounts = c.user_accounts(&user);
                Some((user, accounts))
            } else {
                None
            };
            let reservations: Vec<ReservationInfo> = c
                .sched
                .resvs
                .iter()
                .filter(|r| name.is_empty() || r.name == name)
                .filter(|r| {
                    mine.as_ref()
                        .is_none_or(|(u, a)| crate::privacy::resv_usable(r, u, a))
                })
                .cloned()
                .collect();
            if !name.is_empty() && reservations.is_empty() {
                return Err(Refusal::not_found(format!("Reservation {name} not found")));
            }
            Ok(GetReservationsResponse {
                reservations,
                now: t,
            })
        })
        .await
    }
}
