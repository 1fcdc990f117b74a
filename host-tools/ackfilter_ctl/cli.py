"""``ackfilter-ctl``: tune an ackfilter board (or its simulation) from a laptop.

Offline (the shipped register map only): ``registers``, ``check``, ``tune``
without ``--apply``. On a device (``--port DEVICE`` or ``--connect
HOST:PORT``): ``status``, ``get``, ``set``, ``save``, ``load``, ``defaults``,
``reset-counters``, ``watch``, ``plot``, ``tune --apply``. ``--json`` makes
every command print one JSON document for scripts.

Exit status: 0 done, 1 the device or link failed (no device, a timeout, a
firmware error, a reply that is not the one the protocol promises), 2 bad
arguments or a value out of range, 3 a firmware of another version, 130
interrupted (Ctrl-C). Every failure is one line on stderr,
``ackfilter-ctl: error: ...``; after a ``set`` or ``tune --apply`` that
stopped part way, it also says which parameters had been written.
"""

import argparse
import json
import os
import sys
import time

from . import __version__
from .device import Device, DeviceError, VersionMismatch
from .link import DEFAULT_BAUD, LinkError, open_link
from .regmap import RegmapError, load
from .tune import TuneError, rate_from_cpb, tune
from .units import RATE_FORMS, parse_rate

__all__ = ["main"]

EXIT_DEVICE, EXIT_USAGE, EXIT_VERSION, EXIT_INTERRUPTED = 1, 2, 3, 130
EXIT_STATUS = ("Exit status: 0 done, 1 device or link failure (no answer, a firmware error, an "
               "unexpected reply), 2 bad arguments or value, 3 firmware of another version, "
               "130 interrupted (Ctrl-C).")


class UsageError(ValueError):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line, ``ackfilter-ctl: error: ...``,
    like every other error of the tool (exit status 2)."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


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
    settings = dev.settings()
    f_sys = regmap.raw["f_sys_hz"]
    rate = rate_from_cpb(values.get("shaper_cpb_q16", 0), f_sys)
    modes = {v: k for k, v in regmap.param("ack_mode").get("values", {}).items()}
    ports = _board(regmap, stats)
    out = {"device": dev.link.name, "version": dev.version, "params": values, "stats": stats,
           "settings": settings, "shaper_rate_bps": round(rate), **ports}
    if args.json:
        _print_json(out)
        return 0
    v = dev.version
    print(f"{dev.link.name}: firmware {v.get('firmware')}, register map {v.get('regmap')}, "
          f"gateware id {v.get('gateware_id')}, up {stats.get('uptime_ms', 0) / 1000:.0f} s")
    where = {"flash": lambda: f"flash record {settings['record']}",
             "defaults": lambda: f"defaults ({settings['reason']})",
             "kept": lambda: "kept through a watchdog restart"}[settings["source"]]()
    print(f"  settings     {where}, {'saved' if settings['saved'] else 'not saved (ackfilter-ctl save)'}"
          + (f"; the watchdog restarted the firmware {stats['watchdog_restarts']} times"
             if stats.get("watchdog_restarts") else ""))
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
    words = [f"info.board_{w}" for w in ("lan_link", "modem_link", "phy0_status", "phy1_status",
                                          "phy0_id", "phy1_id")]
    if not fields or not all(w in stats for w in words):
        return {}
    ports = {role: _fields(stats[f"info.board_{role}_link"], fields["link"]) for role in ("lan", "modem")}
    phys = {}
    for n in (0, 1):
        phy = _fields(stats[f"info.board_phy{n}_status"], fields["phy"])
        phy["id"] = stats[f"info.board_phy{n}_id"]
        phys[n] = phy
    return {"ports": ports, "phys": phys}


def _get_check(args, regmap):
    unknown = [n for n in args.names if n not in _names(regmap)]
    if unknown:
        raise UsageError(f"no parameter named {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(_names(regmap)))}")


def _get(args, regmap, dev):
    values = dev.get_all() if not args.names else {n: dev.get(n) for n in args.names}
    if args.json:
        _print_json(values)
    else:
        for k, v in values.items():
            print(f"{k} {v}")
    return 0


def _names(regmap):
    return {p["name"] for p in regmap.all_params}


def _set_check(args, regmap):
    if len(args.pairs) % 2:
        raise UsageError("set takes NAME VALUE pairs")
    args.todo = [(n, _value(regmap, n, v)) for n, v in zip(args.pairs[::2], args.pairs[1::2])]


