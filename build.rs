//! Compiles `proto/registry.proto` (the operator-registry gRPC API) into Rust with tonic and
//! prost. The `.proto` is parsed by `protox` (pure Rust), so building needs no `protoc`.

use std::path::PathBuf;

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/registry.proto");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    let descriptors = protox::compile(["registry.proto"], ["proto"])?;
    std::fs::write(
        out.join("registry_descriptor.bin"),
        descriptors.encode_to_vec(),
    )?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
