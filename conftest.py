"""pytest, for the whole repository: what runs first.

The gate-level simulation's model (``cocotb_tests/test_gatesim.py``) takes
minutes to build on one pytest worker. Collected in its turn, it came last
and alone decided when ``make test`` ended (CI at half speed: five minutes
of one core with the other idle); first, its build runs beside the other
worker's tests."""

FIRST = ("cocotb_tests/test_gatesim.py",)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))
