"""pytest, for the whole repository: what runs first, and a check that
pytest-xdist keeps its groups.

The gate-level simulation's model (``cocotb_tests/test_gatesim.py``) takes
minutes to build on one pytest worker. Collected in its turn, it came last
and alone decided when ``make test`` ended (CI at half speed: five minutes
of one core with the other idle); first, its build runs beside the other
worker's tests.

Tests that must not run beside each other share an ``xdist_group`` (the
real-time bridges, the firmware builds, the gate model), which
``--dist loadgroup`` sends to one worker by a suffix it adds to their node
ids. pytest 9.2 stores node ids where pytest-xdist 3.8 cannot add it, and
the groups silently became no groups at all: a worker whose grouped tests
lack the suffix stops here."""

import pytest

FIRST = ("cocotb_tests/test_gatesim.py",)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))
    if getattr(config.option, "loadgroup", False):
        lost = [item.nodeid for item in items
                if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
        if lost:
            raise pytest.UsageError(f"pytest-xdist did not group {len(lost)} tests marked xdist_group "
                                    f"(e.g. {lost[0]}): this pytest and pytest-xdist do not work together")
