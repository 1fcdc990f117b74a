"""The generated register map (C header, JSON) and the host tool that reads it."""

import json
import subprocess
import sys
import textwrap

import pytest

from ackfilter import params as P
from ackfilter import regmap
from ackfilter.paths import REPO_ROOT

HOST_TOOLS = REPO_ROOT / "host-tools"


def test_the_generated_files_are_up_to_date():
    stale = regmap.stale()
    assert not stale, (f"stale: {', '.join(str(p) for p in stale)}; "
                       "run `make regmap` and commit the result")


def test_a_changed_table_makes_the_files_stale(monkeypatch):
    monkeypatch.setattr(P, "ID_VALUE", P.ID_VALUE + 1)
    assert set(regmap.stale()) == {regmap.C_HEADER, regmap.JSON_MAP}


def test_the_host_tools_rate_grammar_is_a_copy_of_ours_that_goes_stale_with_it(tmp_path, monkeypatch):
    # ackfilter-ctl cannot import the gateware package, so it ships a
    # generated copy of ackfilter.units: one grammar for both tools.
    source = regmap.UNITS_SOURCE.read_text()
    copy = regmap.UNITS_COPY.read_text()
    header, _, rest = copy.partition("\n")
    assert rest == source and "do not edit" in header and header.startswith("#")
    changed = tmp_path / "units.py"
    changed.write_text(source.replace('"mbit"', '"mbits"'))
    monkeypatch.setattr(regmap, "UNITS_SOURCE", changed)
    assert regmap.stale() == [regmap.UNITS_COPY]


def test_the_c_header_compiles_and_gives_the_tables_numbers(tmp_path):
    # Every address, range and event number as a C compiler sees it.
    lines = []
    for p in P.PARAMS:
        n = p.name.upper()
        lines += [f'printf("{p.name} %ld %ld %ld %ld\\n", (long)ACKFILTER_CSR_{n}, '
                  f'(long)ACKFILTER_{n}_MIN, (long)ACKFILTER_{n}_MAX, (long)ACKFILTER_{n}_DEFAULT);']
    lines += [f'printf("{c.name} %ld\\n", (long)ACKFILTER_CSR_{c.name.upper()});' for c in P.COUNTERS]
    lines += [f'printf("{e} %ld\\n", (long)ACKFILTER_EVENT_{e});' for e in P.EVENTS]
    lines += ['printf("last %ld id %ld\\n", (long)ACKFILTER_CSR_LAST, (long)ACKFILTER_ID_VALUE);',
              '#define COUNT(name, addr, drop) n++;', 'int n = 0; ACKFILTER_COUNTERS(COUNT)',
              'printf("counters %d\\n", n);']
    src = tmp_path / "t.c"
    src.write_text('#include <stdio.h>\n#include "ackfilter_regs.h"\nint main(void) {\n'
                   + textwrap.indent("\n".join(lines), "    ") + "\n    return 0;\n}\n")
    exe = tmp_path / "t"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", str(regmap.C_HEADER.parent),
                    str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    want = [f"{p.name} {p.addr} {p.minimum} {p.maximum} {p.default}" for p in P.PARAMS]
    want += [f"{c.name} {c.addr}" for c in P.COUNTERS]
    want += [f"{e} {i}" for i, e in enumerate(P.EVENTS)]
    want += [f"last {P.csr_last()} id {P.ID_VALUE}", f"counters {len(P.COUNTERS)}"]
    assert got == want


def test_the_json_map_has_every_register():
    m = json.loads(regmap.JSON_MAP.read_text())
    assert [(p["name"], p["addr"], p["min"], p["max"], p["default"], p["signed"]) for p in m["params"]] == \
        [(p.name, p.addr, p.minimum, p.maximum, p.default, p.signed) for p in P.PARAMS]
    assert [(c["name"], c["addr"]) for c in m["counters"]] == [(c.name, c.addr) for c in P.COUNTERS]
    assert {i["name"]: i["addr"] for i in m["info"]} == P.INFO
    assert m["events"] == list(P.EVENTS) and m["id"] == P.ID_VALUE


def test_the_map_allows_exactly_the_chunk_sizes_the_segmenter_takes():
    # The register ignores chunk_bytes' low four bits (8 acts as 0, off): the
    # map's step refuses what the segmenter's own check refuses.
    from ackfilter.model.segmenter import check_chunk_bytes
    sys.path.insert(0, str(HOST_TOOLS))
    from ackfilter_ctl import regmap as ctl_regmap

    def takes(check, value):
        try:
            check(value)
        except ValueError:
            return False
        return True

    shipped = ctl_regmap.load()
    values = range(-32, 2100)
    assert [v for v in values if takes(lambda v: shipped.check_value("chunk_bytes", v), v)] == \
        [v for v in values if takes(check_chunk_bytes, v)]
    with pytest.raises(ValueError, match="chunk_bytes = 8 is not a multiple of 16 .*act as 0.*"
                                         "allowed 0 .. 1456 bytes in steps of 16"):
        shipped.check_value("chunk_bytes", "8")


def test_the_host_tool_installs_and_runs_without_the_gateware(tmp_path):
    # pip install of host-tools/ as a user does it (build isolation: it fetches
    # setuptools), then the
    # tool in an isolated interpreter that cannot see hdl/ or Amaranth.
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(HOST_TOOLS)],
                   check=True, capture_output=True, text=True)
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; from ackfilter_ctl.cli import main; "
            "rc = main(sys.argv[2:]); assert 'amaranth' not in sys.modules, 'imported amaranth'; "
            "assert 'ackfilter' not in sys.modules, 'imported the gateware package'; sys.exit(rc)")
    run = lambda *a: subprocess.run([sys.executable, "-I", "-c", code, str(target), *a],  # noqa: E731
                                    capture_output=True, text=True, cwd=tmp_path)
    listed = run("registers")
    assert listed.returncode == 0, listed.stderr
    for p in P.PARAMS:
        assert p.name in listed.stdout
    bad = run("check", "shaper_overhead_bytes", "-65")
    assert bad.returncode == 2 and "allowed -64 .. 256 bytes" in bad.stderr
    good = run("check", "ack_mode", "aggressive")
    assert good.returncode == 0 and "ack_mode = 2" in good.stdout
    # tc's rate grammar, from the generated copy of ackfilter.units the package ships
    tuned = run("tune", "--up", "1mbit", "--down", "16mbit")
    assert tuned.returncode == 0 and "shaper_cpb_q16" in tuned.stdout
    prefix = run("tune", "--up", "1M", "--down", "16mbit")
    assert prefix.returncode == 2 and "write 1mbit for bit/s" in prefix.stderr
