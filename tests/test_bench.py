"""``ackfilter bench``'s capacity figure counts frames, not events."""
from ackfilter import params
from ackfilter.sim.bench import arrival_cycles


def test_capacity_counts_one_arrival_per_frame_whatever_was_dropped_for_it():
    # Three frames: an ACK that first drops a covered ACK, one that drops the
    # queue's head, a data frame the buffer has no room for; departures in
    # between. Each frame has exactly one arrival event.
    events = [(10, "DROP_ACK_COVERED"), (10, "ARRIVE_ACK_NEW"), (12, "DEPART_ACK"),
              (29, "DROP_ACK_FRONT"), (29, "ARRIVE_ACK_UNTRACKED"), (40, "DEPART_DATA"),
              (48, "DROP_DATA_FULL")]
    assert arrival_cycles(events) == [10, 29, 48]


def test_every_arrival_event_is_an_event_the_core_reports():
    assert params.ARRIVAL_EVENTS <= set(params.EVENTS)
    assert not {"DROP_ACK_COVERED", "DROP_ACK_FRONT", "DEPART_ACK", "DEPART_DATA"} & params.ARRIVAL_EVENTS


def test_line_rate_data_frames_take_the_uploads_in_turn_and_the_acks_stay_as_they_were():
    from scapy.layers.l2 import Ether
    from scapy.layers.inet import TCP
    from ackfilter.sim.bench import line_rate_frames
    one, four = line_rate_frames(16), line_rate_frames(16, data_flows=4)
    assert [f for t, f in one[::2]] == [f for t, f in four[::2]]          # the ACKs
    ports = [Ether(f)[TCP].sport for t, f in four[1::2]]
    assert ports == [50000, 50001, 50002, 50003] * 2
    assert {Ether(f)[TCP].sport for t, f in one[1::2]} == {50000}
    assert all(t == 0.0 for t, f in four)
