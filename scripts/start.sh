#!/usr/bin/env bash
# `npm start`: set up what serving needs (scripts/setup.sh), then serve the gateway on plain workerd
# (scripts/serve.mjs) on http://127.0.0.1:8787, data in .shardgate/. Options (after `npm start --`):
# --config FILE, --ip, --port, --console-port, --data-dir, --processes, --quiet; see docs/self-hosting.md
# (an unknown flag or a bad shardgate.json is one line on stderr and exit status 1).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

exec node scripts/serve.mjs "$@"
