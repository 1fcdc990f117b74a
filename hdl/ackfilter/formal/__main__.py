"""``python -m ackfilter.formal`` (``make formal``): every proof, its cover
statements and its mutations; a table of the results; exit 1 if a proof
fails, a cover is not reached, or a mutation survives."""

import argparse
import sys
import tempfile
import time

from . import FormalError, run
from .proofs import PROOFS


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ackfilter.formal", description=__doc__)
    ap.add_argument("--only", metavar="NAME", help="one proof (of " + ", ".join(p.name for p in PROOFS) + ")")
    ap.add_argument("--workdir", metavar="DIR", help="keep SymbiYosys's files there (default: a temporary directory)")
    ap.add_argument("--deep", action="store_true",
                    help="also the covers too deep for every run (minutes each: " +
                    ", ".join(f"{p.name} at {p.deep_depth} cycles" for p in PROOFS if p.deep) + ")")
    args = ap.parse_args(argv)
    proofs = [p for p in PROOFS if args.only in (None, p.name)]
    if not proofs:
        ap.error(f"no proof {args.only!r}")
    bad = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ackfilter-formal-") as tmp:
        work = args.workdir or tmp
        print(f"{'proof':24} {'depth':>5} {'prove':>8} {'cover':>8}  mutations failing the proof")
        for p in proofs:
            try:
                proven = run(p.name, p.make(), depth=p.depth, mode="prove", workdir=work)
                covered = (run(p.name, p.make(), depth=p.cover_depth, mode="cover", workdir=work)
                           if p.cover_depth is not None else None)
                deep = (run(f"{p.name}-deep", p.deep(), depth=p.deep_depth, mode="cover", workdir=work)
                        if args.deep and p.deep else None)
                killed = {name: not run(f"{p.name}-m{i}", make(), depth=p.depth, mode="prove",
                                         workdir=work).passed
                          for i, (name, make) in enumerate(p.mutations.items())}
            except FormalError as e:
                print(f"ackfilter formal: {e}", file=sys.stderr)
                return 2
            ok = (proven.passed and (covered is None or covered.passed) and (deep is None or deep.passed)
                  and all(killed.values()))
            bad += not ok
            cover = (f"{('PASS' if covered.passed else 'FAIL'):>4} {covered.seconds:3.0f}s" if covered
                     else f"{'-':>8}")
            print(f"{p.name:24} {p.depth:>5} {('PASS' if proven.passed else 'FAIL'):>4} {proven.seconds:3.0f}s "
                  f"{cover}  {sum(killed.values())} of {len(killed)}", flush=True)
            if p.cover_depth is None:
                print(f"    (its harness extends {p.covered_by}'s, whose covers are reached)")
            if deep:
                print(f"    deep covers ({p.deep_depth} cycles): {'PASS' if deep.passed else 'FAIL'} "
                      f"{deep.seconds:.0f}s")
            for name, k in killed.items():
                print(f"    {'failed' if k else 'SURVIVED'}: {name}")
    print(f"{len(proofs) - bad} of {len(proofs)} proofs hold ({time.monotonic() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
