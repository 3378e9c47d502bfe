"""Fixtures of the command-line tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def held_lock(tmp_path):
    """A process holding a log dir's .lock as a broker does (lockf = fcntl, like the JVM)."""
    procs = []

    def hold(d: Path):
        code = (
            "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
            "fcntl.lockf(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n"
        )
        p = subprocess.Popen(
            [sys.executable, "-c", code, str(d / ".lock")], stdout=subprocess.PIPE, text=True
        )
        assert p.stdout.readline().strip() == "locked"
        procs.append(p)
        return p.pid

    yield hold
    for p in procs:
        p.kill()
        p.wait()
