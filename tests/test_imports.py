"""The package's import graph: no circles, the hardware apart from the model
and the tools, and each package importable alone.

The graph is read from the source (every ``import`` and ``from ... import``
of the package, at module level or inside a function), so an import made
only on one code path counts as much as one made at load time."""

import ast
import subprocess
import sys

import pytest

from ackfilter.paths import PKG_DIR
from ackfilter.sim.verilog import RTL_PARTS, rtl_sources


def _module_name(path):
    parts = list(path.relative_to(PKG_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in PKG_DIR.rglob("*.py")}


def _import_statements(name, path):
    """``(module, names)`` of each import in ``name``'s source, relative ones
    resolved: ``from M import a, b`` gives ``(M, [a, b])``, ``import M``
    gives ``(M, [])``."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            yield ".".join(base + (node.module.split(".") if node.module else [])), [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, []


def _imports(name, path):
    """The package's modules ``name`` imports (a package stands for its
    ``__init__``; ``from P import m`` names ``P.m`` when that is a module)."""
    found = set()
    for module, names in _import_statements(name, path):
        found |= {t for t in [module] + [f"{module}.{n}" for n in names] if t in MODULES}
    # A package's own parent packages are imported before it anyway.
    return {t for t in found if t != name and not name.startswith(t + ".")}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _dangling(name, path):
    """The package's modules ``name`` imports that do not exist (``from P
    import x`` is fine when P exists: x may be a name in it)."""
    return {module for module, _ in _import_statements(name, path)
            if module.split(".")[0] == "ackfilter" and module not in MODULES}


def _package(name):
    """``ackfilter.gateware.mac.rx`` -> ``ackfilter.gateware``; a top-level module is its own."""
    return ".".join(name.split(".")[:2])


def _cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_reader_sees_the_imports_it_must():
    # The reader itself: a relative import, a function-level one, a
    # package's submodule named in `from P import m`.
    assert "ackfilter.params" in GRAPH["ackfilter.gateware.flow_cam"]
    assert "ackfilter.soc.soc" in GRAPH["ackfilter.board.top"]              # inside elaborate()
    assert "ackfilter.soc.memmap" in GRAPH["ackfilter.soc.periph"]           # from . import memmap as M
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_import_of_the_package_names_a_module_it_has():
    # (A module imported only inside a function is not loaded until called:
    # one that was moved away fails here, not at the first call.)
    dangling = {name: sorted(d) for name, path in MODULES.items() if (d := _dangling(name, path))}
    assert not dangling, dangling


def test_no_module_imports_itself_back():
    assert _cycles(GRAPH) == []


def test_no_package_imports_itself_back():
    packages = {}
    for name, deps in GRAPH.items():
        packages.setdefault(_package(name), set()).update(_package(d) for d in deps if _package(d) != _package(name))
    assert _cycles(packages) == []


HARDWARE = ("ackfilter.gateware", "ackfilter.soc", "ackfilter.board.top", "ackfilter.board.sim_top",
            "ackfilter.board.regs", "ackfilter.board.revisions")
NOT_HARDWARE = ("ackfilter.model", "ackfilter.sim", "ackfilter.reports", "ackfilter.formal", "ackfilter.cli",
                "ackfilter.regmap", "ackfilter.board.build")


@pytest.mark.parametrize("part", HARDWARE)
def test_the_hardware_imports_no_model_and_no_tool(part):
    wrong = {(name, dep) for name, deps in GRAPH.items() if name == part or name.startswith(part + ".")
             for dep in deps if any(dep == n or dep.startswith(n + ".") for n in NOT_HARDWARE)}
    assert not wrong, sorted(wrong)


def test_the_verilog_cache_key_covers_what_the_tops_import():
    """Every module the simulation tops' registry reaches is one of the
    files whose text keys the Verilog cache, so no edit that changes a
    top's Verilog can leave a stale file in use."""
    keyed = {_module_name(p) for p in rtl_sources()}
    reached, todo = set(), ["ackfilter.sim.gen_verilog"]
    while todo:
        m = todo.pop()
        if m not in reached:
            reached.add(m)
            # Its imports, and its parent packages' (imported on the way).
            todo += GRAPH[m]
            todo += [".".join(m.split(".")[:i]) for i in range(1, m.count(".") + 1)]
    # (A package whose __init__ imports nothing elaborates nothing.)
    missing = sorted(m for m in reached if m not in keyed and (GRAPH[m] or MODULES[m].name != "__init__.py"))
    assert not missing, f"not in RTL_PARTS {RTL_PARTS}: {missing}"
    assert "ackfilter.model" not in keyed and not any(k.startswith("ackfilter.model.") for k in keyed)


PACKAGES = sorted({_package(n) for n in MODULES if n != "ackfilter" and not n.endswith("__main__")})


def test_each_package_imports_alone():
    """Each package (and top-level module) in a fresh interpreter of its
    own: one whose import depended on another's being imported first
    fails here."""
    code = ("import importlib, sys\n"
            "for name in sys.argv[1:]:\n"
            "    before = set(sys.modules)\n"
            "    importlib.import_module(name)\n"
            "    for m in set(sys.modules) - before:\n"
            "        if m.startswith('ackfilter'):\n"
            "            del sys.modules[m]\n")
    # One interpreter, each package imported with the package's modules
    # forgotten before the next: as alone as a fresh process, for less time.
    proc = subprocess.run([sys.executable, "-c", code, *PACKAGES], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(PACKAGES) >= 14, PACKAGES
