#!/usr/bin/env bash
# Build the Rust core to WebAssembly and generate its JS bindings into core/pkg. core/pkg is in the
# repository, so that serving needs no Rust toolchain; `npm test` rebuilds it and fails when the
# build differs from what is committed (commit the rebuilt core/pkg with a change to core/src).
# Needs the wasm32-unknown-unknown target and wasm-bindgen-cli (scripts/setup.sh installs both).
# wasm-opt is deliberately not used (Debian's binaryen breaks the module).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$SHARDGATE_ROOT"

# simd128 comes from .cargo/config.toml, so every build of the wasm target uses the same flags.
cargo build --release --target wasm32-unknown-unknown -p shardgate-core --lib

in=target/wasm32-unknown-unknown/release/shardgate_core.wasm
out=core/pkg/shardgate_core_bg.wasm
stamp=core/pkg/.wasm-bindgen-version
bindgen_version="$(wasm-bindgen --version)"
# The bindings are made again whenever the tests build the core (SHARDGATE_CORE_FROM_SOURCE=1):
# core/pkg is committed, so a checkout may hold files newer than cargo's output that it did not make.
if [ "${SHARDGATE_CORE_FROM_SOURCE:-}" != 1 ] && [ -f "$out" ] && [ "$out" -nt "$in" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$bindgen_version" ]; then
  exit 0 # bindings are up to date
fi
wasm-bindgen --target web --out-dir core/pkg "$in"
printf '%s\n' "$bindgen_version" > "$stamp"
echo "setup: core/pkg built ($(wc -c < "$out") bytes of wasm)" >&2
