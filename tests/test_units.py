"""tc-style unit parsing (ackfilter.units)."""

import pytest

from ackfilter.units import format_rate, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("text, bps", [
    ("256000", 256_000),
    ("256kbit", 256_000),
    ("256Kbit", 256_000),
    ("256KBIT", 256_000),
    ("20mbit", 20_000_000),
    ("1gbit", 10**9),
    ("1tbit", 10**12),
    ("1.5mbit", 1_500_000),
    ("1 mbit", 1_000_000),
    ("100bit", 100),
    ("1kibit", 1024),
    ("1mibit", 2**20),
    ("1gibit", 2**30),
    ("1bps", 8),                 # tc: bps is BYTES per second
    ("1kbps", 8_000),
    ("2mbps", 16_000_000),
    ("1gbps", 8 * 10**9),
    ("1kibps", 8 * 1024),
    ("1MiBps", 8 * 2**20),
    (" 64kbit ", 64_000),
    ("1e6", 1_000_000),
    (".5mbit", 500_000),
    (256000, 256_000),
    ("0", 0),
])
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text", [
    "", "kbit", "fast", "10furlongs", "-5mbit", "10 k bit", "1,5mbit", "10kb", "mbit10",
    "1.2.3mbit", None, True,
])
def test_parse_rate_errors(text):
    with pytest.raises(ValueError) as info:
        parse_rate(text)
    msg = str(info.value)
    assert repr(text) in msg          # names the bad value
    if text is not None and text is not True:
        assert "kbit" in msg and "bps" in msg   # lists the accepted forms


@pytest.mark.parametrize("text", ["0.4bit", "0.4", "1e-400mbit", "0.0004kbit", 0.4])
def test_a_rate_that_rounds_to_zero_is_an_error_not_unshaped(text):
    with pytest.raises(ValueError, match="rounds to 0 bit/s") as info:
        parse_rate(text)
    assert repr(text) in str(info.value)


@pytest.mark.parametrize("text", ["0", "0kbit", "0.0mbit", 0, 0.0])
def test_only_an_exact_zero_is_zero(text):
    assert parse_rate(text) == 0


@pytest.mark.parametrize("text", [float("inf"), float("-inf"), float("nan"), "1e5000mbit", "inf", "nan"])
def test_a_rate_that_is_not_finite_is_an_error(text):
    with pytest.raises(ValueError) as info:
        parse_rate(text)
    assert repr(text) in str(info.value)


def test_huge_and_tiny_exponents_are_read_exactly():
    # 1e400mbit used to overflow a float (a traceback); it is a number, just
    # not one the shaper takes (the CLI says so, tests/test_cli.py).
    assert parse_rate("1e400mbit") == 10**406
    assert parse_rate("1.5e-3kbit") == 2            # 1.5 bit/s rounds to 2 (half to even)
    assert parse_rate("2.5bit") == 2 and parse_rate("3.5bit") == 4
    assert parse_size("1e400") == 10**400


@pytest.mark.parametrize("text, write", [("1M", "1mbit"), ("64k", "64kbit"), ("1.5G", "1.5gbit"),
                                         ("20 m", "20mbit"), ("2Ki", "2kibit"), ("1T", "1tbit")])
def test_a_prefix_alone_is_refused_saying_what_tc_writes(text, write):
    # tc(8) refuses "1M" (bits or bytes?); so do we, saying both ways to write it.
    with pytest.raises(ValueError) as info:
        parse_rate(text)
    msg = str(info.value)
    assert repr(text) in msg and f"write {write} for bit/s" in msg and write[:-3] + "bps" in msg


def test_parse_rate_error_mentions_bytes():
    with pytest.raises(ValueError, match="BYTES per second"):
        parse_rate("12 parsecs")


@pytest.mark.parametrize("bps, text", [
    (256_000, "256kbit"), (1_500_000, "1.5mbit"), (10**9, "1gbit"), (999, "999bit"),
])
def test_format_rate(bps, text):
    assert format_rate(bps) == text
    assert parse_rate(format_rate(bps)) == bps


def test_size_and_time():
    assert parse_size("1514") == 1514
    assert parse_size("32k") == 32768
    assert parse_size("1mb") == 2**20
    assert parse_size("8kbit") == 1024
    assert parse_time("10ms") == pytest.approx(0.010)
    assert parse_time("250us") == pytest.approx(250e-6)
    assert parse_time("2") == 2
    with pytest.raises(ValueError, match="invalid size"):
        parse_size("3 cups")
    with pytest.raises(ValueError, match="invalid time"):
        parse_time("soon")


def test_cam_tag_is_the_crc16_xmodem_of_the_fold():
    import binascii
    from ackfilter.flowkey import tag_of_fold
    for fold in (0, 1, 0x12345678, 0xFFFFFFFF, 0x80000000, 0xDEADBEEF):
        assert tag_of_fold(fold) == binascii.crc_hqx(fold.to_bytes(4, "big"), 0)
