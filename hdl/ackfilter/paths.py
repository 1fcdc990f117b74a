"""Where things are: the package, the repository, the build directory, and
a lock that processes sharing a build (pytest-xdist workers) take around it.

The one place the repository's root is worked out; everything else imports
it from here."""

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

__all__ = ["PKG_DIR", "HDL_DIR", "REPO_ROOT", "build_dir", "file_lock"]

#: ``hdl/ackfilter/``, this package.
PKG_DIR = Path(__file__).resolve().parent
#: ``hdl/``, the directory the package is imported from.
HDL_DIR = PKG_DIR.parent
#: The repository's root.
REPO_ROOT = HDL_DIR.parent


def build_dir():
    """``$ACKFILTER_BUILD_DIR`` or ``build/`` of the repository."""
    return Path(os.environ.get("ACKFILTER_BUILD_DIR", REPO_ROOT / "build"))


@contextmanager
def file_lock(path):
    """An inter-process lock on ``path`` (pytest-xdist workers share builds)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
