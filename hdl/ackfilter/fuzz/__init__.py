"""The reliability campaign of issue 9: real captures and generated traces,
mutated (:mod:`.mutate`), replayed through the RTL, judged decision by decision
against the golden model and by an independent checker (:mod:`.checker`).

``ackfilter fuzz`` / ``make fuzz`` run it (:mod:`.campaign`).

The modules live in a subpackage so that editing them does not make
:func:`ackfilter.replay.generate_verilog` regenerate the Verilog (it watches
``hdl/ackfilter/*.py``).
"""


def main(args):
    """Entry point of ``ackfilter fuzz`` (imported lazily by :mod:`ackfilter.cli`)."""
    from .campaign import main as campaign_main
    return campaign_main(args)