def _set(args, regmap, dev):
    done = {}
    for name, value in args.todo:
        done[name] = dev.set(name, value)
        args.applied.append((name, value))
    if args.json:
        _print_json(done)
    else:
        for k, v in done.items():
            print(f"{k} {v}")
    return 0


def _simple(method, key):
    """A command whose reply is checked by ``Device.<method>``, printed as it came."""
    def run(args, regmap, dev):
        out = getattr(dev, method)()
        if args.json:
            _print_json({key: True, "output": out, "warnings": dev.warnings})
        else:
            for line in [f"warning: {w}" for w in dev.warnings] + out:
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


def _plot_check(args, regmap):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot   # noqa: F401
    except ImportError:
        raise UsageError("plot needs matplotlib: pip install 'ackfilter-ctl[plot]'") from None
    args.plotted = args.counters.split(",") if args.counters else \
        ["frames_in", "frames_out", "acks_superseded", "drop_red"]
    known = {c["name"] for c in regmap.counters}
    bad = [n for n in args.plotted if n not in known]
    if bad:
        raise UsageError(f"no counter {', '.join(bad)}; known: {', '.join(sorted(known))}")


def _plot(args, regmap, dev):
    import matplotlib.pyplot as plt
    names = args.plotted
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
    try:
        fig.savefig(args.out, dpi=100)
    except OSError as e:
        raise UsageError(f"cannot write {args.out}: {e.strerror or e}") from None
    if args.json:
        _print_json({"out": args.out, "t": times, "per_second": series})
    else:
        print(f"wrote {args.out}")
    return 0


def _tune_check(args, regmap):
    try:
        args.tuned = tune(regmap, up_bps=args.up, down_bps=args.down, rtt_ms=args.rtt,
                          link=args.link, red=args.red)
    except TuneError as e:
        raise UsageError(str(e)) from None


def _tune(args, regmap, dev):
    regs, why = args.tuned
    if args.apply:
        for name, value in regs.items():
            dev.set(name, value)                 # reads it back: the value must be the one written
            args.applied.append((name, value))
    if args.json:
        _print_json({"registers": regs, "reasons": why, "applied": bool(args.apply)})
        return 0
    for line in why:
        print(f"- {line}")
    print()
    for name, value in regs.items():
        print(f"{name} {value}")
    if args.apply:
        print(f"\napplied {len(args.applied)} parameters to {dev.link.name} "
              "(not saved: `ackfilter-ctl save`)")
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


def _seconds(text):
    """A number of seconds above 0 (and finite), for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text!r}")
    return value


def _count(text):
    """A whole number from 1, for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {text!r}")
    return value


