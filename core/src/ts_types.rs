//! The TypeScript declarations of the manifest types, generated from the Rust definitions so the
//! Worker and the core share one source: `worker/src/shared/core-types.ts`. This test fails when the
//! file is not what the types generate; `UPDATE_CORE_TYPES=1 cargo test ts_types` rewrites it.

use crate::manifest::{
    ChecksumKind, Encryption, EncryptionMode, Layout, Manifest, ObjectChecksum, Part, ShardedLayout,
};
use ts_rs::{Config, TS};

const FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../worker/src/shared/core-types.ts"
);

fn generated() -> String {
    // JSON numbers: every size fits in 2^53.
    let cfg = Config::new().with_large_int("number");
    let decls = [
        Manifest::decl(&cfg),
        Part::decl(&cfg),
        Layout::decl(&cfg),
        ShardedLayout::decl(&cfg),
        ObjectChecksum::decl(&cfg),
        ChecksumKind::decl(&cfg),
        Encryption::decl(&cfg),
        EncryptionMode::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from core/src/manifest.rs by core/src/ts_types.rs (`UPDATE_CORE_TYPES=1 cargo test ts_types`): do not edit.\n",
    );
    for decl in decls {
        out.push('\n');
        out.push_str("export ");
        out.push_str(&decl);
        out.push('\n');
    }
    out
}

#[test]
fn ts_types_match_the_rust_definitions() {
    let want = generated();
    if std::env::var_os("UPDATE_CORE_TYPES").is_some() {
        std::fs::write(FILE, &want).expect("write worker/src/shared/core-types.ts");
        return;
    }
    let have = std::fs::read_to_string(FILE).unwrap_or_default();
    assert!(
        have == want,
        "worker/src/shared/core-types.ts is out of date: run `UPDATE_CORE_TYPES=1 cargo test ts_types`"
    );
}
