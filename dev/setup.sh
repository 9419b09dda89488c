# Sourced by dev/quickstart and dev/test: make .venv with swath installed. SWATH_INSTALL_EXTRAS names the extras
# (unset: "test", i.e. pytest, the checkers, playwright, pandas, installed editable, for every dev script and for
# sourcing it by hand); dev/quickstart sets it empty and gets a plain `pip install .`, as a user would: no test
# tools, and no editable-install notices (setuptools explains its import finder for the layer folders).
# Re-installs only when pyproject.toml changed since the last install, or extras are wanted that are not there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
    # apt_install PACKAGE... : install Debian packages (once per run updates the index)
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "swath: need the packages '$*' but this machine has no apt-get; install them and rerun" >&2
        return 1
    fi
    if [ -z "${SWATH_APT_UPDATED:-}" ]; then
        as_root apt-get update -qq
        export SWATH_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "$@" >/dev/null
}

"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "swath needs Python 3.11 or newer; found $("$PY" --version 2>&1)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
    echo "swath: creating .venv with $("$PY" --version)" >&2
    if ! "$PY" -m venv .venv 2>/dev/null; then
        rm -rf .venv
        apt_install python3-venv
        "$PY" -m venv .venv
    fi
fi

# The CSV encoder is a C extension; without a compiler and Python's headers the build goes on without it
# (the csv module writes the same files, slower), so failing to get them here is not an error.
if ! command -v cc >/dev/null 2>&1 || ! "$PY" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    apt_install gcc "$(basename "$(readlink -f "$(command -v "$PY")")")-dev" 2>/dev/null \
        || echo "swath: no C compiler or Python headers; CSV exports will use the slower csv module" >&2
fi

STAMP=.venv/.swath-installed
EXTRAS="${SWATH_INSTALL_EXTRAS-test}"
WANT="$(cat pyproject.toml setup.py exporters/_outbuf.h exporters/_csvrow.c exporters/_tablerow.c \
    platforms/twitter/_jsontext.c harvesters/_gzmembers.c | sha1sum | cut -d' ' -f1)"
HAVE="$(cat "$STAMP" 2>/dev/null || true)"  # "<sha1> <extras>"
# a venv made with the test extras serves the quickstart as it is
if [ "${HAVE%% *}" != "$WANT" ] || { [ -n "$EXTRAS" ] && [ "$HAVE" != "$WANT $EXTRAS" ]; }; then
    echo "swath: installing swath${EXTRAS:+ with [$EXTRAS]} and its dependencies into .venv (first run takes a minute)" >&2
    .venv/bin/python -m pip install -q --upgrade pip
    if [ -n "$EXTRAS" ]; then
        .venv/bin/python -m pip install -q -e ".[$EXTRAS]"
    else
        .venv/bin/python -m pip install -q .
    fi
    echo "$WANT $EXTRAS" > "$STAMP"
fi
export PATH="$ROOT/.venv/bin:$PATH"
