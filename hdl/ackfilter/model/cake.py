"""tc-cake's link accounting words, read as ``tc qdisc ... cake`` reads them.

A CAKE/SQM user describes the uplink's framing with words such as
``docsis``, ``pppoe-ptm``, ``overhead 18 mpu 64`` or ``conservative``.
:func:`cake_accounting` turns those words into the shaper's four link
accounting registers (:class:`ackfilter.model.shaper.LinkAccounting`) so that
each frame is charged exactly the bytes tc-cake would charge it.

:data:`CAKE_KEYWORDS` is the one table of the keywords: ``ackfilter replay
--help``, ``docs/spec.md`` section 6 (checked by a test) and the parser all
read it. Its numbers are tc-cake(8)'s; how the words combine is iproute2's
``tc/q_cake.c`` (``cake_parse_opt``), which the man page summarises:

* words are read left to right;
* ``overhead N`` sets the overhead (-64..256) and means "relative to the IP
  packet"; ``mpu N`` sets the minimum (0..256);
* the encapsulation keywords *add* their bytes to the overhead so far (so
  ``pppoe-ptm ether-vlan`` is 34), mark the overhead as set, and set the
  link layer (``atm`` or ``ptm``) where they name one; ``ethernet`` and
  ``docsis`` also *set* ``mpu``;
* ``conservative`` sets overhead 48 and ``atm``; ``raw`` sets overhead 0 and
  ``noatm`` and makes the charge relative to the frame (the kernel's
  ``TCA_CAKE_RAW`` clears ``CAKE_FLAG_OVERHEAD``): words after it add to the
  frame's length instead of the IP packet's;
* with no overhead word at all, tc-cake charges the frame as Linux reports
  it (``raw`` is its default), + ``mpu`` and ``atm``/``ptm`` if given.

Where the man page and q_cake.c differ, q_cake.c (what runs) is followed:
``ethernet`` does not touch the link layer (the man page says "noatm"), and
the keywords add to the overhead rather than set it.
"""

from dataclasses import dataclass

from .. import params as P
from .shaper import LinkAccounting

__all__ = ["CakeKeyword", "CAKE_KEYWORDS", "cake_accounting", "keyword_summary", "CakeError"]


class CakeError(ValueError):
    """Words that tc-cake would refuse, or that the shaper cannot express."""


@dataclass(frozen=True)
class CakeKeyword:
    name: str
    doc: str
    overhead_add: int = 0          # added to the overhead so far
    overhead_value: int = None     # replaces the overhead so far
    mpu: int = None                # replaces mpu
    link_layer: str = None         # "none", "atm" or "ptm"; None leaves it
    raw: bool = False              # charge relative to the frame (TCA_CAKE_RAW)
    sets_overhead: bool = True     # counts as an overhead word (CAKE_FLAG_OVERHEAD)


#: tc-cake(8) keywords, in the man page's order; numbers and actions from
#: iproute2 tc/q_cake.c, cake_parse_opt().
CAKE_KEYWORDS = (
    # tc-cake(8): raw = "Turns off all overhead compensation"; q_cake.c: noatm, overhead 0, TCA_CAKE_RAW
    CakeKeyword("raw", "the frame as Linux reports it, nothing added (tc-cake's default)",
                overhead_value=0, link_layer="none", raw=True),
    # tc-cake(8): conservative = "overhead 48 atm"
    CakeKeyword("conservative", "more than any common link: a whole ATM cell + ATM framing",
                overhead_value=48, link_layer="atm"),
    # tc-cake(8), ADSL: each "Equivalent to overhead N atm" (q_cake.c adds N)
    CakeKeyword("pppoa-vcmux", "ADSL, PPPoA, VC multiplexed", overhead_add=10, link_layer="atm"),
    CakeKeyword("pppoa-llc", "ADSL, PPPoA, LLC encapsulated", overhead_add=14, link_layer="atm"),
    CakeKeyword("pppoe-vcmux", "ADSL, PPPoE, VC multiplexed", overhead_add=32, link_layer="atm"),
    CakeKeyword("pppoe-llcsnap", "ADSL, PPPoE, LLC/SNAP", overhead_add=40, link_layer="atm"),
    CakeKeyword("bridged-vcmux", "ADSL, bridged Ethernet, VC multiplexed", overhead_add=24, link_layer="atm"),
    CakeKeyword("bridged-llcsnap", "ADSL, bridged Ethernet, LLC/SNAP", overhead_add=32, link_layer="atm"),
    CakeKeyword("ipoa-vcmux", "ADSL, IP over ATM, VC multiplexed", overhead_add=8, link_layer="atm"),
    CakeKeyword("ipoa-llcsnap", "ADSL, IP over ATM, LLC/SNAP", overhead_add=16, link_layer="atm"),
    # tc-cake(8), VDSL2: pppoe-ptm = "overhead 30 ptm" (PPP 2 + PPPoE 6 + Ethernet 14 + FCS 4 + PTM 4)
    CakeKeyword("pppoe-ptm", "VDSL2, PPPoE", overhead_add=30, link_layer="ptm"),
    # tc-cake(8): bridged-ptm = "overhead 22 ptm" (Ethernet 14 + FCS 4 + PTM 4)
    CakeKeyword("bridged-ptm", "VDSL2, bridged Ethernet", overhead_add=22, link_layer="ptm"),
    # tc-cake(8): docsis = "overhead 18 mpu 64 noatm" (Ethernet frame with FCS)
    CakeKeyword("docsis", "cable: the Ethernet frame with FCS, as the head-end meters it",
                overhead_add=18, mpu=64, link_layer="none"),
    # tc-cake(8): ethernet = "overhead 38 mpu 84" (preamble, IFG, FCS); q_cake.c leaves atm/ptm
    CakeKeyword("ethernet", "an Ethernet cable: header 14 + FCS 4 + preamble 8 + IFG 12",
                overhead_add=38, mpu=84),
    # tc-cake(8): ether-vlan "Adds 4 bytes"; "may be repeated"
    CakeKeyword("ether-vlan", "one 802.1Q tag (repeat for two)", overhead_add=4),
    # tc-cake(8): atm / ptm / noatm
    CakeKeyword("atm", "ATM cells: 48 bytes of payload in 53", link_layer="atm", sets_overhead=False),
    CakeKeyword("ptm", "PTM 64b/65b: +1 byte per 64 or part thereof", link_layer="ptm", sets_overhead=False),
    CakeKeyword("noatm", "neither atm nor ptm (default)", link_layer="none", sets_overhead=False),
    # q_cake.c: accepted and ignored (Linux compensates the Ethernet header itself)
    CakeKeyword("via-ethernet", "ignored, as tc-cake ignores it", sets_overhead=False),
)

