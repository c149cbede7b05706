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
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
