"""pytest wrapper of ``tb_red``: RED's marking and drop rules through the RTL
at line rate, on both builds of the core (``runner.CORE_BUILDS``)."""

import pytest

from runner import CORE_BUILDS, run_core


@pytest.mark.parametrize("build", CORE_BUILDS)
def test_red(build):
    run_core("tb_red", build)