def _rate(text):
    """A rate in bit/s, read as tc(8) reads it (``units.parse_rate``), for argparse."""
    try:
        return parse_rate(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _parser():
    ap = _Parser(prog="ackfilter-ctl", description=__doc__.split("\n\n")[0], epilog=EXIT_STATUS)
    ap.add_argument("--version", action="version", version=f"ackfilter-ctl {__version__}")
    where = ap.add_argument_group("device")
    where.add_argument("--port", metavar="DEVICE",
                       help="the board's serial port (e.g. /dev/ttyUSB0), opened exclusively")
    where.add_argument("--connect", metavar="HOST:PORT",
                       help="a simulated SoC's UART (`make sim-soc`: localhost:2323)")
    where.add_argument("--baud", type=_count, default=DEFAULT_BAUD, help="serial baud rate (115200)")
    where.add_argument("--timeout", type=_seconds, default=3.0, metavar="S",
                       help="seconds to wait for an answer (default 3; the simulation may need more)")
    ap.add_argument("--json", action="store_true", help="print JSON for scripts")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name, func, help, device=True, check_args=None):
        """A command: ``check_args(args, regmap)`` refuses bad arguments before
        any device is opened, ``func(args, regmap, device)`` runs it."""
        p = sub.add_parser(name, help=help, description=help, epilog=EXIT_STATUS)
        p.set_defaults(func=func, needs_device=device, check_args=check_args)
        return p

    cmd("registers", _registers, "list the parameters and counters of the register map", device=False)
    p = cmd("check", _check, "check a value against a parameter's range", device=False)
    p.add_argument("name", help="parameter name (see `registers`)")
    p.add_argument("value", help="integer, or a value name for enum parameters")
    cmd("status", _status, "firmware version, the main settings and counters")
    p = cmd("get", _get, "read parameters (all, or the names given)", check_args=_get_check)
    p.add_argument("names", nargs="*", metavar="NAME")
    p = cmd("set", _set, "write parameters: NAME VALUE [NAME VALUE ...] (checked against the "
                         "ranges first; enum values by name too; each value read back)",
            check_args=_set_check)
    p.add_argument("pairs", nargs="+", metavar="NAME VALUE")
    cmd("save", _simple("save", "saved"), "save every parameter to the board's flash")
    cmd("load", _simple("load", "loaded"), "reload the saved parameters")
    cmd("defaults", _simple("defaults", "defaults"), "set every parameter to its default (not saved)")
    cmd("reset-counters", _simple("reset_counters", "reset"), "count from zero again")
    p = cmd("watch", _watch, "live counters and rates in a refreshing table")
    p.add_argument("--interval", type=_seconds, default=1.0, metavar="S",
                   help="seconds between samples, more than 0 (default 1)")
    p.add_argument("--count", type=_count, metavar="N", help="stop after N samples (default: Ctrl-C)")
    p = cmd("plot", _plot, "sample counters' rates over time into a PNG", check_args=_plot_check)
    p.add_argument("--out", default="ackfilter.png", help="PNG file (default ackfilter.png)")
    p.add_argument("--duration", type=_seconds, default=60.0, metavar="S", help="seconds (default 60)")
    p.add_argument("--interval", type=_seconds, default=1.0, metavar="S",
                   help="seconds between samples, more than 0 (default 1)")
    p.add_argument("--counters", metavar="A,B", help="counters to plot (default frames in/out, "
                                                     "ACKs superseded, RED drops)")
    p = cmd("tune", _tune, "derive the settings for a link and print the reasoning "
                           "(--apply writes them to the device)", device=False, check_args=_tune_check)
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
                        "vdsl-bridged, unknown, raw (default ethernet)")
    p.add_argument("--red", action="store_true",
                   help="RED on the upload queue too (off by default: with the flow queues it "
                        "shortened no wait in the measured runs and cost upload rate)")
    p.add_argument("--apply", action="store_true",
                   help="write the values to the device, each read back (not saved: then `save`)")
    return ap


def _say(args, message):
    """Print the one line of a failure, with what ``set``/``tune --apply`` had written."""
    applied = getattr(args, "applied", None)
    if applied:
        message += (f"; {len(applied)} parameter{'s' if len(applied) > 1 else ''} had been written "
                    f"(not saved): {', '.join(f'{n} {v}' for n, v in applied)}")
    print(f"ackfilter-ctl: {message}", file=sys.stderr)


def main(argv=None):
    args = None
    dev = None
    try:
        args = _parser().parse_args(argv)
        args.applied = []                # (name, value) written so far, for the failure's line
        regmap = load()
        if args.check_args:
            args.check_args(args, regmap)
        if args.needs_device or getattr(args, "apply", False):
            if (args.port is None) == (args.connect is None):
                raise UsageError(f"{args.command} talks to a device: give --port DEVICE "
                                 "(the board) or --connect HOST:PORT (make sim-soc)")
            dev = Device(open_link(port=args.port, connect=args.connect, baud=args.baud),
                         timeout=args.timeout, regmap=regmap)
            dev.open()
        return args.func(args, regmap, dev)
    except UsageError as e:
        _say(args, f"error: {e}")
        return EXIT_USAGE
    except VersionMismatch as e:
        _say(args, f"error: {e}")
        return EXIT_VERSION
    except (RegmapError, LinkError, DeviceError) as e:
        _say(args, f"error: {e}")
        return EXIT_DEVICE
    except KeyboardInterrupt:
        _say(args, "interrupted (Ctrl-C)")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`ackfilter-ctl watch | head`): nothing more to
        # print, and stdout must not complain once more at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_DEVICE
    except Exception as e:               # the contract: one line, never a traceback
        _say(args, f"error: internal error, a bug in ackfilter-ctl {__version__} (please report it): "
                   f"{type(e).__name__}: {e}")
        return EXIT_DEVICE
    finally:
        if dev is not None:
            dev.close()


if __name__ == "__main__":
    sys.exit(main())
