"""``python -m ackfilter.reports``: see :mod:`ackfilter.reports.report`."""

import sys

from .report import main

sys.exit(main())
