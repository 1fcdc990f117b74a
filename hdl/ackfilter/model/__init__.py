"""Golden model of the ackfilter uplink core: the executable form of ``docs/spec.md``.

* :mod:`.pktparse` — frame classification and pure-ACK parsing (section 2);
* :mod:`.flowkey` — the flow key words and their CAM tag (sections 2, 3);
* :mod:`.filter` — ACK queue, in-place supersession, scheduler, events (sections 3, 4, 7);
* :mod:`.shaper` — link accounting (tc-cake's) and the GCRA shaper (section 6).

The gateware is checked against this model frame by frame.
"""

from .pktparse import ACK_SLOT_BYTES, MAX_FRAME_BYTES, Parsed, after, before, classify, serial_lt
from ..flowkey import flow_tag
from .filter import EVENTS, MODEL_COUNTERS, FilterModel, may_supersede
from .shaper import GcraShaper, LinkAccounting, charged_bytes, gcra_departures

__all__ = [
    "ACK_SLOT_BYTES", "MAX_FRAME_BYTES", "Parsed", "classify", "before", "after", "serial_lt",
    "flow_tag",
    "EVENTS", "MODEL_COUNTERS", "FilterModel", "may_supersede",
    "GcraShaper", "LinkAccounting", "charged_bytes", "gcra_departures",
]
