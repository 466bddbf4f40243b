#!/usr/bin/env bash
# What only `npm run bench` needs (after scripts/setup.sh and scripts/setup-test.sh): MinIO, the
# peer the gateway is measured against, `go install`ed from the Go module proxy into .tools/go/bin
# at the pin below (a few minutes to build on two cores, once per machine and pin).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/env.sh
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

say() { printf 'setup-bench: %s\n' "$*" >&2; }
die() { printf 'setup-bench: error: %s\n' "$*" >&2; exit 1; }

# MinIO publishes no semver tags: the pin is the module proxy's pseudo-version of a release commit.
module="github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"
go_bin="$SHARDGATE_ROOT/.tools/go/bin"
stamp="$go_bin/.minio.version"
if [ ! -x "$go_bin/minio" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$module" ]; then
  command -v go >/dev/null 2>&1 || die "go is needed to build MinIO for the benchmark (Debian: apt-get install golang)"
  say "go install $module into .tools/go/bin (a few minutes, once)"
  mkdir -p "$go_bin"
  GOBIN="$go_bin" GOFLAGS=-buildvcs=false go install "$module" >&2
  printf '%s\n' "$module" > "$stamp"
fi
say "ready (minio)"
