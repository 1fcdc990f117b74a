"""The README and the docs agree with the repository (issue 30).

* The README's Layout table names every top-level folder of the repository,
  every folder of ``sim/`` and every package and module directly under
  ``hdl/ackfilter/``; every path it names exists, and so does every file
  name its descriptions give for a folder of the code.
* Every relative link in ``README.md`` and ``docs/*.md`` reaches a file or
  folder of the repository, and a heading of it when the link has an anchor
  (GitHub's anchors: the heading's text, lower case, punctuation dropped,
  spaces as hyphens, ``-1``, ``-2`` ... for repeats); the README links every
  page of ``docs/``.
* The README stays a front door: at most 250 lines.

Each check is a function of the text, so it can be run on any version of a
file (``git show HEAD~N:README.md``)."""

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_LINES = 250

#: Folders that are never the repository's own (generated or installed).
_NOT_OURS = {"build", "__pycache__", ".venv", "node_modules"}


def tracked_files():
    """The repository's files, relative to its root: ``git ls-files`` (with the
    new files git does not ignore), or a walk of the tree without generated
    and hidden folders."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, text=True, check=True).stdout
        files = [line for line in out.splitlines() if line]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for p in REPO.rglob("*"):
        rel = p.relative_to(REPO)
        if p.is_file() and not any(part in _NOT_OURS or part.startswith(".") or part.endswith(".egg-info")
                                   for part in rel.parts[:-1]):
            files.append(rel.as_posix())
    return files


FILES = tracked_files()
DIRS = {"/".join(f.split("/")[:i]) for f in FILES for i in range(1, f.count("/") + 1)}


def exists(rel):
    """Whether ``rel`` (relative to the root; a folder may end in ``/``; ``*``
    matches within a name) is a file of the repository or a folder holding one."""
    rel = rel.strip("/")
    if "*" in rel:
        pattern = re.compile("^" + re.escape(rel).replace(r"\*", "[^/]*") + "$")
        return any(pattern.match(f) for f in FILES) or any(pattern.match(d) for d in DIRS)
    return rel in DIRS or rel in FILES


def children(folder):
    """The files and folders directly in ``folder`` (relative to the root)."""
    prefix = folder.rstrip("/") + "/"
    return sorted({f[len(prefix):].split("/")[0] + ("/" if "/" in f[len(prefix):] else "")
                   for f in FILES if f.startswith(prefix)})


def top_level_folders():
    return sorted({f.split("/")[0] for f in FILES if "/" in f and not f.startswith(".")})


# -- the Layout table ---------------------------------------------------------------------

def section(text, heading):
    """The lines under ``## heading`` up to the next heading of that level or above."""
    m = re.search(rf"^## {re.escape(heading)}\s*$", text, re.M)
    if m is None:
        return None
    rest = text[m.end():]
    end = re.search(r"^#{1,2} ", rest, re.M)
    return rest[:end.start()] if end else rest


def layout_rows(text):
    """``[(paths, description)]`` of the README's Layout table: the paths are
    the backquoted names of the first column."""
    body = section(text, "Layout")
    if body is None:
        return []
    rows = []
    for line in body.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("-: ") or cells[0] == "path":
            continue
        rows.append((re.findall(r"`([^`]+)`", cells[0]), " | ".join(cells[1:])))
    return rows


#: A backquoted file or folder name in a description: checked against the row's folder.
_FILE_NAME = re.compile(r"^[\w.*-]+(?:/[\w.*-]+)*(?:\.(?:py|c|cpp|h|sh|ld|S)|/)$")


