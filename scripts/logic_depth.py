#!/usr/bin/env python3
"""Rank the deepest register-to-register paths of a synthesized ECP5 netlist.

nextpnr reports one critical path per clock, and a place-and-route of the
core takes ~20 minutes here. This reads the flattened Yosys JSON netlist
that ``make reports`` leaves in ``build/reports/work/<target>/netlist.json``
and estimates every path with a crude delay model (cell delay plus one
routed hop per general-routing net, the figures below are rough -6 speed
grade values with ~1 ns per routed net, which is what the congested core
sees), then prints the worst endpoints grouped by signal name with the path
to each. It is a triage tool for finding what to pipeline next, not a timing
sign-off: nextpnr's figure is the one that counts.

    python scripts/logic_depth.py build/reports/work/uplink-core/netlist.json [-n 25]
"""

import argparse
import json
import re
import sys
from collections import defaultdict

ROUTE = 1.0          # ns per general-routing hop
CELL = {             # (input kind -> output) delays in ns
    "LUT4": 0.40,
    "PFUMX": 0.25,
    "L6MUX21": 0.25,
}
CCU2C_IN_S, CCU2C_IN_CO, CCU2C_CIN_CO, CCU2C_CIN_S = 0.50, 0.45, 0.06, 0.30
FF_CQ, FF_SETUP = 0.50, 0.10
EBR_CQ = 4.30
DPR_READ = 0.90
MULT_COMB = 4.50

DEDICATED = {("PFUMX", "ALUT"), ("PFUMX", "BLUT"), ("L6MUX21", "D0"), ("L6MUX21", "D1"),
             ("CCU2C", "CIN")}


def load(path):
    d = json.load(open(path))
    tops = [n for n, m in d["modules"].items() if m.get("attributes", {}).get("top")]
    name = tops[0] if tops else max(d["modules"], key=lambda n: len(d["modules"][n].get("cells", {})))
    return d["modules"][name]


