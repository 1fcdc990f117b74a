"""The uplink core: ingress, queue manager, egress, shaper and registers.

:class:`UplinkCore` is the whole LAN -> modem datapath of the system clock
domain, with ``wiring`` ports (frame streams, the CSR bus, the event port) that
the board top connects. :class:`UplinkCoreTop` wraps it in flat ports
(``docs/spec.md`` section 8) for Verilator: the replay harness and the cocotb
benches drive the same module the board does.
"""

from amaranth.hdl import *
from amaranth.lib import wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import params as P
from .csr import CSRBank, CSRBusSignature
from .egress import Egress
from .ingress import CELL_WORDS, KEY_SLOTS, MAX_CELLS, Ingress, ingress_entry_layout
from .lib.buffer_pool import BufferPool
from .lib.cells import CellList
from .lib.stream import FrameStream, WORD_BYTES
from ..flowkey import check_host_buckets
from .queue_manager import Event, QueueManager
from .red import RED_PARAM_PORTS
from .shaper import Shaper

__all__ = ["UplinkCore", "UplinkCoreTop", "EventSignature", "flat_streams"]

#: Depth of the FIFO of classified frames between ingress and queue manager.
ENTRY_FIFO_DEPTH = 4
# Each frame in the FIFO and the one the manager holds has a key slot.
assert KEY_SLOTS >= ENTRY_FIFO_DEPTH + 1


def entry_offered(entries, slot_wait):
    """Whether the queue manager may take the head of ``entries`` (the
    entry FIFO). Not while ``slot_wait`` says the newest entry's key slot
    is still too early in its writing to be taken
    (``flow_record.SLOT_TAKE_AT``) and that entry is the head, the only one
    in the FIFO; an older head's slot is written whole. ``formal/ingress.py``
    proves it with the ingress's slot writes."""
    return entries.r_rdy & ~(slot_wait & (entries.level == 1))


#: Spare ACK buffers beyond the queue: staging, FIFO entries, in flight.
SPARE_BUFFERS = 8
# The ingress takes a staging buffer without asking the pool: there must be
# one for every ACK that can hold a buffer outside the queue (each FIFO
# entry, the one being received, the manager's, the egress's, a free on its
# way back to the pool).
assert SPARE_BUFFERS >= ENTRY_FIFO_DEPTH + 4

#: The trace port: ``valid`` with ``kind`` (an :data:`~.queue_manager.Event`)
#: for each queue manager decision; ``overrun`` for a frame the ingress lost.
EventSignature = wiring.Signature({
    "valid":   Out(1),
    "kind":    Out(Event),
    "overrun": Out(1),
})


def _check_sizes(data_buffer_bytes):
    if (not isinstance(data_buffer_bytes, int) or data_buffer_bytes < 4 * P.MAX_FRAME_BYTES
            or data_buffer_bytes & (data_buffer_bytes - 1)):
        raise TypeError(f"data_buffer_bytes must be a power of two >= {4 * P.MAX_FRAME_BYTES}, "
                        f"not {data_buffer_bytes!r}")
    return data_buffer_bytes // P.DATA_CELL_BYTES


