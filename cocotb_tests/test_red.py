"""pytest wrapper of ``tb_red``: RED's marking and drop rules through the RTL
at line rate, on the default elaboration (``build_name="core"``)."""

import pytest

from runner import CORE_BUILDS, run_core


@pytest.mark.parametrize("build", CORE_BUILDS)
def test_red(build):
    run_core("tb_red", build)
