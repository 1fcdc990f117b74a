"""pytest wrapper of ``tb_red``: RED's marking and drop rules through the RTL
at line rate, on the board's build of the core, and on the other with
``ACKFILTER_BOTH_BUILDS=1`` (``runner.core_builds``)."""

import pytest

from runner import core_builds, run_core


@pytest.mark.parametrize("build", core_builds())
def test_red(build):
    run_core("tb_red", build)