def analyse(mod):
    cells = mod["cells"]
    drivers = {}                              # bit -> (cell, port)
    sinks = defaultdict(list)                 # bit -> [(cell, port)]
    for cname, c in cells.items():
        dirs = c.get("port_directions", {})
        for port, bits in c["connections"].items():
            for b in bits:
                if isinstance(b, str):
                    continue
                if dirs.get(port) == "output":
                    drivers[b] = (cname, port)
                else:
                    sinks[b].append((cname, port))
    netname = {}
    for n, info in mod["netnames"].items():
        for i, b in enumerate(info["bits"]):
            if isinstance(b, int) and (b not in netname or n.startswith("$") is False and netname[b].startswith("$")):
                netname[b] = f"{n}[{i}]" if len(info["bits"]) > 1 else n

    def is_comb(cname):
        c = cells[cname]
        t = c["type"]
        if t in ("LUT4", "PFUMX", "L6MUX21", "CCU2C"):
            return True
        if t == "MULT18X18D":
            p = c.get("parameters", {})
            return all(str(p.get(k, "NONE")).strip() == "NONE"
                       for k in ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_OUTPUT_CLK"))
        return False

    arrival = {}                              # bit -> (time, prev_bit or None, cell)
    # start points
    for b, (cname, port) in drivers.items():
        t = cells[cname]["type"]
        if t == "TRELLIS_FF":
            arrival[b] = (FF_CQ, None, cname)
        elif t == "DP16KD":
            arrival[b] = (EBR_CQ, None, cname)
        elif t == "TRELLIS_DPR16X4":
            arrival[b] = (DPR_READ, None, cname)   # refined below via RAD
        elif t == "MULT18X18D" and not is_comb(cname):
            arrival[b] = (FF_CQ, None, cname)
    for b in mod.get("ports", {}).values():
        if b["direction"] == "input":
            for x in b["bits"]:
                if isinstance(x, int):
                    arrival[x] = (0.0, None, "<port>")

    sys.setrecursionlimit(100000)
    memo_stack = set()

    def arr(bit):
        if bit in arrival:
            return arrival[bit][0]
        if bit not in drivers:
            arrival[bit] = (0.0, None, "<const>")
            return 0.0
        cname, oport = drivers[bit]
        c = cells[cname]
        t = c["type"]
        if bit in memo_stack:
            arrival[bit] = (0.0, None, "<loop>")
            return 0.0
        memo_stack.add(bit)
        best = (0.0, None)
        for port, bits in c["connections"].items():
            if c["port_directions"].get(port) != "input":
                continue
            for ib in bits:
                if isinstance(ib, str):
                    continue
                a = arr(ib)
                hop = 0.0 if (t, port) in DEDICATED else ROUTE
                if t == "CCU2C":
                    if port == "CIN":
                        d = CCU2C_CIN_CO if oport == "COUT" else CCU2C_CIN_S
                    else:
                        # an input of the lower half reaches S1/COUT too; upper half only S1/COUT
                        if oport == "S0" and port.endswith("1"):
                            continue
                        d = CCU2C_IN_CO if oport == "COUT" else CCU2C_IN_S
                elif t == "MULT18X18D":
                    d = MULT_COMB
                else:
                    d = CELL.get(t, 0.4)
                if a + hop + d > best[0]:
                    best = (a + hop + d, ib)
        memo_stack.discard(bit)
        arrival[bit] = (best[0], best[1], cname)
        return best[0]

    # DPR async read: data out depends on RAD
    for cname, c in cells.items():
        if c["type"] == "TRELLIS_DPR16X4":
            rad = [b for b in c["connections"].get("RAD", []) if isinstance(b, int)]
            worst = max((arr(b) + ROUTE for b in rad), default=0.0)
            src = max(rad, key=lambda b: arr(b), default=None)
            for b in c["connections"].get("DO", []):
                if isinstance(b, int):
                    arrival[b] = (worst + DPR_READ, src, cname)

    endpoints = []
    for cname, c in cells.items():
        t = c["type"]
        ports = []
        if t == "TRELLIS_FF":
            ports = ["DI", "M", "CE", "LSR"]
        elif t == "DP16KD":
            ports = [p for p in c["connections"] if c["port_directions"].get(p) == "input"
                     and not p.startswith("CLK")]
        elif t == "TRELLIS_DPR16X4":
            ports = ["DI", "WAD", "WRE"]
        elif t == "MULT18X18D" and not is_comb(cname):
            ports = [p for p in c["connections"] if p[:1] in "AB" and c["port_directions"].get(p) == "input"]
        for p in ports:
            for b in c["connections"].get(p, []):
                if isinstance(b, int):
                    endpoints.append((arr(b) + ROUTE + FF_SETUP, cname, p, b))
    return endpoints, arrival, netname, cells


def group(name):
    name = re.sub(r"_TRELLIS_FF_Q(_\d+)?$", "", name)
    name = re.sub(r"\$\d+", "", name)
    return re.sub(r"\[\d+\]|_\d+$", "", name)


def trace(bit, arrival, netname, cells):
    path = []
    while bit is not None and bit in arrival:
        t, prev, cname = arrival[bit]
        path.append((t, netname.get(bit, f"#{bit}"), cells.get(cname, {}).get("type", cname)))
        bit = prev
    return path[::-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("netlist")
    ap.add_argument("-n", type=int, default=20, help="endpoint groups to list (default 20)")
    ap.add_argument("--paths", type=int, default=5, help="print the path of the first N groups")
    ap.add_argument("--target-ns", type=float, default=16.0)
    ap.add_argument("--match", default=None, help="only endpoints whose name matches this regex")
    args = ap.parse_args(argv)
    endpoints, arrival, netname, cells = analyse(load(args.netlist))
    worst = {}
    for t, cname, port, bit in endpoints:
        if args.match and not re.search(args.match, cname):
            continue
        g = group(cname)
        if g not in worst or t > worst[g][0]:
            worst[g] = (t, cname, port, bit)
    ranked = sorted(worst.items(), key=lambda kv: -kv[1][0])[: args.n]
    print(f"{'est ns':>7}  endpoint (grouped)")
    for g, (t, cname, port, bit) in ranked:
        flag = " MISS" if t > args.target_ns else ""
        print(f"{t:7.2f}  {g}.{port}{flag}")
    for g, (t, cname, port, bit) in ranked[: args.paths]:
        print(f"\n== {g}.{port}: {t:.2f} ns")
        for at, net, typ in trace(bit, arrival, netname, cells):
            print(f"  {at:6.2f}  {typ:<12} {net}")


if __name__ == "__main__":
    main()
