"""The soft-core evaluation script (ackfilter.reports.cpu_eval): its wrappers and
its candidates' files. Nothing is synthesized; the checks that read a
pythondata-cpu-* package are skipped where it is not installed."""

import importlib
import re

import pytest

from ackfilter.reports import cpu_eval as E


@pytest.mark.parametrize("name", sorted(E.CANDIDATES))
def test_wrapper_names_its_top_and_instantiates_the_core(name):
    c = E.CANDIDATES[name]
    v = E.wrapper_verilog(c)
    assert re.search(rf"^module {c.top} \(", v, re.M)
    assert re.search(rf"^module {c.top}_cpu \(", v, re.M)
    assert re.search(rf"^\s*{c.module} (#\(|core \()", v, re.M)
    assert f"{c.top}_cpu cpu (" in v
    # Every bus port is connected, the harness's chains have the ports' widths.
    for port, _ in c.inputs + c.outputs + tuple(c.ties.items()):
        assert f".{port}(" in v
    assert f"reg [{sum(w for _, w in c.inputs) - 1}:0] in_chain;" in v
    assert f"reg [{sum(w for _, w in c.outputs) - 1}:0] out_q;" in v
    assert (".i_rst(rst)" in v) if c.reset == "i_rst" else True
    assert (".resetn(!rst)" in v) if c.reset == "!resetn" else True


@pytest.mark.parametrize("name", sorted(E.CANDIDATES))
def test_package_files_exist_and_declare_the_core(name):
    c = E.CANDIDATES[name]
    pytest.importorskip(c.package)
    root = E.data_location(c)
    assert root.is_dir()
    texts = [(root / f).read_text() for f in c.files]
    assert any(re.search(rf"^module {c.module}\b", t, re.M) for t in texts)
    names = [n for n, _ in E.sources(c)]
    assert names[-1] == f"{c.top}.v" and len(set(names)) == len(names)


def test_serv_file_list_has_every_module_serv_rf_top_needs():
    c = E.CANDIDATES["serv"]
    pytest.importorskip(c.package)
    text = "\n".join(t for _, t in E.sources(c))
    declared = set(re.findall(r"^module (serv_\w+)", text, re.M))
    used = set(re.findall(r"^\s*(serv_\w+)\s*(?:#|\w+\s*\(?\s*$|$)", text, re.M))
    assert {"serv_rf_ram", "serv_immdec", "serv_csr"} <= used
    # Only inside `if (ALIGN)` / `if (COMPRESSED)` generate branches, both off here.
    assert used - declared <= {"serv_aligner", "serv_compdec"}


def test_unknown_candidate_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as e:
        E.main(["--only", "serv,z80"])
    assert e.value.code == 2
    assert "z80" in capsys.readouterr().err


def test_missing_package_is_reported_not_raised(monkeypatch, tmp_path, capsys):
    def no_package(name):
        raise ModuleNotFoundError(name)
    monkeypatch.setattr(importlib, "import_module", no_package)
    assert E.main(["--only", "serv", "--out", str(tmp_path)]) == 2
    assert "pip install pythondata-cpu-serv" in capsys.readouterr().err
