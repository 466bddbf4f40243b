#!/usr/bin/env bash
# `npm start`: set up (scripts/setup.sh), then serve the Worker locally with `wrangler dev`
# (workerd via miniflare) on http://127.0.0.1:8787. Extra args go to wrangler dev.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

host=127.0.0.1
port=8787
echo "shardgate: serving the S3 gateway on http://$host:$port"
echo "shardgate: health: http://$host:$port/_shardgate/health"
exec wrangler dev --ip "$host" --port "$port" "$@"
