"""The reliability campaign: real captures and generated traces,
mutated (:mod:`.mutate`), replayed through the RTL, judged decision by decision
against the golden model and by an independent checker (:mod:`.checker`).

``ackfilter fuzz`` / ``make fuzz`` run it (:mod:`.campaign`).
"""


def main(args):
    """Entry point of ``ackfilter fuzz`` (imported lazily by :mod:`ackfilter.cli`)."""
    from .campaign import main as campaign_main
    return campaign_main(args)
