"""A real small file system filled to 100% (tmpfs), for the tests of what kafkalog does on a full
disk; skipped with the reason where this process may not mount."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import EXAMPLES

FILLER = "filler"


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "2m"):
    """A tmpfs of `size` mounted at `where` (made), unmounted after."""
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({r.stderr.strip() or 'mount failed'}): no small file system to fill"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(fs: Path) -> None:
    """Fill `fs` to its last byte, as a broker's appends leave it."""
    fd = os.open(fs / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for size in (1 << 16, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    finally:
        os.close(fd)
    assert free_bytes(fs) == 0


def free_bytes(fs: Path) -> int:
    st = os.statvfs(fs)
    return st.f_bfree * st.f_frsize


def full_copy(fs: Path, name: str = "logdir") -> Path:
    """A copy of examples/logdir on `fs`, then `fs` filled to 100%."""
    with contextlib.suppress(FileNotFoundError):
        (fs / FILLER).unlink()
    d = fs / name
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(EXAMPLES, d)
    fill(fs)
    return d
