#!/usr/bin/env bash
# Install the ØMQ RAFT reference server (npm zmq-raft 0.5.0) into DEST (default
# .reference/zmq-raft), its native zeromq binding built against the system libzmq.
#
#   tests/interop/reference/install.sh [DEST]
#
# Idempotent: a stamp (the checksum of package.json + package-lock.json) and a
# load check make a second run take well under a second. Without node or npm it
# prints one line and exits 0 (the interop tests then skip, saying why). With
# them, any failure is one line on stderr and exit 1.
#
# Steps (each needed, see issue 11):
# * libzmq headers: apt-get install libzmq3-dev, only as root and only when missing;
# * npm ci from the committed lock: zmq-raft 0.5.0, debug beside it (its bin tools
#   require it), nan overridden to ^2.22.0 (zeromq 5.2.8 pins nan 2.14.2, which
#   does not compile against node >= 16's V8);
# * npm_config_zmq_external=true in the environment: zeromq's prepare script then
#   skips downloading and building its bundled libzmq 4.2.2, and node-gyp turns the
#   variable into the gyp variable zmq_external, linking -lzmq (the system library).
#   (As a command-line flag, npm 11 warns that --zmq-external is an unknown config.)
# * "allowScripts" in package.json lets npm 11 run zeromq's install script (which
#   builds the binding: no prebuilt one matches node >= 16); `npm rebuild zeromq`
#   follows only if the binding still does not load.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dest="${1:-.reference/zmq-raft}"

say() { echo "reference: $*"; }
die() { echo "reference: $*" >&2; exit 1; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "node or npm not found: not installing the ØMQ RAFT reference server" \
      "(the interop tests and the benchmark's reference side will be skipped)"
  exit 0
fi

stamp_of() { cat "$here/package.json" "$here/package-lock.json" | cksum | cut -d' ' -f1; }
stamp="$(stamp_of)"
loads() {
  (cd "$dest" && node -e "require('zeromq'); require('zmq-raft')") >/dev/null 2>&1
}

if [ -f "$dest/.installed" ] && [ "$(cat "$dest/.installed")" = "$stamp" ] && loads; then
  say "zmq-raft 0.5.0 already installed in $dest"
  exit 0
fi

have_headers() {
  [ -f /usr/include/zmq.h ] || pkg-config --exists libzmq 2>/dev/null
}
if ! have_headers; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing libzmq3-dev (the system libzmq and its headers)"
    (apt-get install -y -qq --no-install-recommends libzmq3-dev >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive \
          apt-get install -y -qq --no-install-recommends libzmq3-dev >/dev/null; }) ||
      die "apt-get install libzmq3-dev failed"
  else
    die "the libzmq headers are missing: install libzmq3-dev (or run this as root)"
  fi
fi

say "installing zmq-raft 0.5.0 into $dest (npm, zeromq built against the system libzmq)"
mkdir -p "$dest"
rm -f "$dest/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dest/"
log="$dest/install.log"
why() {  # the first telling line of npm's output
  { grep -E '^npm (error|ERR!)' "$log" | grep -v 'complete log' || tail -n 1 "$log"; } | head -n 1
}
export npm_config_zmq_external=true
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1 ||
  die "npm ci failed (see $log): $(why)"
if ! loads; then  # an npm that did not run zeromq's install script
  (cd "$dest" && npm rebuild zeromq --loglevel=error) >>"$log" 2>&1 ||
    die "npm rebuild zeromq failed (see $log): $(why)"
fi

binding="$dest/node_modules/zeromq/build/Release/zmq.node"
[ -f "$binding" ] || die "zeromq's native binding was not built (see $log)"
# ldd's whole output first: under pipefail, `ldd | grep -q` fails whenever grep exits at
# its first match before ldd has written the rest (ldd then dies of SIGPIPE)
if command -v ldd >/dev/null 2>&1 && ! grep -q 'libzmq\.so' <<<"$(ldd "$binding")"; then
  die "$binding is not linked against the system libzmq (see $log)"
fi
loads || die "the reference server does not load: $(cd "$dest" && node -e "require('zmq-raft')" 2>&1 | tail -n 1)"
version="$(cd "$dest" && node -p "require('zeromq').version")"
echo "$stamp" >"$dest/.installed"
say "zmq-raft 0.5.0 installed in $dest (zeromq binding on the system libzmq $version)"
