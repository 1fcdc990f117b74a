"""scripts/slowdown.c, the tool that measures CI on a machine twice as slow
(docs/testing.md, "CI"): it passes its command's exit status through, refuses
bad arguments, and leaves the command the share of each CPU it was given."""

import os
import shutil
import subprocess
import sys

import pytest

from ackfilter.paths import REPO_ROOT

SOURCE = REPO_ROOT / "scripts" / "slowdown.c"


@pytest.fixture(scope="module")
def slowdown(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("slowdown") / "slowdown"
    subprocess.run([cc, "-O2", "-Wall", "-Werror", "-pthread", "-o", str(exe), str(SOURCE)], check=True)
    return str(exe)


def test_the_command_exit_status_passes_through(slowdown):
    # --share 1 starts no spinner: no root needed.
    assert subprocess.run([slowdown, "--share", "1", "--", "sh", "-c", "exit 7"]).returncode == 7
    assert subprocess.run([slowdown, "--share", "1", "--", "sh", "-c", "kill -TERM $$"]).returncode == 128 + 15
    r = subprocess.run([slowdown, "--share", "1", "/nonexistent/command"], capture_output=True, text=True)
    assert r.returncode == 127 and "/nonexistent/command" in r.stderr


@pytest.mark.parametrize("argv", [[], ["--share", "0", "true"], ["--share", "1.5", "true"], ["--share", "x", "true"],
                                  ["--period-us", "10", "true"], ["--bogus", "true"], ["--"]])
def test_bad_arguments_exit_2_with_the_usage(slowdown, argv):
    r = subprocess.run([slowdown, *argv], capture_output=True, text=True)
    assert r.returncode == 2 and "usage:" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the spinners are SCHED_FIFO: needs root")
def test_a_busy_command_gets_about_half_of_each_cpu(slowdown):
    """A single-threaded busy loop at --share 0.5 takes at least 1.6 times its
    CPU time in wall time (2 when nothing else runs): the spinners take the
    rest of its CPU, whichever CPU it is on."""
    loop = ("import os, time; t = time.process_time()\n"
            "while time.process_time() - t < 0.4: pass\n"
            "w = os.times(); print(time.process_time() - t)")
    code = f"import time, subprocess, sys; w = time.monotonic(); " \
           f"cpu = float(subprocess.run([sys.executable, '-c', {loop!r}], capture_output=True, text=True).stdout); " \
           f"print(cpu, time.monotonic() - w)"
    r = subprocess.run([slowdown, "--share", "0.5", "--", sys.executable, "-c", code],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    cpu, wall = map(float, r.stdout.split())
    assert wall >= 1.6 * cpu, (cpu, wall)
