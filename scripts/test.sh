#!/usr/bin/env bash
# `npm test`: set up (scripts/setup.sh for serving, scripts/setup-test.sh for the test clients),
# then run every suite and fail if any failed:
#   1. cargo test --workspace   (native Rust tests of the core)
#   2. cargo fmt --check, cargo clippy -D warnings
#   3. typecheck                (tsc --noEmit over worker/, web/ and tests/)
#   4. lint                     (biome ci: format and lint rules of biome.json)
#   5. layers                   (scripts/check-layers.mjs: imports go one way in every package)
#   5b. bodies                  (scripts/check-bodies.mjs: no request body read whole outside the bounded reader)
#   6. vitest run               (projects "workers" in workerd and "node"; extra args go to vitest)
# All suites run even when an earlier one fails, so one run shows every failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/setup.sh"
bash "$here/setup-test.sh"
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

failed=()
step() {
  local name="$1"
  shift
  printf '\n== %s\n' "$name"
  if ! "$@"; then
    failed+=("$name")
  fi
}

step "cargo test --workspace" cargo test --workspace
step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy" cargo clippy --workspace --all-targets --quiet -- -D warnings
step "typecheck" npm run --silent typecheck
step "lint" biome ci --reporter=summary .
step "layers" node scripts/check-layers.mjs
step "bodies" node scripts/check-bodies.mjs
step "vitest run" vitest run "$@"

echo
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'npm test: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
  exit 1
fi
echo "npm test: all suites passed"
