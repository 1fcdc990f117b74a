"""``python -m ackfilter.sim.fuzz``: the same as ``ackfilter fuzz``."""

import sys

from .campaign import main

sys.exit(main(sys.argv[1:]))
