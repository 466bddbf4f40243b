#!/usr/bin/env bash
# Install what only the tests need (after scripts/setup.sh, which installs what serving needs).
# Idempotent and quick when nothing is missing. Run by `npm test`, `npm run cluster` and `npm run bench`.
#
#   1. The AWS CLI (v1), boto3 and s3cmd for the end-to-end tests: a Python venv in .tools/python
#      with the exact pins of tests/python/requirements.txt (pip from PyPI; redone when it changes).
#   2. rclone and the MinIO client mc for the end-to-end tests, and versitygw (the S3 server each
#      node of `npm run cluster` is): `go install` at the versions pinned below, from the Go module
#      proxy, into .tools/go/bin (a few minutes, once per machine and pin).
#   3. Chromium for the console's end-to-end test (tests/node/console.test.ts drives it with
#      playwright-core): Debian's package, `apt-get install -y chromium`, only when /usr/bin/chromium
#      is missing (as root, or with passwordless sudo). Nothing downloads a browser from elsewhere.
#   4. rustfmt and clippy (rustup components), which `npm test` runs over the core.
#
# First, the npm development dependencies (vitest, typescript, biome …), when scripts/setup.sh
# installed only what serving needs (`npm start`).
#
# Needs: python3 >= 3.10 with its venv module (Debian: python3-venv), go >= 1.24.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/env.sh
. "$here/env.sh"
cd "$SHARDGATE_ROOT"

say() { printf 'setup-test: %s\n' "$*" >&2; }
die() { printf 'setup-test: error: %s\n' "$*" >&2; exit 1; }

mkdir -p .tools
if command -v flock >/dev/null 2>&1; then
  exec 9>.tools/setup-test.lock
  flock 9
fi

# --- 0. npm development dependencies ---------------------------------------------------------
case "$(cat node_modules/.shardgate-install.sha256 2>/dev/null || true)" in
  *" dev") ;;
  *) SHARDGATE_DEV_DEPS=1 bash "$here/setup.sh" ;;
esac

# --- 1. AWS CLI + boto3 in .tools/python -----------------------------------------------------
venv=.tools/python
requirements=tests/python/requirements.txt
py_stamp="$venv/.shardgate-requirements.sha256"
req_hash="$(sha256sum "$requirements" | cut -d' ' -f1)"
py_pins="$(sed -n 's/^\(awscli\|boto3\)==\(.*\)$/\1 \2/p' "$requirements" | paste -sd, - | sed 's/,/, /g')"
venv_ok() { "$venv/bin/python" -c '' 2>/dev/null; }
if [ "$(cat "$py_stamp" 2>/dev/null)" != "$req_hash" ] || [ ! -x "$venv/bin/aws" ] || ! venv_ok; then
  if ! venv_ok; then
    # No venv yet, or a broken one (its base python is gone): make it from the system python3,
    # not from the venv's own bin/, which env.sh may have put first on PATH.
    venv_bin="$SHARDGATE_ROOT/$venv/bin"
    sys_path=":$PATH:"
    sys_path="${sys_path//:$venv_bin:/:}"
    sys_python="$(PATH="$sys_path" command -v python3 || true)"
    [ -n "$sys_python" ] || die "python3 not found (needed for the AWS CLI and boto3 in $venv)"
    "$sys_python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
      die "$sys_python is $("$sys_python" --version 2>&1), need Python >= 3.10 (for awscli and boto3)"
    say "creating a Python venv in $venv ($("$sys_python" --version 2>&1))"
    "$sys_python" -m venv --clear "$venv" >&2 ||
      die "'$sys_python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
  fi
  say "pip install -r $requirements into $venv ($py_pins)"
  "$venv/bin/python" -m pip install --require-virtualenv --disable-pip-version-check --no-input \
    --quiet -r "$requirements" >&2
  [ -x "$venv/bin/aws" ] || die "pip installed no $venv/bin/aws"
  printf '%s\n' "$req_hash" > "$py_stamp"
  . "$here/env.sh"
fi

# --- 2. rclone and mc in .tools/go/bin ------------------------------------------------------
# mc publishes no semver tags, so its pin is the module proxy's pseudo-version of a release commit.
go_tools=(
  "rclone github.com/rclone/rclone@v1.76.0"
  "mc github.com/minio/mc@v0.0.0-20250313080218-cf909e1063a9"
  "versitygw github.com/versity/versitygw/cmd/versitygw@v1.8.0"
)
go_bin="$SHARDGATE_ROOT/.tools/go/bin"
for entry in "${go_tools[@]}"; do
  read -r name module <<<"$entry"
  stamp="$go_bin/.$name.version"
  if [ -x "$go_bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$module" ]; then continue; fi
  command -v go >/dev/null 2>&1 || die "go is needed to build $name for the end-to-end tests (Debian: apt-get install golang, or the Go toolchain on PATH)"
  say "go install $module into .tools/go/bin (a few minutes, once)"
  mkdir -p "$go_bin"
  GOBIN="$go_bin" GOFLAGS=-buildvcs=false go install "$module" >&2
  printf '%s\n' "$module" > "$stamp"
done

# --- 3. Chromium (Debian's package) for the console's end-to-end test ---------------------------
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then as_root=(); elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then as_root=(sudo -n); else as_root=(none); fi
  if [ "${as_root[0]:-}" = none ]; then
    say "warning: /usr/bin/chromium is missing and installing it needs root (apt-get install chromium); the console's browser test will be skipped"
  else
    command -v apt-get >/dev/null 2>&1 || die "/usr/bin/chromium is missing and there is no apt-get to install it (Debian: apt-get install chromium)"
    say "apt-get install chromium (Debian's package, for the console's end-to-end test; once per machine)"
    "${as_root[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium >&2
    [ -x /usr/bin/chromium ] || die "apt-get install chromium left no /usr/bin/chromium"
  fi
fi

# --- 4. rustfmt and clippy ----------------------------------------------------------------------
for component in rustfmt clippy; do
  if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
    say "rustup component add $component"
    rustup component add "$component" >&2
  fi
done

say "ready ($py_pins, rclone, mc, versitygw, chromium, rustfmt, clippy)"
