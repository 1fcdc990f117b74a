"""The words of a flow record and of a key slot, which share one numbering.

The queue manager keeps a record of :data:`RECORD_WORDS` words of 64 bits per
flow entry, in block RAM: the flow key (words 0 .. ``KEY_WORDS64 - 1``), the
flow's newest queued ACK (:data:`REC_ACK`: its ack number and flags;
:data:`REC_TS`: TSval and TSecr; :data:`REC_SACK` + k: SACK block k;
:data:`REC_AECN`, :data:`REC_AECN` + 1: the AccECN counters) and the floor of
its chain (:data:`REC_FLOOR_ACK`: the chain's first ack and the AccECN floor;
:data:`REC_FLOOR_TS`: its TSval and TSecr).

The ingress writes each frame it commits into a slot of the key memory, one
64-bit word a cycle from the push on (:data:`SLOT_WRITTEN` words, in
:data:`SLOT_WRITE_ORDER`): the flow
key and the pure ACK's option values (``parser.ack_details_layout``) at the
record's word numbers, so that a record write copies those words from the
slot as they come, and the segmenter's fields (``parser.seg_info_layout``,
106 bits) in what the record leaves free there: word :data:`REC_ACK` (whose
record word the manager makes itself) and the high bits of the AccECN words.
:func:`slot_word` is the one description of that packing: the ingress makes
word j with it, and the queue manager loads its registers back from word j
with it (:func:`unpack_slot_word`).
"""

from amaranth.hdl import Cat, C

from ..flowkey import KEY_WORDS

__all__ = ["KEY_WORDS64", "RECORD_WORDS", "REC_ACK", "REC_TS", "REC_SACK", "REC_AECN",
           "REC_FLOOR_ACK", "REC_FLOOR_TS", "REC_NEWEST_END", "SLOT_WORDS", "SLOT_WRITTEN",
           "SLOT_WRITE_ORDER", "SLOT_TAKE_AT", "slot_word", "unpack_slot_word"]

#: 64-bit words of a flow key: 32-bit key words 2j and 2j + 1 in word j, the
#: last one's high half 0.
KEY_WORDS64 = (KEY_WORDS + 1) // 2

RECORD_WORDS = 16
REC_ACK, REC_TS, REC_SACK, REC_AECN = 6, 7, 8, 12
REC_FLOOR_ACK, REC_FLOOR_TS = 14, 15
#: Words REC_ACK .. REC_NEWEST_END - 1 describe the newest ACK.
REC_NEWEST_END = 14
assert KEY_WORDS64 == REC_ACK

#: A key slot's words, and those the ingress writes (0 .. SLOT_WRITTEN - 1).
SLOT_WORDS = 16
SLOT_WRITTEN = REC_NEWEST_END

#: The ingress writes slot word ``SLOT_WRITE_ORDER[c]`` ``c`` cycles after the
#: push, and the queue manager may take the frame from ``SLOT_TAKE_AT`` cycles
#: after the push on (the core holds the entry back until then): the order
#: is the one in which the manager reads the words from that cycle on, so
#: each is written before it is read (``queue_manager`` checks it).
SLOT_WRITE_ORDER = (8, 9, 0, 10, 1, 11, 2, 3, 12, 5, 13, 4, 6, 7)
SLOT_TAKE_AT = 5
assert sorted(SLOT_WRITE_ORDER) == list(range(SLOT_WRITTEN))


def _parts(j, *, key=None, details=None, seg=None):
    """Slot word ``j`` as its parts, lowest first (the rest of the word is 0)."""
    if j < KEY_WORDS64:
        return [key[i] for i in range(2 * j, min(2 * j + 2, KEY_WORDS))]
    bits = seg.as_value()
    assert len(bits) == 106
    if j == REC_ACK:
        return [bits[0:64]]
    if j == REC_TS:
        return [details.tsval, details.tsecr]
    if REC_SACK <= j < REC_AECN:
        block = details.sack[j - REC_SACK]
        return [block.start, block.end]
    if j == REC_AECN:
        return [details.accecn[0], details.accecn[1], bits[64:80]]
    if j == REC_AECN + 1:
        return [details.accecn[2], bits[80:106]]
    raise ValueError(f"slot word {j} is not written")


def slot_word(j, *, key, details, seg):
    """Slot word ``j`` (64 bits) of a frame: ``key`` its flow key (an array of
    32-bit words), ``details`` and ``seg`` views of its ACK details and its
    segmenter fields."""
    value = Cat(*_parts(j, key=key, details=details, seg=seg))
    return Cat(value, C(0, 64 - len(value)))


def unpack_slot_word(j, word, *, details, seg):
    """The assignment that loads ``details`` and ``seg`` (signals' views)
    from slot word ``j`` (``j`` >= ``REC_ACK``), ``word`` its 64 bits."""
    parts = Cat(*_parts(j, details=details, seg=seg))
    return parts.eq(word[:len(parts)])
