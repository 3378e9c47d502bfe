"""The installed kafkalog script, run in a subprocess as a user runs it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def _exe() -> str:
    beside = Path(sys.executable).with_name("kafkalog")
    return str(beside) if beside.exists() else (shutil.which("kafkalog") or "kafkalog")


def kafkalog(*args, **kw):
    return subprocess.run([_exe(), *args], capture_output=True, timeout=120, **kw)
