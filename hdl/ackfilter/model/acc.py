"""ACK congestion control in the gateway (``docs/spec.md`` section 11).

Balakrishnan et al. 1997 (section 4.2) have the *receiver* of a download
slow its ACKs when the reverse path is congested, told so by ECN marks on
its ACKs. The gateway owns that path's queue, so it can do both halves
itself: when the ACK queue's average length is above a threshold it
*escalates*:

* the ACK filter supersedes as in aggressive mode (one queued ACK per flow is
  enough), even when ``ack_mode`` is conservative, which keeps two for the
  ACK clock of slow start: with ACKs already waiting in a long queue, a
  second queued ACK of a flow only adds delay, and collapsing it is what
  shortens the queue;
* an ECN-capable ACK (ECT(0) or ECT(1), as RFC 8311 and Accurate ECN allow on
  pure ACKs) leaves marked CE (:func:`ackfilter.model.red.set_ce`), which
  tells a receiver that takes ACK congestion control (RFC 5690) to ACK less
  often. Not-ECT ACKs are never dropped for it: the queue's own rules
  (section 3) handle a full ACK queue.

Below the threshold nothing changes. The ECN field an ACK is compared by in
supersession is the one it leaves with, so a mark is never superseded away.

The average is an EWMA of the ACK queue's length in ACKs, sampled at every
pure ACK's arrival before its decision: ``avg <- avg + ((q << 8) - avg) >>
acc_wq_shift`` in units of 1/256 ACK (the arithmetic shift rounds towards
minus infinity, as a signed shift in hardware).
"""

from dataclasses import dataclass

from ..params import param

__all__ = ["ACC_AVG_FRAC_BITS", "Acc", "acc_ewma_step"]

#: Fractional bits of the ACK queue's average.
ACC_AVG_FRAC_BITS = 8


def acc_ewma_step(avg_q8, qlen_acks, wq_shift):
    """The ACK queue's average after one sample: ``avg + (((q << 8) - avg) >> wq_shift)``."""
    return avg_q8 + (((qlen_acks << ACC_AVG_FRAC_BITS) - avg_q8) >> wq_shift)


@dataclass
class Acc:
    """ACC's registers and state, for :class:`~ackfilter.model.FilterModel`.

    Parameters
    ----------
    threshold_acks : int
        ``acc_threshold_acks``: escalate while the average is above it.
    wq_shift : int
        ``acc_wq_shift``: the weight of a sample is 2^-wq_shift.
    """

    threshold_acks: int = param("acc_threshold_acks").default
    wq_shift: int = param("acc_wq_shift").default
    avg_q8: int = 0

    def __post_init__(self):
        for name in ("threshold_acks", "wq_shift"):
            value = getattr(self, name)
            reg = param(f"acc_{name}")
            if isinstance(value, bool) or not isinstance(value, int) or not reg.minimum <= value <= reg.maximum:
                raise ValueError(f"acc {name} must be an integer {reg.minimum}..{reg.maximum}, "
                                 f"not {value!r}")

    def arrive(self, qlen_acks):
        """A pure ACK arrives to an ACK queue of ``qlen_acks``: take the
        sample; return whether this arrival is escalated."""
        self.avg_q8 = acc_ewma_step(self.avg_q8, qlen_acks, self.wq_shift)
        return self.avg_q8 > self.threshold_acks << ACC_AVG_FRAC_BITS
