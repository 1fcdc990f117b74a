"""``ackfilter-ctl``: tune an ackfilter board (or its simulation) from a laptop.

Offline (the shipped register map only): ``registers``, ``check``, ``tune``
without ``--apply``. On a device (``--port DEVICE`` or ``--connect
HOST:PORT``): ``status``, ``get``, ``set``, ``save``, ``load``, ``defaults``,
``reset-counters``, ``watch``, ``plot``, ``tune --apply``. ``--json`` makes
every command print one JSON document for scripts.

Exit status: 0 done, 1 the device or link failed (no device, a timeout, a
firmware error), 2 bad arguments or a value out of range, 3 a firmware of
another version.
"""

import argparse
import json
import sys
import time

from . import __version__
from .device import Device, DeviceError, DeviceTimeout, VersionMismatch
from .link import DEFAULT_BAUD, LinkError, open_link
from .regmap import RegmapError, load
from .tune import TuneError, rate_from_cpb, tune
from .units import RATE_FORMS, parse_rate

__all__ = ["main"]

EXIT_DEVICE, EXIT_USAGE, EXIT_VERSION = 1, 2, 3


class UsageError(ValueError):
    pass


def _print_json(obj):
    json.dump(obj, sys.stdout, indent=2, sort_keys=False)
    print()


# --- offline -----------------------------------------------------------------------

def _registers(args, regmap, _dev):
    if args.json:
        _print_json(regmap.raw)
        return 0
    print(f"{'name':<24} {'addr':>5}  {'default':>8}  range")
    for p in regmap.params:
        values = p.get("values")
        rng = " | ".join(f"{v}={k}" for k, v in values.items()) if values \
            else f"{p['min']} .. {p['max']} {p['unit']}" + (f", steps of {p['step']}" if "step" in p else "")
        print(f"{p['name']:<24}  0x{p['addr']:02x}  {p['default']:>8}  {rng}")
    for p in regmap.firmware_params:
        print(f"{p['name']:<24}  {'fw':>4}  {p['default']:>8}  {p['min']} .. {p['max']} {p['unit']}")
    print()
    print(f"{'counter (64 bits)':<24} {'addr':>5}")
    for c in regmap.counters:
        print(f"{c['name']:<24}  0x{c['addr']:02x}  {'drop' if c['is_drop'] else ''}")
    return 0


def _check(args, regmap, _dev):
    value = _value(regmap, args.name, args.value)
    if args.json:
        _print_json({"name": args.name, "value": value, "ok": True})
    else:
        print(f"{args.name} = {value}: within range")
    return 0


def _value(regmap, name, text):
    try:
        return regmap.check_value(name, text)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    except ValueError as e:
        raise UsageError(str(e)) from None


# --- on a device -------------------------------------------------------------------

def _status(args, regmap, dev):
    values = dev.get_all()
    stats = dev.stats()
    f_sys = regmap.raw["f_sys_hz"]
    rate = rate_from_cpb(values.get("shaper_cpb_q16", 0), f_sys)
    modes = {v: k for k, v in regmap.param("ack_mode").get("values", {}).items()}
    ports = _board(regmap, stats)
    out = {"device": dev.link.name, "version": dev.version, "params": values, "stats": stats,
           "shaper_rate_bps": round(rate), **ports}
    if args.json:
        _print_json(out)
        return 0
    v = dev.version
    print(f"{dev.link.name}: firmware {v.get('firmware')}, register map {v.get('regmap')}, "
          f"gateware id {v.get('gateware_id')}, up {stats.get('uptime_ms', 0) / 1000:.0f} s")
    print(f"  ACK filter   {modes.get(values['ack_mode'], values['ack_mode'])}, "
          f"data share {values['data_share']}/256")
    print(f"  shaper       {'off (unshaped)' if not rate else f'{rate / 1e3:.1f} kb/s'}")
    red = "off" if not values["red_enable"] else (
        f"on, {values['red_min_bytes']}..{values['red_max_bytes']} bytes, "
        f"max_p {values['red_max_p'] / 65536:.3f}, average {stats.get('info.red_avg_bytes', 0)} bytes")
    print(f"  RED          {red}")
    print(f"  segmenter    {'off' if not values['chunk_bytes'] else str(values['chunk_bytes']) + '-byte chunks'}")
    if "info.data_queues" in stats:
        n = stats["info.data_queues"]
        hosts = stats.get("info.host_buckets", 0)
        fair = f", hosts first ({hosts} buckets)" if n and hosts else ""
        print(f"  upload data  {f'{n} per-flow queues, sparse flows first' + fair if n else 'one FIFO'}")
    if ports:
        mbps = ("10", "100", "1000", "?")
        links = ", ".join(f"{role} {mbps[p['speed']]} Mb/s" + ("" if p["rxc_ok"] else " (no RX clock)")
                          for role, p in ports["ports"].items())
        print(f"  ports        {links} (the PHYs' RX clocks)")
        phys = "; ".join(
            f"{n}: id {p['id']:#010x}, " + (f"link {mbps[p['speed']]} Mb/s "
                                           f"{'full' if p['full_duplex'] else 'half'} duplex"
                                           if p["link"] else "no link")
            if p["present"] else f"{n}: none"
            for n, p in ports["phys"].items())
        print(f"  PHYs (MDIO)  {phys}")
    print(f"  frames in {stats.get('frames_in', 0)}, out {stats.get('frames_out', 0)}, "
          f"ACKs superseded {stats.get('acks_superseded', 0)} of {stats.get('acks_in', 0)}, "
          f"dropped {sum(stats.get(c['name'], 0) for c in regmap.counters if c['is_drop'])}")
    for w in dev.warnings:
        print(f"  warning: {w}")
    return 0


