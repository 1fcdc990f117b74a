"""pytest wrapper of ``tb_segmenter``: the segmenter's edge cases through the
RTL at line rate, on both builds of the core (``runner.CORE_BUILDS``)."""

import pytest

from runner import CORE_BUILDS, run_core


@pytest.mark.parametrize("build", CORE_BUILDS)
def test_segmenter(build):
    run_core("tb_segmenter", build)
