#!/usr/bin/env bash
# `npm test`: set up (scripts/setup.sh for serving, scripts/setup-test.sh for the test clients),
# then run every suite and fail if any failed:
#   0. core/pkg                 (the core built from core/src is byte for byte what is committed)
#   1. cargo test --workspace   (native Rust tests of the core)
#   2. cargo fmt --check, cargo clippy -D warnings
#   3. typecheck                (tsc --noEmit over worker/, web/ and tests/)
#   4. lint                     (biome ci: format and lint rules of biome.json)
#   5. layers                   (scripts/check-layers.mjs: imports go one way in every package)
#   5b. bodies                  (scripts/check-bodies.mjs: no request body read whole outside the bounded reader)
#   5c. sizes                   (scripts/check-sizes.mjs: worker/src's modules within their line budgets)
#   6. vitest run               (projects "workers" in workerd and "node"; extra args go to vitest)
# All suites run even when an earlier one fails, so one run shows every failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The tests build the core from source, whatever the committed core/pkg holds, and need the
# development dependencies (vitest, typescript, biome …) besides what serving needs.
SHARDGATE_CORE_FROM_SOURCE=1 SHARDGATE_DEV_DEPS=1 bash "$here/setup.sh"
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

# core/pkg is committed so that serving needs no Rust: it must be what core/src builds to.
core_pkg_is_built() {
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 || return 0 # not a git checkout: nothing to compare
  if [ -n "$(git status --porcelain -- core/pkg)" ]; then
    git status --short -- core/pkg
    echo "core/pkg differs from the build of core/src: commit the rebuilt core/pkg (npm run build:core)"
    return 1
  fi
}
step "core/pkg is the build of core/src" core_pkg_is_built
step "cargo test --workspace" cargo test --workspace
step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy" cargo clippy --workspace --all-targets --quiet -- -D warnings
step "typecheck" npm run --silent typecheck
step "lint" biome ci --reporter=summary .
step "layers" node scripts/check-layers.mjs
step "bodies" node scripts/check-bodies.mjs
step "sizes" node scripts/check-sizes.mjs
step "vitest run" vitest run "$@"

echo
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'npm test: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
  exit 1
fi
echo "npm test: all suites passed"