def _fields(word, fields):
    return {f["name"]: (word >> f["lsb"]) & ((1 << f["width"]) - 1) for f in fields}


def _board(regmap, stats):
    """The board's words in ``stats`` (``info.board_*``), decoded by the
    register map's field tables: ``{"ports": {...}, "phys": {...}}``, or {}
    when the firmware does not report them."""
    fields = regmap.raw.get("board_fields")
    if not fields or "info.board_lan_link" not in stats:
        return {}
    ports = {role: _fields(stats[f"info.board_{role}_link"], fields["link"]) for role in ("lan", "modem")}
    phys = {}
    for n in (0, 1):
        phy = _fields(stats.get(f"info.board_phy{n}_status", 0), fields["phy"])
        phy["id"] = stats.get(f"info.board_phy{n}_id", 0)
        phys[n] = phy
    return {"ports": ports, "phys": phys}


def _get(args, regmap, dev):
    unknown = [n for n in args.names if n not in _names(regmap)]
    if unknown:
        raise UsageError(f"no parameter named {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(_names(regmap)))}")
    values = dev.get_all() if not args.names else {n: dev.get(n) for n in args.names}
    if args.json:
        _print_json(values)
    else:
        for k, v in values.items():
            print(f"{k} {v}")
    return 0


def _names(regmap):
    return {p["name"] for p in regmap.all_params}


def _set(args, regmap, dev):
    if len(args.pairs) % 2:
        raise UsageError("set takes NAME VALUE pairs")
    todo = [(n, _value(regmap, n, v)) for n, v in zip(args.pairs[::2], args.pairs[1::2])]
    done = {n: dev.set(n, v) for n, v in todo}
    if args.json:
        _print_json(done)
    else:
        for k, v in done.items():
            print(f"{k} {v}")
    return 0


def _simple(command, key):
    def run(args, regmap, dev):
        out = dev.command(command, timeout=max(dev.timeout, 10.0))
        if args.json:
            _print_json({key: True, "output": out, "warnings": dev.warnings})
        else:
            for line in out:
                print(line)
        return 0
    return run


def _sample(dev):
    return time.monotonic(), dev.stats()


def _rates(prev, cur):
    (t0, a), (t1, b) = prev, cur
    dt = max(t1 - t0, 1e-9)
    return {k: (b[k] - a.get(k, 0)) / dt for k in b if not k.startswith("info.")}


def _watch(args, regmap, dev):
    prev = _sample(dev)
    n = 0
    while args.count is None or n < args.count:
        time.sleep(args.interval)
        cur = _sample(dev)
        rates = _rates(prev, cur)
        n += 1
        if args.json:
            print(json.dumps({"t": round(cur[0], 3), "counters": cur[1],
                              "per_second": {k: round(v, 3) for k, v in rates.items()}}), flush=True)
        else:
            if sys.stdout.isatty():
                print("\x1b[H\x1b[2J", end="")
            print(f"{dev.link.name}  every {args.interval:g} s  (Ctrl-C to stop)")
            print(f"{'counter':<22} {'value':>14} {'per second':>12}")
            for k, v in cur[1].items():
                per = rates.get(k)
                print(f"{k:<22} {v:>14} {'' if per is None else f'{per:>12.1f}'}")
            print(flush=True)
        prev = cur
    return 0


