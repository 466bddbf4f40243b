#!/usr/bin/env bash
# Run a command with shardgate's toolchain (Node 22, node_modules/.bin, cargo) first on PATH:
#   bash scripts/with-env.sh node scripts/bench-core.mjs --json
set -euo pipefail
# shellcheck source=scripts/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec "$@"
