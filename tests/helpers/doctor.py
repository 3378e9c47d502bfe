"""What the doctor tests share: a doctor run, a writable log dir copy with its server.properties,
uids and ownership, and the damage the all-clear tests apply."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.paths import EXAMPLES


def doctor(*args):
    r = CliRunner().invoke(cli, ["doctor", *map(str, args)])
    assert "Traceback" not in r.output, r.output
    return r


def copy(tmp_path: Path, name: str = "logdir") -> Path:
    d = tmp_path / name
    shutil.copytree(EXAMPLES, d)
    return d


def props(d: Path) -> dict:
    return dict(
        line.split("=", 1)
        for line in (d / "meta.properties").read_text().splitlines()
        if "=" in line
    )


def write_props(d: Path, values: dict) -> None:
    (d / "meta.properties").write_text("#\n" + "".join(f"{k}={v}\n" for k, v in values.items()))


def unused_uid() -> int:
    uid = 4242
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


def owned_by(d: Path, uid: int) -> None:
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            os.chown(os.path.join(root, n), uid, uid, follow_symlinks=False)
    os.chown(d, uid, uid)


def findings(r, check: str | None = None) -> list[dict]:
    return [f for f in json.loads(r.stdout)["findings"] if check is None or f["check"] == check]


MOVED = ["multi-segment-0", "compacted-0", "txn-0", "idempotent-lz4-0", "logappend-time-0"]


def split(t: Path, names: list[str], data_dirs: int = 1) -> list[Path]:
    """The example log dir as a broker's JBOD: the metadata log and most partitions in `a`, the
    five partitions of MOVED spread over the data dirs."""
    a = copy(t, "a")
    out = [a]
    for i in range(data_dirs):
        b = copy(t, names[i])
        for p in b.iterdir():
            if p.is_dir() and p.name not in MOVED[i::data_dirs]:
                shutil.rmtree(p)
        out.append(b)
    for p in MOVED:
        shutil.rmtree(a / p)
    return out


def rot(d: Path) -> Path:
    """A flipped byte inside a record of the fifth batch (offsets 100..124) of segment 0."""
    seg = d / "multi-segment-0" / "00000000000000000000.log"
    buf = bytearray(seg.read_bytes())
    pos = 0
    for _ in range(4):
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    assert struct.unpack_from(">q", buf, pos)[0] == 100
    buf[pos + 61 + 20] ^= 0x01
    seg.write_bytes(bytes(buf))
    return seg


def broker_user() -> pwd.struct_passwd:
    """A user that is not root, as a broker runs: kafka, else postgres, else one made for this."""
    for name in ("kafka", "postgres", "kafkalog-broker"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    r = subprocess.run(
        ["useradd", "--system", "--no-create-home", "kafkalog-broker"],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"no user other than root to own a log dir: useradd: {r.stderr.strip()}")
    return pwd.getpwnam("kafkalog-broker")