def layout_problems(text):
    """What is wrong with the Layout table of README ``text``: a list of sentences."""
    rows = layout_rows(text)
    if not rows:
        return ["no Layout table (a '## Layout' section with a | path | what | table)"]
    problems = []
    named = [p.strip("/") for paths, _ in rows for p in paths]
    for p in named:
        if not exists(p):
            problems.append(f"the Layout table names `{p}`, which does not exist")

    def covered(rel):
        return any(n == rel or n.startswith(rel + "/") for n in named)

    for d in top_level_folders():
        if not covered(d):
            problems.append(f"the Layout table does not name the top-level folder `{d}/`")
    for d in children("sim"):
        if d.endswith("/") and not covered("sim/" + d.rstrip("/")):
            problems.append(f"the Layout table does not name `sim/{d}`")
    for c in children("hdl/ackfilter"):
        if c in ("__init__.py", "__main__.py") or not (c.endswith("/") or c.endswith(".py")):
            continue
        if not covered("hdl/ackfilter/" + c.rstrip("/")):
            problems.append(f"the Layout table does not name `hdl/ackfilter/{c}`")
    for paths, what in rows:
        for p in paths:
            p = p.strip("/")
            folder = p if p in DIRS else p.rpartition("/")[0]
            for name in re.findall(r"`([^`\s]+)`", what):
                if _FILE_NAME.match(name) and not (exists(f"{folder}/{name}") or exists(name)):
                    problems.append(f"the Layout row of `{p}` names `{name}`, which is neither in "
                                    f"`{folder}/` nor at the root")
    return problems


# -- links and anchors ----------------------------------------------------------------------

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def without_code_blocks(text):
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def slug(heading):
    """GitHub's anchor of a heading's text (before de-duplication)."""
    text = _LINK.sub(lambda m: m.group(1), heading)
    text = _CODE.sub(lambda m: m.group(2), text)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor GitHub gives the headings of Markdown ``text``."""
    seen, out = {}, set()
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", without_code_blocks(text), re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(text):
    """The link targets of Markdown ``text``, outside code blocks and code spans."""
    text = without_code_blocks(text)
    text = _CODE.sub(lambda m: "`" + "x" * len(m.group(2)) + "`"
                     if "](" in m.group(2) else m.group(0), text)
    return [m.group(2) for m in _LINK.finditer(text)]


def link_problems(path, text):
    """What is wrong with the relative links of ``text``, the content of the
    Markdown file at ``path`` (absolute, in the repository)."""
    problems = []
    for target in links(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):   # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        if file_part:
            resolved = (path.parent / file_part).resolve()
            try:
                rel = resolved.relative_to(REPO).as_posix()
            except ValueError:
                problems.append(f"{target}: outside the repository")
                continue
            if not exists(rel):
                problems.append(f"{target}: no such file or folder ({rel})")
                continue
        else:
            resolved = path
        if anchor:
            if resolved.suffix != ".md":
                continue
            target_text = text if resolved == path else resolved.read_text()
            if anchor not in anchors(target_text):
                problems.append(f"{target}: no heading with the anchor #{anchor} in "
                                f"{resolved.relative_to(REPO).as_posix()}")
    return problems


def docs_map_problems(text):
    """The pages of docs/ that README ``text`` does not link."""
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(text) if t.partition("#")[0]}
    return [f"the README does not link docs/{d.name}" for d in DOCS if d.resolve() not in linked]


# -- the tests ------------------------------------------------------------------------------

def test_the_layout_table_names_every_folder_and_package_and_nothing_else():
    assert layout_problems(README.read_text()) == []


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_reaches_a_file_and_its_heading(path):
    assert link_problems(path, path.read_text()) == []


def test_the_readme_links_every_page_of_docs():
    assert docs_map_problems(README.read_text()) == []


def test_the_readme_is_a_front_door():
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_the_anchor_rules_are_githubs():
    assert slug("6. Shaper (link accounting, token bucket as GCRA)") == "6-shaper-link-accounting-token-bucket-as-gcra"
    assert slug("Today's links: latency under load") == "todays-links-latency-under-load"
    assert slug("`make demo`") == "make-demo"
    assert slug("The control plane: firmware and `ackfilter-ctl`") == "the-control-plane-firmware-and-ackfilter-ctl"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n### A\n") == {"a", "a-1", "a-2"}
    assert links("[a](x.md) `[b](y.md)` ![c](z.png)\n```\n[d](w.md)\n```\n") == ["x.md", "z.png"]
