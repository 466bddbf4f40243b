#!/usr/bin/env bash
# The npm dependencies of the project in the working directory: step 2 of scripts/setup.sh, which
# says what it installs when. A script of its own so that tests/node/setup.test.ts can run it on a
# small project of local packages, with no registry.
set -euo pipefail

say() { printf 'setup: %s\n' "$*" >&2; }
node_version="$(node -p process.versions.node)"

stamp=node_modules/.shardgate-install.sha256
if [ -f package-lock.json ]; then
  lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
  installed="$(cat "$stamp" 2>/dev/null || true)"
  # The stamp is the lock's hash and what was installed: "serve" (dependencies only) or "dev" (all).
  mode=serve
  [ "${SHARDGATE_DEV_DEPS:-}" = 1 ] && mode=dev
  if [ -d node_modules ] && [ "$mode" = dev ] && [ "$installed" = "$lock_hash serve" ]; then
    # What serving needs is installed from this very lock: add the development dependencies beside
    # it. `npm ci` would delete node_modules first, under a gateway that `npm start` may be running
    # from it, and download everything again; `npm install` with a lock in sync with package.json
    # adds only what is missing, at the lock's versions and places, the same tree as `npm ci`, and
    # (--no-save) writes neither package.json nor package-lock.json.
    say "npm install --include=dev (node $node_version; the development dependencies beside what serving needs)"
    npm install --include=dev --no-save --no-audit --no-fund >&2
    printf '%s dev\n' "$lock_hash" > "$stamp"
  elif [ ! -d node_modules ] || { [ "$installed" != "$lock_hash dev" ] && [ "$installed" != "$lock_hash $mode" ]; }; then
    if [ "$mode" = dev ]; then
      say "npm ci (node $node_version)"
      npm ci --no-audit --no-fund >&2
    else
      say "npm ci --omit=dev (node $node_version; what serving needs)"
      npm ci --omit=dev --no-audit --no-fund >&2
    fi
    printf '%s %s\n' "$lock_hash" "$mode" > "$stamp"
  fi
else
  say "npm install (no package-lock.json yet; node $node_version)"
  npm install --no-audit --no-fund >&2
  printf '%s dev\n' "$(sha256sum package-lock.json | cut -d' ' -f1)" > "$stamp"
fi
