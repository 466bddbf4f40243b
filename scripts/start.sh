#!/usr/bin/env bash
# `npm start`: set up (scripts/setup.sh), then serve the gateway locally (scripts/serve.mjs: `wrangler dev`
# behind a small front) on http://127.0.0.1:8787. Options: --ip, --port, --persist-to; args after
# `--` go to wrangler dev.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

exec node scripts/serve.mjs "$@"
