//! shardgate-core: the byte work of the gateway, pure and deterministic (no I/O, no clocks).
//!
//! - [`erasure`]: Reed-Solomon encode / reconstruct of a block's pieces (whole or a 64-byte column window).
//! - [`engine_simd128`]: the WebAssembly simd128 engine for `reed-solomon-simd`'s encoder and decoder.
//! - [`small_decoder`]: reconstruction of small codes (k + m <= 32) with a cached matrix over the survivors.
//! - [`small_encoder`]: the crate's encoder for small codes (k + m <= 32) in one pass, tile by tile (WASM).
//! - [`geometry`]: how an object part maps to blocks, pieces and chunked shard files.
//! - [`encode`]: a part's bytes, block by block, into framed shard files.
//! - [`frame`]: per-chunk xxh3 checksum framing of shard files (bitrot detection), writing and verifying.
//! - [`plan`]: which shard-file byte ranges a byte range needs, healthy or degraded.
//! - [`verify`]: checking a whole shard file's chunk checksums as it streams in (scrub).
//! - [`assemble`]: turning fetched shard bytes back into exactly the requested bytes, incrementally.
//! - [`http_range`]: the `Range` header with S3 semantics.
//! - [`checksum`]: streaming CRC32 / CRC32C / CRC64NVME for S3 `x-amz-checksum-*`.
//! - [`manifest`]: the versioned binary object manifest.
//! - [`kdf`]: Argon2id, the passphrase KDF of client-side encryption, with bounded parameters.
//! - `wasm`: the wasm-bindgen API (wasm32 only).

pub mod assemble;
pub mod checksum;
pub mod encode;
pub mod engine_simd128;
pub mod erasure;
pub mod frame;
pub mod geometry;
pub mod http_range;
pub mod kdf;
pub mod manifest;
pub mod plan;
pub mod small_decoder;
pub mod small_encoder;
#[cfg(test)]
mod ts_types;
pub mod verify;
#[cfg(target_arch = "wasm32")]
pub mod wasm;
#[doc(hidden)]
pub mod workload;

/// The core's version, reported by the worker's health endpoint.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
