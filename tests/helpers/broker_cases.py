"""The cases real brokers wrote under tests/fixtures/broker (each a before/ and, for recover, an
after/): a writable copy of one, and the file states tests compare before and after a command."""

import os
import shutil
from pathlib import Path

from tests.helpers.paths import BROKER as FIXTURES

RECOVER_CASES = [
    "torn-tail",
    "tail-garbage",
    "leftovers",
    "missing-index",
    "zeroed-index",
    "unclean-kill",
]
COMPARED = (".log", ".index", ".timeindex")


def copy_case(name: str, dest: Path) -> Path:
    """before/ of a corpus case, writable, with preallocated index lengths restored."""
    src = FIXTURES / name
    shutil.copytree(src / "before", dest / "before")
    for root, dirs, files in os.walk(dest):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    pre = src / "PREALLOCATED.txt"
    if pre.exists():
        for line in pre.read_text().splitlines():
            if line and not line.startswith("#"):
                length, rel = line.split()
                os.truncate(dest / rel, int(length))
    return dest / "before"


def segment_files(d: Path, suffixes=COMPARED) -> dict[str, bytes]:
    out = {}
    for p in sorted(d.iterdir()):
        if not p.is_dir() or p.name.startswith("__cluster_metadata"):
            continue
        for f in sorted(p.iterdir()):
            if f.suffix in suffixes:
                out[f"{p.name}/{f.name}"] = f.read_bytes()
    return out


def tree_state(d: Path) -> dict[str, bytes]:
    out = {}
    for root, _, files in os.walk(d):
        for n in files:
            f = Path(root) / n
            if n == ".lock":
                continue
            out[str(f.relative_to(d))] = f.read_bytes()
    return out
