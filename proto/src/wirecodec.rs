//! One tonic codec for the calls whose messages are not all prost structs
//! built for the call: `GetJobs` answered with the bytes the controller
//! already encoded (`ctld/src/rpc/jobs.rs`) and kept as bytes by the
//! command (`joblist`), `RecordJobs` made of records already encoded
//! (`acctbatch`). Each side's type says how it goes onto the wire
//! ([`ToWire`]) or comes off it ([`FromWire`]); a prost message goes as
//! [`Prost`]. The bytes are those tonic's own codec would send.

use std::marker::PhantomData;

use bytes::{Buf, BufMut, Bytes};
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{GrpcMethod, Status};

use crate::signing::Signed;

/// A unary call of `service`'s `method` over `svc`, `msg` sent as
/// [`ToWire`] writes it, the answer read as [`FromWire`] reads it.
pub async fn unary<E: ToWire + Sync, D: FromWire + Sync>(
    svc: Signed,
    service: &'static str,
    method: &'static str,
    msg: E,
) -> Result<D, Status> {
    let mut grpc = tonic::client::Grpc::new(svc)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(format!("Service was not ready: {e}")))?;
    let path = http::uri::PathAndQuery::try_from(format!("/{service}/{method}"))
        .map_err(|e| Status::internal(e.to_string()))?;
    let mut req = tonic::Request::new(msg);
    req.extensions_mut()
        .insert(GrpcMethod::new(service, method));
    grpc.unary(req, path, WireCodec::<E, D>::default())
        .await
        .map(tonic::Response::into_inner)
}

/// A message as it goes onto the wire.
pub trait ToWire: Send + 'static {
    fn to_wire(self, dst: &mut EncodeBuf<'_>) -> Result<(), Status>;
}

/// A message as it comes off the wire.
pub trait FromWire: Sized + Send + 'static {
    fn from_wire(src: &mut DecodeBuf<'_>) -> Result<Self, Status>;
}

/// A prost message, encoded and decoded as tonic's own codec does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prost<M>(pub M);

impl<M: Message + Send + 'static> ToWire for Prost<M> {
    fn to_wire(self, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        self.0
            .encode(dst)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

impl<M: Message + Default + Send + 'static> FromWire for Prost<M> {
    fn from_wire(src: &mut DecodeBuf<'_>) -> Result<Self, Status> {
        M::decode(src)
            .map(Prost)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// A message already encoded: sent as it is.
impl ToWire for Vec<u8> {
    fn to_wire(self, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&self);
        Ok(())
    }
}

/// A message kept as it came (decoded later, or piece by piece).
impl FromWire for Bytes {
    fn from_wire(src: &mut DecodeBuf<'_>) -> Result<Self, Status> {
        Ok(src.copy_to_bytes(src.remaining()))
    }
}

/// Sends `E`, receives `D`.
pub struct WireCodec<E, D>(PhantomData<fn() -> (E, D)>);

impl<E, D> Default for WireCodec<E, D> {
    fn default() -> Self {
        WireCodec(PhantomData)
    }
}

impl<E: ToWire, D: FromWire> Codec for WireCodec<E, D> {
    type Encode = E;
    type Decode = D;
    type Encoder = WireCodec<E, D>;
    type Decoder = WireCodec<E, D>;

    fn encoder(&mut self) -> Self::Encoder {
        WireCodec::default()
    }
    fn decoder(&mut self) -> Self::Decoder {
        WireCodec::default()
    }
}

impl<E: ToWire, D> Encoder for WireCodec<E, D> {
    type Item = E;
    type Error = Status;

    fn encode(&mut self, item: E, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.to_wire(dst)
    }
}

impl<E, D: FromWire> Decoder for WireCodec<E, D> {
    type Item = D;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<D>, Status> {
        D::from_wire(src).map(Some)
    }
}
