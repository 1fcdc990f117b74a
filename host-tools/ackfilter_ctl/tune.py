"""``ackfilter-ctl tune``: register values for a link, with the reasons.

From the uplink and downlink rates, the path's round-trip time and the link
type, :func:`tune` derives every setting a user would otherwise look up:

* the shaper at 95 % of the uplink, so that the queue forms here, where it
  is managed, and not in the modem, with the link's framing charged exactly
  (tc-cake's keywords, resolved in the shipped register map);
* RED off: the board's flow queues keep every other flow's packets out of
  an upload's queue, and in the runs RED then shortened nobody's wait and
  cost the upload some of its rate; ``red=True`` (``tune --red``) turns
  it on with thresholds in whole packets at modem rates and an average
  whose time constant is about a second (Floyd, Gummadi and Shenker 2001's
  automatic settings, with a floor of two packets, since at these rates one
  packet is tens of milliseconds);
* upload data cut into 512-byte chunks where a full frame holds the uplink
  for more than 10 ms (an ACK, or a new flow's packet such as a page's
  request, then waits for one chunk, not a frame; the headers cost about
  11 %), off above that;
* the ACK filter aggressive, the data share at round-robin, ACC off: the
  measured defaults (the repository's docs/experiments.md has the runs).

Inputs it cannot turn into settings raise :class:`TuneError` naming the
reason: a rate that is not above 0, an uplink slower than the shaper's
slowest rate or faster than the board's ports, RED thresholds (``red=True``)
larger than their registers hold. Rates are numbers of bit/s; the command
line reads them with tc's grammar (``units.parse_rate``).
"""

import math

__all__ = ["tune", "TuneError", "rate_from_cpb", "cpb_for_rate", "PORT_BPS"]

#: The board's Ethernet ports run at 10, 100 or 1000 Mb/s (the register
#: map's link ``speed`` field): a faster uplink is never the board's bottleneck.
PORT_BPS = 1_000_000_000
SHAPE_FRACTION = 0.95
PACKET_BYTES = 1500
CHUNK_BYTES = 512
CHUNK_ABOVE_MS = 10.0
IDLE_PACKET_BYTES = 500        # the small packet whose time paces RED's idle decay


class TuneError(ValueError):
    """Inputs that describe no link the filter can shape."""


def cpb_for_rate(rate_bps, f_sys_hz):
    """``shaper_cpb_q16``: system clock cycles per byte at ``rate_bps``, 16 fraction bits."""
    return round(8 * f_sys_hz * 65536 / rate_bps)


def rate_from_cpb(cpb_q16, f_sys_hz):
    """The shaped rate in bit/s (0: unshaped)."""
    return 0 if cpb_q16 == 0 else 8 * f_sys_hz * 65536 / cpb_q16


def _fmt_rate(bps):
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.0f} b/s"


