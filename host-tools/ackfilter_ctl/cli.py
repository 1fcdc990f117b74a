"""``ackfilter-ctl``: the command line.

Today it lists the registers of the shipped map (``ackfilter-ctl registers``)
and checks a value against a parameter's range (``ackfilter-ctl check NAME
VALUE``). Talking to a board (``--port``) or the simulated SoC
(``--connect``) comes with the control-plane firmware.
"""

import argparse
import json
import sys

from . import __version__
from .regmap import RegmapError, load

__all__ = ["main"]


def _registers(args, regmap):
    if args.json:
        json.dump(regmap.raw, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'name':<24} {'addr':>5}  {'default':>8}  range")
    for p in regmap.params:
        values = p.get("values")
        rng = " | ".join(f"{v}={k}" for k, v in values.items()) if values else f"{p['min']} .. {p['max']} {p['unit']}"
        print(f"{p['name']:<24}  0x{p['addr']:02x}  {p['default']:>8}  {rng}")
    print()
    print(f"{'counter (64 bits)':<24} {'addr':>5}")
    for c in regmap.counters:
        print(f"{c['name']:<24}  0x{c['addr']:02x}  {'drop' if c['is_drop'] else ''}")
    return 0


def _check(args, regmap):
    try:
        value = regmap.check_value(args.name, args.value)
    except (KeyError, ValueError) as e:
        print(f"ackfilter-ctl: error: {e.args[0]}", file=sys.stderr)
        return 2
    print(f"{args.name} = {value}: within range")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ackfilter-ctl", description="Tune an ackfilter board: "
                                 "registers, counters and thresholds.")
    ap.add_argument("--version", action="version", version=f"ackfilter-ctl {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("registers", help="list the parameters and counters of the register map")
    p.add_argument("--json", action="store_true", help="print the map as JSON")
    p.set_defaults(func=_registers)
    p = sub.add_parser("check", help="check a value against a parameter's range")
    p.add_argument("name", help="parameter name (see `registers`)")
    p.add_argument("value", help="integer, or a value name for enum parameters")
    p.set_defaults(func=_check)
    args = ap.parse_args(argv)
    try:
        regmap = load()
    except RegmapError as e:
        print(f"ackfilter-ctl: error: {e}", file=sys.stderr)
        return 1
    return args.func(args, regmap)


if __name__ == "__main__":
    sys.exit(main())
