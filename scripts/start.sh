#!/usr/bin/env bash
# `npm start`: set up what serving needs (scripts/setup.sh), then serve the gateway on plain workerd
# (scripts/serve.mjs) on http://127.0.0.1:8787, data in .shardgate/. Options (after `npm start --`):
# --config FILE, --ip, --port, --data-dir; see docs/self-hosting.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

exec node scripts/serve.mjs "$@"