def _plot(args, regmap, dev):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("plot needs matplotlib: pip install 'ackfilter-ctl[plot]'") from None
    names = args.counters.split(",") if args.counters else \
        ["frames_in", "frames_out", "acks_superseded", "drop_red"]
    known = {c["name"] for c in regmap.counters}
    bad = [n for n in names if n not in known]
    if bad:
        raise UsageError(f"no counter {', '.join(bad)}; known: {', '.join(sorted(known))}")
    t0, first = _sample(dev)
    series = {n: [] for n in names}
    times = []
    prev = (t0, first)
    end = t0 + args.duration
    while time.monotonic() < end:
        time.sleep(args.interval)
        cur = _sample(dev)
        rates = _rates(prev, cur)
        times.append(cur[0] - t0)
        for n in names:
            series[n].append(rates.get(n, 0.0))
        prev = cur
        if not args.json:
            print(f"plot: {cur[0] - t0:.0f}/{args.duration:g} s", file=sys.stderr)
    fig, ax = plt.subplots(figsize=(8, 4))
    for n in names:
        ax.plot(times, series[n], label=n)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("per second")
    ax.set_title(f"ackfilter counters, {dev.link.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    if args.json:
        _print_json({"out": args.out, "t": times, "per_second": series})
    else:
        print(f"wrote {args.out}")
    return 0


def _tune(args, regmap, dev):
    try:
        regs, why = tune(regmap, up_bps=args.up, down_bps=args.down, rtt_ms=args.rtt,
                         link=args.link, red=args.red)
    except TuneError as e:
        raise UsageError(str(e)) from None
    applied = {}
    if args.apply:
        for name, value in regs.items():
            applied[name] = dev.set(name, value)
    if args.json:
        _print_json({"registers": regs, "reasons": why, "applied": bool(args.apply)})
        return 0
    for line in why:
        print(f"- {line}")
    print()
    for name, value in regs.items():
        print(f"{name} {value}")
    if args.apply:
        print(f"\napplied {len(applied)} parameters to {dev.link.name} (not saved: `ackfilter-ctl save`)")
    else:
        print("\n(not applied: add --apply and --port/--connect)")
    return 0


# --- main ---------------------------------------------------------------------------

def _milliseconds(text):
    """``40``, ``40ms``, ``0.04s`` -> 40.0 (ms), for argparse."""
    t = text.strip().lower()
    scale = 1.0
    if t.endswith("ms"):
        t = t[:-2]
    elif t.endswith("s"):
        t, scale = t[:-1], 1000.0
    try:
        value = float(t) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a time: {text!r} (e.g. 40, 40ms, 0.04s)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text!r}")
    return value