def tune(regmap, *, up_bps, down_bps, rtt_ms, link, red=False):
    """``(registers, reasons)``: ``{name: value}`` for the parameters to set,
    and one sentence per decision. ``up_bps``, ``down_bps``: the link's rates
    in bit/s; ``regmap`` is the shipped register map; ``red`` turns RED on
    (off by default: the module's docstring says why). ``TuneError`` says
    why inputs give no settings."""
    presets = regmap.raw["link_presets"]
    if link not in presets:
        raise TuneError(f"unknown link type {link!r}; one of: {', '.join(presets)}")
    for what, bps in (("uplink", up_bps), ("downlink", down_bps)):
        if isinstance(bps, bool) or not isinstance(bps, (int, float)) or not 0 < bps < math.inf:
            raise TuneError(f"the {what} rate must be a number of bit/s above 0, not {bps!r}")
    if not 0 < rtt_ms < 10_000:
        raise TuneError(f"the round-trip time must be 0 .. 10000 ms, not {rtt_ms:g}")
    if up_bps > PORT_BPS:
        raise TuneError(f"an uplink of {_fmt_rate(up_bps)} is faster than the board's ports "
                        f"({_fmt_rate(PORT_BPS)}): the board cannot shape it, it would be the bottleneck")
    f_sys = regmap.raw["f_sys_hz"]
    cpb_param = regmap.param("shaper_cpb_q16")
    rate = up_bps * SHAPE_FRACTION
    slowest = rate_from_cpb(cpb_param["max"], f_sys)
    if rate < slowest:
        raise TuneError(f"an uplink of {_fmt_rate(up_bps)} cannot be shaped: the shaper would run at "
                        f"95 % of it, {_fmt_rate(rate)}, and it goes no slower than {_fmt_rate(slowest)}")
    cpb = cpb_for_rate(rate, f_sys)
    regs, why = {}, []
    regs["shaper_cpb_q16"] = cpb
    why.append(f"shaper: {_fmt_rate(rate)}, 95 % of the {_fmt_rate(up_bps)} uplink, so the queue "
               "forms here (where the ACKs are filtered and the flows queued apart), not in the modem")
    preset = presets[link]
    regs.update(preset["registers"])
    r = preset["registers"]
    layer = {0: "", 1: ", ATM cells (48 bytes in 53)", 2: ", PTM (+1 byte per 64)"}[r["shaper_link_layer"]]
    base = "the IP packet" if r["shaper_charge_base"] == 1 else "the Ethernet frame"
    why.append(f"link accounting for {link} ({preset['doc']}; tc-cake '{preset['cake']}'): "
               f"{base} + {r['shaper_overhead_bytes']} bytes, at least {r['shaper_mpu_bytes']}{layer}")

    pps = rate / (8 * PACKET_BYTES)
    wq = regmap.param("red_wq_shift")
    wq_shift = min(wq["max"], max(wq["min"], round(math.log2(pps)) if pps > 1 else wq["min"]))
    target_s = max(0.005, rtt_ms / 1000 / 10)
    min_pk = max(2, math.ceil(target_s * pps / 2))
    idle = regmap.param("red_idle_shift")
    idle_shift = min(idle["max"], max(idle["min"],
                                      round(math.log2(8 * IDLE_PACKET_BYTES * f_sys / rate))))
    if red:
        held = regmap.param("red_max_bytes")["max"]
        if 3 * min_pk * PACKET_BYTES > held:
            raise TuneError(f"--red at {_fmt_rate(rate)} with a {rtt_ms:g} ms round trip needs RED "
                            f"thresholds of {min_pk} and {3 * min_pk} full packets, "
                            f"{3 * min_pk * PACKET_BYTES} bytes, more than red_max_bytes holds ({held}): "
                            "leave RED off at this rate, or set its thresholds yourself")
        regs.update(red_enable=1, red_min_bytes=min_pk * PACKET_BYTES,
                    red_max_bytes=3 * min_pk * PACKET_BYTES, red_max_p=round(0.1 * 65536),
                    red_wq_shift=wq_shift, red_gentle=1, red_idle_shift=idle_shift)
        why.append(f"RED on (--red): thresholds {min_pk} and {3 * min_pk} full packets "
                   f"({min_pk * PACKET_BYTES} / {3 * min_pk * PACKET_BYTES} bytes; a packet is "
                   f"{1000 * 8 * PACKET_BYTES / rate:.1f} ms here), gentle, max_p 0.1 to start "
                   f"(the firmware's Adaptive RED moves it), w_q 2^-{wq_shift} so the average spans "
                   f"about a second ({pps:.0f} packets/s)")
    else:
        regs["red_enable"] = 0
        why.append("RED off: the flow queues keep other flows' packets out of an upload's queue, "
                   "and in the measured runs RED shortened nobody's wait and cost the upload rate "
                   "(--red turns it on)")

    frame_ms = 1000 * 8 * 1514 / rate
    if frame_ms > CHUNK_ABOVE_MS:
        regs["chunk_bytes"] = CHUNK_BYTES
        why.append(f"segmenter: a full frame holds the uplink {frame_ms:.0f} ms, so upload data "
                   f"leaves in {CHUNK_BYTES}-byte chunks and an ACK or a new flow's packet waits at "
                   f"most {1000 * 8 * (CHUNK_BYTES + 66) / rate:.0f} ms (headers cost about 11 %)")
    else:
        regs["chunk_bytes"] = 0
        why.append(f"segmenter off: a full frame takes {frame_ms:.1f} ms here, already short")

    ratio = down_bps / up_bps
    regs.update(ack_mode=2, data_share=128, acc_enable=0)
    why.append("ACK filter aggressive (one queued ACK per flow): the measured best; " +
               (f"the downlink is {ratio:.0f} times the uplink, so ACKs would otherwise fill it"
                if ratio >= 2 else "here the downlink is not much faster than the uplink, so its "
                                   "ACKs take little of it either way"))
    why.append("data share 128 (uplink bytes split evenly between ACKs and upload data when "
               "both wait); ACC off (it engaged only with many flows and never beat aggressive)")
    for name, value in regs.items():
        regmap.check_value(name, value)            # a bug here must not reach the board
    return regs, why