_BY_NAME = {k.name: k for k in CAKE_KEYWORDS}

# tc-cake(8): overhead -64..256, mpu 0..256 (the registers have the same ranges).
_OVERHEAD = P.param("shaper_overhead_bytes")
_MPU = P.param("shaper_mpu_bytes")


def keyword_summary(kw):
    """``kw`` in tc's own terms: ``overhead +18 mpu 64 noatm``."""
    parts = []
    if kw.overhead_value is not None:
        parts.append(f"overhead {kw.overhead_value}")
    elif kw.overhead_add:
        parts.append(f"overhead +{kw.overhead_add}")
    if kw.mpu is not None:
        parts.append(f"mpu {kw.mpu}")
    if kw.link_layer is not None:
        parts.append({"none": "noatm", "atm": "atm", "ptm": "ptm"}[kw.link_layer])
    if kw.raw:
        parts.append("(on the frame)")
    return " ".join(parts) or "no effect"


def _number(words, i, name, p):
    if i + 1 >= len(words):
        raise CakeError(f"{name} needs a number of bytes ({p.minimum}..{p.maximum})")
    text = str(words[i + 1])
    try:
        value = int(text, 10)
    except ValueError:
        raise CakeError(f"{name} {text!r}: not an integer; valid range is {p.minimum} to {p.maximum}")
    if not p.minimum <= value <= p.maximum:
        raise CakeError(f"{name} {value}: valid range is {p.minimum} to {p.maximum} (as in tc-cake)")
    return value


def cake_accounting(*words):
    """The :class:`LinkAccounting` tc-cake applies for these words.

    ``words`` are tc's: ``cake_accounting("docsis")``, ``cake_accounting("overhead",
    "18", "mpu", "64")`` or one string ``cake_accounting("pppoe-ptm ether-vlan")``.
    No words: tc-cake's default (``raw``: the frame, no overhead) — not
    ackfilter's default, which is :class:`LinkAccounting` ``()``.
    """
    tokens = []
    for w in words:
        tokens += str(w).split() if isinstance(w, str) else [w]
    overhead, overhead_set, raw, mpu, link_layer = 0, False, False, 0, "none"
    i = 0
    while i < len(tokens):
        word = str(tokens[i])
        if word == "overhead":
            overhead, overhead_set = _number(tokens, i, word, _OVERHEAD), True
            i += 2
            continue
        if word == "mpu":
            mpu = _number(tokens, i, word, _MPU)
            i += 2
            continue
        kw = _BY_NAME.get(word)
        if kw is None:
            raise CakeError(f"unknown tc-cake link word {word!r}; known: overhead N, mpu N, "
                            f"{', '.join(_BY_NAME)}")
        if kw.overhead_value is not None:
            overhead = kw.overhead_value
        overhead += kw.overhead_add
        overhead_set |= kw.sets_overhead
        raw |= kw.raw
        if kw.mpu is not None:
            mpu = kw.mpu
        if kw.link_layer is not None:
            link_layer = kw.link_layer
        i += 1
    if not _OVERHEAD.minimum <= overhead <= _OVERHEAD.maximum:
        raise CakeError(f"{' '.join(map(str, tokens))}: overhead {overhead} is outside what the shaper "
                        f"takes ({_OVERHEAD.minimum}..{_OVERHEAD.maximum}, tc-cake's overhead range)")
    return LinkAccounting(charge_base="ip" if overhead_set and not raw else "frame",
                          overhead_bytes=overhead if overhead_set else 0, mpu_bytes=mpu,
                          link_layer=link_layer)
