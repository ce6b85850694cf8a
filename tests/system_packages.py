"""The system packages some tests need, and which tests go untested without them.

One table: the tests skip on these same conditions (the sandbox tests on `have_bwrap`, the browser
fixtures on `chromium_present`, the PostgreSQL fixture on `_server_binaries`, the Slurm fixture on
`slurm_present`), and tests/conftest.py reads it to say, at the end of a run, which groups were skipped
and how to install what they lack.
"""
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

CHROMIUM = Path("/usr/bin/chromium")


def chromium_present() -> bool:
    return os.access(CHROMIUM, os.X_OK) and CHROMIUM.is_file()


def bwrap_present() -> bool:
    from autograder.sandbox import have_bwrap
    return have_bwrap()


def postgres_present() -> bool:
    from tests.integration.test_postgres import _server_binaries
    return _server_binaries() is not None


def slurm_present() -> bool:
    from tests.integration.test_slurm import slurm_present
    return slurm_present()


@dataclass(frozen=True)
class SystemPackage:
    group: str                     # the tests that need it, as the summary names them
    package: str                   # the Debian package
    present: Callable[[], bool]    # the condition the tests themselves skip on
    marker: str = ""               # the tests of the group: those with this marker...
    path: str = ""                 # ...or those under this path (relative to the repository)

    def covers(self, nodeid: str, keywords) -> bool:
        return bool(self.marker and self.marker in keywords) or bool(self.path and nodeid.startswith(self.path))

    def install_command(self) -> str:
        if not shutil.which("apt-get"):
            return f"install {self.package} with your system's package manager"
        return ("" if os.geteuid() == 0 else "sudo ") + f"apt-get install -y {self.package}"


SYSTEM_PACKAGES = [
    SystemPackage("sandbox", "bubblewrap", bwrap_present, path="tests/integration/test_sandbox.py"),
    SystemPackage("browser", "chromium", chromium_present, marker="browser"),
    SystemPackage("PostgreSQL", "postgresql", postgres_present, marker="postgres"),
    SystemPackage("Slurm", "slurm-wlm munge", slurm_present, path="tests/integration/test_slurm.py"),
]
