#!/usr/bin/env bash
# Install memsync with its test dependencies (Azurite, moto's S3 server, Ceph's S3 gateway and
# Claude Code included) and run the whole suite; then the whole suite again with fcntl hidden
# (as on Windows).
# Usage: scripts/test.sh [pytest args...]
# pytest runs in two worker processes (pytest-xdist; `-n 4` or `-n 0` among the args overrides):
# most tests wait on a memsync subprocess or a server, so two workers halve the time on the two
# cores CI has. Each worker starts its own servers on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."

AZURITE_VERSION="3.37.0"
S3RVER_VERSION="3.7.1"  # an S3 server that ignores conditional writes: memsync must refuse it
CLAUDE_CODE_VERSION="2.1.332"  # the Claude Code CLI the end-to-end suite runs (docs/claude-code.md)
TOOLS="$PWD/.tools"

# Debian packages some tests need, installed where this is a Debian-like machine run as root
# (elsewhere those tests say why they skip; in CI the Ceph ones fail), in the background while
# pip and npm install the rest:
# - fusefat, dosfstools: a case-insensitive file system (a FAT image through FUSE) for
#   tests/test_names.py;
# - age: tests/test_crypt_age.py and tests/test_crypt_devices.py decrypt what memsync
#   encrypted without memsync;
# - radosgw, ceph-mon, ceph-osd: Ceph's S3 gateway on a one-OSD cluster in memory, the second
#   S3 server the S3 tests run on (tests/cephrgw.py).
WANTED_PACKAGES=()
command -v fusefat >/dev/null || WANTED_PACKAGES+=(fusefat dosfstools)
command -v age >/dev/null || WANTED_PACKAGES+=(age)
command -v radosgw >/dev/null || WANTED_PACKAGES+=(radosgw ceph-mon ceph-osd)
APT_PID=""
if [ "${#WANTED_PACKAGES[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing ${WANTED_PACKAGES[*]} (Debian packages for the tests) ..."
  apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      "${WANTED_PACKAGES[@]}" >/dev/null 2>&1
  }
  ( apt_install || { apt-get update -q >/dev/null 2>&1 && apt_install; } ||
    echo "some of ${WANTED_PACKAGES[*]} could not be installed: the tests that need them will say so"
  ) &
  APT_PID=$!
fi

python -m pip install --quiet --disable-pip-version-check -e ".[test]"
# moto's S3 server (the test extra's moto[server]) serves the S3 tests; tests/s3server.py starts
# one per session on a free port, as tests/azurite.py does Azurite
python -c "import moto.server" ||
  { echo "moto[server] did not install: the S3 tests need it" >&2; exit 1; }

if [ ! -x "$TOOLS/node_modules/.bin/azurite-blob" ] ||
   ! grep -q "\"version\": \"$AZURITE_VERSION\"" "$TOOLS/node_modules/azurite/package.json" 2>/dev/null; then
  echo "Installing Azurite $AZURITE_VERSION into $TOOLS ..."
  mkdir -p "$TOOLS"
  npm install --prefix "$TOOLS" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION"
fi
export MEMSYNC_AZURITE="$TOOLS/node_modules/.bin/azurite-blob"

# s3rver answers 200 to a create-only PUT of an existing key and to a PUT with a stale ETag;
# tests/test_s3_conditions.py shows memsync refuses it (docs/s3.md). In a folder of its own.
S3RVER_PREFIX="$TOOLS/s3rver-$S3RVER_VERSION"
if ! grep -q "\"version\": \"$S3RVER_VERSION\"" \
     "$S3RVER_PREFIX/node_modules/s3rver/package.json" 2>/dev/null; then
  echo "Installing s3rver $S3RVER_VERSION into $S3RVER_PREFIX ..."
  mkdir -p "$S3RVER_PREFIX"
  npm install --prefix "$S3RVER_PREFIX" --no-audit --no-fund --silent "s3rver@$S3RVER_VERSION"
fi
export MEMSYNC_S3RVER="$S3RVER_PREFIX/node_modules/.bin/s3rver"

# MEMSYNC_CLAUDE_VERSION=latest (or a version) runs the suite against that Claude Code instead,
# installed beside the pinned one: `MEMSYNC_CLAUDE_VERSION=latest scripts/test.sh -k claude_code`
CLAUDE_PREFIX="$TOOLS"
WANTED="${MEMSYNC_CLAUDE_VERSION:-$CLAUDE_CODE_VERSION}"
if [ "$WANTED" = "latest" ]; then
  WANTED="$(npm view @anthropic-ai/claude-code version)"
fi
if [ "$WANTED" != "$CLAUDE_CODE_VERSION" ]; then
  CLAUDE_PREFIX="$TOOLS/claude-code-$WANTED"
fi
if ! grep -q "\"version\": \"$WANTED\"" \
     "$CLAUDE_PREFIX/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null; then
  echo "Installing Claude Code $WANTED into $CLAUDE_PREFIX ..."
  mkdir -p "$CLAUDE_PREFIX"
  npm install --prefix "$CLAUDE_PREFIX" --no-audit --no-fund --silent \
    "@anthropic-ai/claude-code@$WANTED"
fi
echo "Claude Code for the end-to-end tests: $WANTED"
export MEMSYNC_CLAUDE="$CLAUDE_PREFIX/node_modules/.bin/claude"

[ -z "$APT_PID" ] || wait "$APT_PID"
ruff check memsync tests scripts
mypy memsync  # the settings are in pyproject.toml
python -m pytest -n 2 "$@"

# Again, the whole suite, as on a system without fcntl (Windows): fcntl hidden in the test
# process and in every memsync subprocess (tests/conftest.py), so the lock is filelock's
# (README "Platforms"). MEMSYNC_TEST_NO_FCNTL=1 on the command line runs only this pass.
if [ "${MEMSYNC_TEST_NO_FCNTL:-}" != "1" ]; then
  echo "--- the whole suite again without fcntl (MEMSYNC_TEST_NO_FCNTL=1) ---"
  MEMSYNC_TEST_NO_FCNTL=1 python -m pytest -n 2 "$@"
fi