class UplinkCore(wiring.Component):
    """The LAN -> modem datapath (see the module docstring).

    Parameters
    ----------
    ack_slots : int           ACK queue positions (default ``params.ACK_SLOTS``)
    flow_entries : int        flow table entries (default ``params.FLOW_ENTRIES``)
    data_buffer_bytes : int   data buffer size, a power of two (default ``params.DATA_BUFFER_BYTES``),
                              in cells of ``params.DATA_CELL_BYTES``
    flow_queues : bool        upload data in per-flow queues, ``flow_entries + 1`` of them
                              (spec section 12; default ``params.FLOW_QUEUES``), else one FIFO
    host_buckets : int        with ``flow_queues``: host fairness's buckets, a power of two
                              (spec section 12, "Hosts"; default ``params.HOST_BUCKETS``); 0:
                              flows share the link, hosts do not count

    Ports
    -----
    i : In(FrameStream())        frames from the LAN MAC
    o : Out(FrameStream())       frames to the modem MAC
    now : In(48)                 system clock cycles since reset (the shaper's time)
    csr : In(CSRBusSignature)    the register bus (:mod:`.csr`)
    event : Out(EventSignature)  decisions, for traces and scoreboards
    idle : Out(1)                nothing in flight: a harness may skip cycles
    backlog : Out(1)             frames are queued (waiting for the shaper)
    wake_at : Out(48)            when the shaper next lets a frame go
    """

    def __init__(self, *, ack_slots=P.ACK_SLOTS, flow_entries=P.FLOW_ENTRIES,
                 data_buffer_bytes=P.DATA_BUFFER_BYTES, flow_queues=P.FLOW_QUEUES,
                 host_buckets=P.HOST_BUCKETS):
        _check_sizes(data_buffer_bytes)
        check_host_buckets(host_buckets, "host_buckets")
        self.flow_queues = bool(flow_queues)
        self.host_buckets = host_buckets if self.flow_queues else 0
        self.ack_slots = ack_slots
        self.flow_entries = flow_entries
        self.data_buffer_bytes = data_buffer_bytes
        super().__init__({
            "i":       In(FrameStream()),
            "o":       Out(FrameStream()),
            "now":     In(48),
            "csr":     In(CSRBusSignature),
            "event":   Out(EventSignature),
            "idle":    Out(1),
            "backlog": Out(1),
            "wake_at": Out(48),
        })

    def elaborate(self, platform):
        m = Module()
        cells = _check_sizes(self.data_buffer_bytes)
        buf_count = self.ack_slots + SPARE_BUFFERS
        buf_bits = (buf_count - 1).bit_length()
        slot_words = P.ACK_SLOT_BYTES // WORD_BYTES

        m.submodules.csr     = csr = CSRBank()
        m.submodules.ingress = ingress = Ingress(cells=cells, buf_count=buf_count)
        m.submodules.pool    = pool = BufferPool(count=buf_count)
        m.submodules.cells   = cell_list = CellList(cells=cells, max_cells=MAX_CELLS)
        # Every queued data frame holds a cell, and the free list one more.
        m.submodules.manager = manager = QueueManager(
            ack_slots=self.ack_slots, flow_entries=self.flow_entries,
            cells=cells, buf_bits=buf_bits, desc_depth=cells, flow_queues=self.flow_queues,
            host_buckets=self.host_buckets)
        m.submodules.egress  = egress = Egress(cells=cells, buf_bits=buf_bits, slot_words=slot_words)
        m.submodules.shaper  = shaper = Shaper()

        entry_layout = ingress_entry_layout(cells=cells, buf_bits=buf_bits)
        # Unbuffered: its LUT RAM is read asynchronously straight into the
        # manager's register of the frame it handles (`cur`), so its bits
        # are held once, not in a FIFO output register as well.
        m.submodules.entries = entries = SyncFIFO(width=entry_layout.size, depth=ENTRY_FIFO_DEPTH)
        m.submodules.data_ring = data_ring = Memory(shape=32, depth=cells * CELL_WORDS, init=[])
        m.submodules.ack_bufs = ack_bufs = Memory(shape=32, depth=buf_count * slot_words, init=[])
        ring_w, ring_r = data_ring.write_port(), data_ring.read_port()
        ack_w, ack_r = ack_bufs.write_port(), ack_bufs.read_port()
        # The segmenter's payload block sums, one per four words of a cell (spec section 9).
        m.submodules.block_sums = block_sums = Memory(shape=16, depth=cells * CELL_WORDS // 4, init=[])
        sum_w, sum_r = block_sums.write_port(), block_sums.read_port()

        # LAN side. The input word is registered first, so nothing in the core
        # hangs combinationally off the (asynchronous FIFO's) output; the port
        # stays low while a `last` sits in the register.
        in_valid = Signal()
        in_beat = Signal.like(ingress.i.payload)
        accept = Signal()
        m.d.comb += [
            # (Nothing comes in while the free list of cells and the ACK
            # buffers' free stacks are built after a reset, DATA_CELLS and
            # ack_slots + SPARE_BUFFERS - 1 cycles; the manager's stack of
            # list nodes, ack_slots cycles, is built before either.)
            self.i.ready.eq(ingress.i.ready & ~(in_valid & in_beat.last) & cell_list.ready & pool.ready),
            accept.eq(self.i.valid & self.i.ready),
        ]
        with m.If(accept):
            m.d.sync += [in_valid.eq(1), in_beat.eq(self.i.payload)]
        with m.Elif(ingress.i.ready):
            m.d.sync += in_valid.eq(0)
        m.d.comb += [
            ingress.i.valid.eq(in_valid),
            ingress.i.payload.eq(in_beat),
            ingress.ack_mode.eq(manager.ack_mode_eff),
            ring_w.en.eq(ingress.buf_wr_en), ring_w.addr.eq(ingress.buf_wr_addr),
            ring_w.data.eq(ingress.buf_wr_data),
            ack_w.en.eq(ingress.ack_wr_en), ack_w.addr.eq(ingress.ack_wr_addr),
            ack_w.data.eq(ingress.ack_wr_data),
            sum_w.en.eq(ingress.sum_wr_en), sum_w.addr.eq(ingress.sum_wr_addr),
            sum_w.data.eq(ingress.sum_wr_data),
            ingress.stage_alloc_valid.eq(pool.alloc_valid),
            ingress.stage_alloc_id.eq(pool.alloc_id),
            pool.take.eq(ingress.stage_take),
            ingress.cell_head.eq(cell_list.head),
            ingress.cell_free.eq(cell_list.free),
            cell_list.ing_req.eq(ingress.cell_req),
            cell_list.ing_addr.eq(ingress.cell_addr),
            ingress.cell_next.eq(cell_list.rd_next),
            cell_list.take_en.eq(ingress.take_en),
            cell_list.take_head.eq(ingress.take_head),
            cell_list.take_n.eq(ingress.take_n),
            cell_list.eg_addr.eq(egress.cell_addr),
            egress.cell_next.eq(cell_list.rd_next),
            egress.cell_ok.eq(cell_list.eg_ok),
            cell_list.rel_en.eq(egress.release_cells_en),
            cell_list.rel.eq(egress.release_cells),
            cell_list.dis_en.eq(manager.discard_en),
            cell_list.dis.eq(manager.discard_cells),
            manager.key_wr_en.eq(ingress.key_wr_en), manager.key_wr_addr.eq(ingress.key_wr_addr),
            manager.key_wr_data.eq(ingress.key_wr_data),
            entries.w_en.eq(ingress.entry_valid & entries.w_rdy),
            entries.w_data.eq(ingress.entry.as_value()),
            ingress.entry_ready.eq(entries.w_rdy),
        ]

        m.d.comb += [
            manager.entry_valid.eq(entry_offered(entries, ingress.slot_wait)),
            manager.entry.eq(entries.r_data),
            entries.r_en.eq(manager.entry_ready),
            manager.ack_mode.eq(csr.params.ack_mode),
            manager.entries_quiet.eq((entries.level == 0) & ~entries.w_en),
            manager.ack_queue_limit.eq(csr.params.ack_queue_limit),
            manager.data_share.eq(csr.params.data_share),
            manager.chunk_bytes.eq(csr.params.chunk_bytes),
            manager.acc_enable.eq(csr.params.acc_enable),
            manager.acc_threshold_acks.eq(csr.params.acc_threshold_acks),
            manager.acc_wq_shift.eq(csr.params.acc_wq_shift),
            manager.now.eq(self.now),
            *[getattr(manager, f"red_{name}").eq(csr.params[f"red_{name}"]) for name in RED_PARAM_PORTS],
            manager.egress_busy.eq(egress.busy),
            manager.shaper_eligible.eq(shaper.eligible),
            manager.cpb_q16.eq(csr.params.shaper_cpb_q16),
            manager.charged.eq(shaper.charged),
            manager.charged_bytes.eq(shaper.charged_bytes),
            pool.free_a_en.eq(manager.free_buf_en),
            pool.free_a_id.eq(manager.free_buf_id),
            pool.free_b_en.eq(egress.release_buf_en),
            pool.free_b_id.eq(egress.release_buf_id),
        ]

        # Modem side.
        m.d.comb += [
            egress.start.eq(manager.egress_start),
            egress.start_is_ack.eq(manager.egress_is_ack),
            egress.start_addr.eq(manager.egress_addr),
            egress.start_bytes.eq(manager.egress_store_bytes),
            egress.start_seg.eq(manager.egress_seg),
            egress.start_seg_info.eq(manager.egress_seg_info),
            egress.start_chunk_idx.eq(manager.egress_chunk_idx),
            egress.start_chunk_off.eq(manager.egress_chunk_off),
            egress.start_chunk_len.eq(manager.egress_chunk_len),
            egress.start_chunk_last.eq(manager.egress_chunk_last),
            sum_r.addr.eq(egress.sum_rd_addr), egress.sum_rd_data.eq(sum_r.data),
            egress.start_mark.eq(manager.egress_mark),
            egress.start_ip.eq(manager.egress_ip),
            ring_r.addr.eq(egress.ring_rd_addr), egress.ring_rd_data.eq(ring_r.data),
            ack_r.addr.eq(egress.ack_rd_addr), egress.ack_rd_data.eq(ack_r.data),
            self.o.valid.eq(egress.o.valid),
            self.o.payload.eq(egress.o.payload),
            egress.o.ready.eq(self.o.ready),
            shaper.now.eq(self.now),
            shaper.cpb_q16.eq(csr.params.shaper_cpb_q16),
            shaper.burst_bytes.eq(csr.params.shaper_burst_bytes),
            shaper.charge_base.eq(csr.params.shaper_charge_base),
            shaper.overhead_bytes.eq(csr.params.shaper_overhead_bytes),
            shaper.mpu_bytes.eq(csr.params.shaper_mpu_bytes),
            shaper.link_layer.eq(csr.params.shaper_link_layer),
            shaper.charge.eq(manager.egress_start),
            shaper.charge_bytes.eq(manager.egress_bytes),
            shaper.charge_l3_bytes.eq(manager.egress_l3_bytes),
            self.wake_at.eq(shaper.wake_at),
        ]

        # Registers, counters, trace.
        m.d.comb += [
            csr.inc.frames_in.eq(ingress.stat_frame),
            csr.inc.bytes_in.eq(ingress.stat_bytes),
            csr.inc.frames_out.eq(egress.stat_frame),
            csr.inc.bytes_out.eq(egress.stat_bytes),
            csr.inc.acks_in.eq(ingress.stat_pure_ack),
            csr.inc.acks_ineligible.eq(ingress.stat_ineligible),
            csr.inc.acks_superseded.eq(manager.stat_superseded),
            csr.inc.cam_collisions.eq(manager.stat_collision),
            csr.inc.cam_full.eq(manager.stat_cam_full),
            csr.inc.drop_overrun.eq(ingress.ev_overrun),
            csr.inc.red_marked.eq(manager.stat_red_marked),
            csr.inc.red_ce_already.eq(manager.stat_red_ce_already),
            csr.inc.seg_frames.eq(manager.stat_seg_frame),
            csr.inc.seg_chunks.eq(manager.stat_seg_chunk),
            csr.inc.acc_escalated.eq(manager.stat_acc_escalated),
            csr.inc.acc_marked.eq(manager.stat_acc_marked),
            csr.info.ack_slots.eq(self.ack_slots),
            csr.info.flow_entries.eq(self.flow_entries),
            csr.info.data_buffer_bytes.eq(self.data_buffer_bytes),
            csr.info.ack_queue_depth.eq(manager.ack_queue_depth),
            csr.info.data_queue_frames.eq(manager.data_queue_frames),
            csr.info.flows_active.eq(manager.flows_active),
            csr.info.red_avg_bytes.eq(manager.red_avg_bytes),
            csr.info.data_queues.eq(self.flow_entries + 1 if self.flow_queues else 0),
            csr.info.host_buckets.eq(self.host_buckets),
            self.event.valid.eq(manager.ev_valid),
            self.event.kind.eq(manager.ev_kind),
            self.event.overrun.eq(ingress.ev_overrun),
            self.backlog.eq(manager.backlog),
            # (An entry still inside its FIFO, written but not yet readable,
            # counts as in flight.)
            self.idle.eq(~in_valid & ingress.idle & (entries.level == 0) & manager.idle &
                         ~egress.busy & ~egress.o.valid & ~csr.busy),
        ]
        for name, kind in (("drop_runt", Event.DROP_RUNT), ("drop_oversize", Event.DROP_OVERSIZE),
                           ("drop_data_full", Event.DROP_DATA_FULL),
                           ("drop_ack_front", Event.DROP_ACK_FRONT),
                           ("drop_ack_covered", Event.DROP_ACK_COVERED),
                           ("drop_red", Event.DROP_RED),
                           ("drop_data_overflow", Event.DROP_DATA_OVERFLOW)):
            m.d.comb += csr.inc[name].eq(manager.ev_valid & (manager.ev_kind == kind))
        wiring.connect(m, wiring.flipped(self.csr), csr.bus)
        return m


def flat_streams(core, top):
    """The statements that connect ``core``'s streams and ``now`` to a top's
    flat ports ``i_*``, ``o_*`` and ``now`` (spec section 8)."""
    return [
        core.i.valid.eq(top.i_valid), top.i_ready.eq(core.i.ready),
        core.i.payload.data.eq(top.i_data), core.i.payload.keep.eq(top.i_keep),
        core.i.payload.first.eq(top.i_first), core.i.payload.last.eq(top.i_last),
        top.o_valid.eq(core.o.valid), core.o.ready.eq(top.o_ready),
        top.o_data.eq(core.o.payload.data), top.o_keep.eq(core.o.payload.keep),
        top.o_first.eq(core.o.payload.first), top.o_last.eq(core.o.payload.last),
        core.now.eq(top.now),
    ]


class UplinkCoreTop(wiring.Component):
    """:class:`UplinkCore` with flat ports, for Verilator harnesses (module
    ``ackfilter_core``; ``docs/spec.md`` section 8).

    ``i_valid i_ready i_data i_keep i_first i_last``, the same ``o_*``,
    ``now``, ``csr_addr csr_r_stb csr_r_data csr_w_stb csr_w_data``,
    ``ev_valid ev_kind ev_overrun``, ``idle``, ``backlog``, ``wake_at``.

    ``registered_reset=True`` (the C++ replay harness's build) takes ``rst``
    through a flip-flop before it resets the core, so the core is reset one
    cycle after ``rst`` says. Amaranth writes every register's next state as
    logic that ends in ``if (rst)``; with ``rst`` a top-level input, Verilator
    evaluates all of it on every ``eval()`` (twice a cycle), with ``rst`` from
    a register only after the clock edge: the replay runs about 1.6 times as
    fast. The core's logic is the same.
    """

    def __init__(self, *, registered_reset=False, **sizes):
        self._sizes = sizes
        self._registered_reset = registered_reset
        resets = {"clk": In(1), "rst": In(1)} if registered_reset else {}
        super().__init__({
            **resets,
            "i_valid":    In(1),   "i_ready":    Out(1),
            "i_data":     In(32),  "i_keep":     In(4),
            "i_first":    In(1),   "i_last":     In(1),
            "o_valid":    Out(1),  "o_ready":    In(1),
            "o_data":     Out(32), "o_keep":     Out(4),
            "o_first":    Out(1),  "o_last":     Out(1),
            "now":        In(48),
            "csr_addr":   In(8),
            "csr_r_stb":  In(1),   "csr_r_data": Out(32),
            "csr_w_stb":  In(1),   "csr_w_data": In(32),
            "ev_valid":   Out(1),  "ev_kind":    Out(4), "ev_overrun": Out(1),
            "idle":       Out(1),  "backlog":    Out(1), "wake_at":    Out(48),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = UplinkCore(**self._sizes)
        if self._registered_reset:
            m.domains.sync = sync = ClockDomain("sync")
            rst_q = Signal(init=1, reset_less=True)
            m.d.sync += rst_q.eq(self.rst)
            m.d.comb += [sync.clk.eq(self.clk), sync.rst.eq(rst_q)]
        m.d.comb += flat_streams(core, self)
        m.d.comb += [
            core.csr.addr.eq(self.csr_addr), core.csr.r_stb.eq(self.csr_r_stb),
            self.csr_r_data.eq(core.csr.r_data),
            core.csr.w_stb.eq(self.csr_w_stb), core.csr.w_data.eq(self.csr_w_data),
            self.ev_valid.eq(core.event.valid), self.ev_kind.eq(core.event.kind),
            self.ev_overrun.eq(core.event.overrun),
            self.idle.eq(core.idle), self.backlog.eq(core.backlog), self.wake_at.eq(core.wake_at),
        ]
        return m
