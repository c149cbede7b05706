fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/drover.proto",
        "proto/state.proto",
        "proto/accounting.proto",
    ];
    for p in protos {
        println!("cargo:rerun-if-changed={p}");
    }
    let fds = protox::compile(protos, ["proto"])?;
    // The controller shares equal resolved requests between jobs
    // (ctld/src/intern.rs); prost derives Hash only for flat messages. It
    // keeps a job's spec and request outside its record (shared), so the
    // record holds them boxed: 8 bytes each instead of ~800 and ~240.
    tonic_prost_build::configure()
        .type_attribute(".drover.state.ResolvedRequest", "#[derive(Eq, Hash)]")
        .boxed(".drover.state.JobRecord.spec")
        .boxed(".drover.state.JobRecord.request")
        .compile_fds(fds)?;
    Ok(())
}
