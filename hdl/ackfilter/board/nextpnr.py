"""The nextpnr-ecp5 log parser, shared by the board build and the reports."""

import re

__all__ = ["parse_nextpnr_log"]

_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz\s+\((PASS|FAIL) at ([\d.]+) MHz\)")
_UTIL_RE = re.compile(r"^\w+:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%\s*$")
_LUTS_RE = re.compile(r"^Info:\s+(Total LUT4s|logic LUTs|carry LUTs|RAM LUTs|RAMW LUTs|Total DFFs):"
                      r"\s+(\d+)/\s*(\d+)")


def parse_nextpnr_log(text):
    """Fmax per clock and utilization from a nextpnr log.

    nextpnr prints "Max frequency for clock ..." after placement and again
    after routing; the last one of each clock counts. Returns
    ``{"fmax": {clock: {"achieved", "constraint"}}, "utilization": {bel: {"used", "available"}},
    "luts": {"Total LUT4s"/"logic LUTs"/"carry LUTs"/"RAM LUTs"/"RAMW LUTs"/"Total DFFs":
    {"used", "available"}}}`` (``luts``: nextpnr's count before packing).
    """
    fmax, util, luts = {}, {}, {}
    in_util = False
    for line in text.splitlines():
        m = _FMAX_RE.search(line)
        if m:
            fmax[m.group(1)] = {"achieved": float(m.group(2)), "constraint": float(m.group(4))}
            continue
        m = _LUTS_RE.match(line)
        if m:
            luts[m.group(1)] = {"used": int(m.group(2)), "available": int(m.group(3))}
            continue
        if "Device utilisation:" in line or "Device utilization:" in line:
            in_util, util = True, {}
            continue
        if in_util:
            m = _UTIL_RE.match(line.strip())
            if m:
                util[m.group(1)] = {"used": int(m.group(2)), "available": int(m.group(3))}
            elif line.strip() not in ("", "Info:"):
                in_util = False
    return {"fmax": fmax, "utilization": util, "luts": luts}