def _rate(text):
    """A rate in bit/s, read as tc(8) reads it (``units.parse_rate``), for argparse."""
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _parser():
    ap = argparse.ArgumentParser(prog="ackfilter-ctl", description=__doc__.split("\n\n")[0],
                                 epilog="Exit status: 0 done, 1 device or link failure, 2 bad "
                                        "arguments or value, 3 firmware of another version.")
    ap.add_argument("--version", action="version", version=f"ackfilter-ctl {__version__}")
    where = ap.add_argument_group("device")
    where.add_argument("--port", metavar="DEVICE", help="the board's serial port (e.g. /dev/ttyUSB0)")
    where.add_argument("--connect", metavar="HOST:PORT",
                       help="a simulated SoC's UART (`make sim-soc`: localhost:2323)")
    where.add_argument("--baud", type=int, default=DEFAULT_BAUD, help="serial baud rate (115200)")
    where.add_argument("--timeout", type=float, default=3.0, metavar="S",
                       help="seconds to wait for an answer (default 3; the simulation may need more)")
    ap.add_argument("--json", action="store_true", help="print JSON for scripts")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name, func, help, device=True):
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=func, needs_device=device)
        return p

    cmd("registers", _registers, "list the parameters and counters of the register map", device=False)
    p = cmd("check", _check, "check a value against a parameter's range", device=False)
    p.add_argument("name", help="parameter name (see `registers`)")
    p.add_argument("value", help="integer, or a value name for enum parameters")
    cmd("status", _status, "firmware version, the main settings and counters")
    p = cmd("get", _get, "read parameters (all, or the names given)")
    p.add_argument("names", nargs="*", metavar="NAME")
    p = cmd("set", _set, "write parameters: NAME VALUE [NAME VALUE ...] (checked against the "
                         "ranges first; enum values by name too)")
    p.add_argument("pairs", nargs="+", metavar="NAME VALUE")
    cmd("save", _simple("save", "saved"), "save every parameter to the board's flash")
    cmd("load", _simple("load", "loaded"), "reload the saved parameters")
    cmd("defaults", _simple("defaults", "defaults"), "set every parameter to its default (not saved)")
    cmd("reset-counters", _simple("reset-counters", "reset"), "count from zero again")
    p = cmd("watch", _watch, "live counters and rates in a refreshing table")
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples")
    p.add_argument("--count", type=int, metavar="N", help="stop after N samples (default: Ctrl-C)")
    p = cmd("plot", _plot, "sample counters' rates over time into a PNG")
    p.add_argument("--out", default="ackfilter.png", help="PNG file (default ackfilter.png)")
    p.add_argument("--duration", type=float, default=60.0, metavar="S", help="seconds (default 60)")
    p.add_argument("--interval", type=float, default=1.0, metavar="S", help="seconds between samples")
    p.add_argument("--counters", metavar="A,B", help="counters to plot (default frames in/out, "
                                                     "ACKs superseded, RED drops)")
    p = cmd("tune", _tune, "derive the settings for a link and print the reasoning "
                           "(--apply writes them to the device)", device=False)
    p.add_argument("--up", required=True, type=_rate, metavar="RATE",
                   help=f"uplink rate as tc(8) writes it, e.g. 1mbit, 64kbit or 256000 (bit/s): "
                        f"{RATE_FORMS}")
    p.add_argument("--down", required=True, type=_rate, metavar="RATE",
                   help="downlink rate, the same way, e.g. 16mbit")
    p.add_argument("--rtt", type=_milliseconds, default=50.0, metavar="TIME",
                   help="typical round-trip time to the servers: 40, 40ms or 0.04s (a bare "
                        "number is ms; default 50)")
    p.add_argument("--link", default="ethernet", metavar="TYPE",
                   help="ethernet, docsis, adsl-pppoe, adsl-pppoa, adsl-bridged, vdsl-pppoe, "
                        "vdsl-bridged, unknown (default ethernet)")
    p.add_argument("--red", action="store_true",
                   help="RED on the upload queue too (off by default: with the flow queues it "
                        "shortened no wait in the measured runs and cost upload rate)")
    p.add_argument("--apply", action="store_true", help="write the values to the device")
    return ap


def main(argv=None):
    ap = _parser()
    args = ap.parse_args(argv)
    try:
        regmap = load()
    except RegmapError as e:
        print(f"ackfilter-ctl: error: {e}", file=sys.stderr)
        return EXIT_DEVICE
    needs = args.needs_device or getattr(args, "apply", False)
    dev = None
    try:
        if needs:
            if (args.port is None) == (args.connect is None):
                raise UsageError(f"{args.command} talks to a device: give --port DEVICE "
                                 "(the board) or --connect HOST:PORT (make sim-soc)")
            dev = Device(open_link(port=args.port, connect=args.connect, baud=args.baud),
                         timeout=args.timeout).open()
        return args.func(args, regmap, dev)
    except UsageError as e:
        print(f"ackfilter-ctl: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except VersionMismatch as e:
        print(f"ackfilter-ctl: error: {e}", file=sys.stderr)
        return EXIT_VERSION
    except (LinkError, DeviceTimeout) as e:
        print(f"ackfilter-ctl: error: {e}", file=sys.stderr)
        return EXIT_DEVICE
    except DeviceError as e:
        print(f"ackfilter-ctl: error: the device says: {e}", file=sys.stderr)
        return EXIT_DEVICE
    except KeyboardInterrupt:
        return 0
    finally:
        if dev is not None:
            dev.close()


if __name__ == "__main__":
    sys.exit(main())
