"""recover's result is a fixed point, whatever the damage: after `recover` (plain, --repair,
--salvage, --all) on a damaged copy of a real log dir, `recover --dry-run` plans 0 changes and
exits 0, and a second `recover` changes no byte, no name and no mtime.

The damages are drawn from a seeded generator over real fixtures (examples/logdir, the broker's
recover-unclean-kill and recover-leftovers cases): truncations, text in place of
a segment, flipped bytes, zeroed ranges, missing, odd-sized or garbage indexes and snapshots,
stray snapshots, checkpoints pointing anywhere, no clean-shutdown marker. Set
KAFKALOG_FIXED_POINT_CASES for a longer run (and KAFKALOG_FIXED_POINT_SEED for another seed)."""

from __future__ import annotations

import os
import random
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.helpers.broker_cases import copy_case
from tests.helpers.file_states import (
    bytes_and_mtimes as state,  # every file but .lock: its bytes and mtime
)
from tests.helpers.paths import EXAMPLES

TEXT = b"this is not a kafka log segment at all!!!\n\n"  # 43 bytes, as in the field
CASES = int(os.environ.get("KAFKALOG_FIXED_POINT_CASES", "60"))
SEED = int(os.environ.get("KAFKALOG_FIXED_POINT_SEED", "31"))
MODES = ([], ["--repair"], ["--salvage"], ["--all"])


def recover(d: Path, *args: str):
    r = CliRunner().invoke(cli, ["recover", *args, str(d)])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    return r


def _partitions(d: Path) -> list[Path]:
    return sorted(p for p in d.iterdir() if p.is_dir() and re.search(r"-\d+$", p.name))


def _files(part: Path, *suffixes: str) -> list[Path]:
    return sorted(f for f in part.iterdir() if f.suffix in suffixes)


def _set_checkpoint(d: Path, name: str, part: Path, value: int) -> None:
    f = d / name
    topic, _, num = part.name.rpartition("-")
    lines = f.read_text().splitlines() if f.exists() else ["0", "0"]
    entries = [ln for ln in lines[2:] if ln and not ln.startswith(f"{topic} {num} ")]
    entries.append(f"{topic} {num} {value}")
    f.write_text("\n".join(["0", str(len(entries)), *entries]) + "\n")


def damage(d: Path, rng: random.Random) -> str:
    """One damage of the kinds seen in the field, to a random partition's files; returns what."""
    part = rng.choice(_partitions(d))
    kind = rng.choice(
        [
            "truncate",
            "text",
            "flip",
            "zero",
            "no-index",
            "odd-index",
            "garbage-index",
            "no-snapshot",
            "stray-snapshot",
            "bad-snapshot",
            "recovery-point",
            "log-start",
            "unclean",
        ]
    )
    logs = _files(part, ".log")
    if kind in ("truncate", "text", "flip", "zero"):
        if not logs:
            return "none"
        f = rng.choice(logs)
        data = bytearray(f.read_bytes())
        if kind == "truncate":
            del data[rng.randrange(len(data) + 1) :]
        elif kind == "text":
            data = bytearray(TEXT)
        elif kind == "flip":
            for _ in range(rng.randint(1, 4)):
                if data:
                    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            at = rng.randrange(len(data) + 1)
            n = rng.randint(1, 256)
            data[at : at + n] = bytes(len(data[at : at + n]))
        f.write_bytes(bytes(data))
        return f"{kind} {f.relative_to(d)}"
    if kind in ("no-index", "odd-index", "garbage-index"):
        idx = _files(part, ".index", ".timeindex")
        if not idx:
            return "none"
        f = rng.choice(idx)
        if kind == "no-index":
            f.unlink()
        elif kind == "odd-index":
            with open(f, "ab") as out:
                out.write(bytes(rng.randint(1, 7)))
        else:
            data = bytearray(f.read_bytes())
            at = rng.randrange(len(data) + 1)
            data[at : at + 12] = rng.randbytes(12)
            f.write_bytes(bytes(data))
        return f"{kind} {f.relative_to(d)}"
    snaps = _files(part, ".snapshot")
    if kind == "no-snapshot":
        if not snaps:
            return "none"
        f = rng.choice(snaps)
        f.unlink()
        return f"{kind} {f.relative_to(d)}"
    if kind == "stray-snapshot":
        f = part / f"{rng.randrange(0, 1000):020d}.snapshot"
        f.write_bytes(
            snaps[0].read_bytes()
            if snaps and rng.random() < 0.5
            else rng.randbytes(rng.randint(0, 40))
        )
        return f"{kind} {f.relative_to(d)}"
    if kind == "bad-snapshot":
        if not snaps:
            return "none"
        f = rng.choice(snaps)
        data = bytearray(f.read_bytes())
        if data:
            data[rng.randrange(len(data))] ^= 0xFF
        f.write_bytes(bytes(data))
        return f"{kind} {f.relative_to(d)}"
    if kind == "recovery-point":
        value = rng.choice([-1, 0, rng.randrange(0, 1000), 2**40])
        _set_checkpoint(d, "recovery-point-offset-checkpoint", part, value)
        (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
        return f"{kind} {part.name} {value}"
    if kind == "log-start":
        value = rng.choice([0, rng.randrange(0, 1000), 2**40])
        _set_checkpoint(d, "log-start-offset-checkpoint", part, value)
        return f"{kind} {part.name} {value}"
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    return kind


def _source(i: int, tmp: Path) -> Path:
    if i % 4 == 2:
        return copy_case("recover-unclean-kill", tmp)
    if i % 4 == 3:
        return copy_case("recover-leftovers", tmp)  # .cleaned, .swap and .deleted files
    shutil.copytree(EXAMPLES, tmp / "logdir")
    for root, dirs, files in os.walk(tmp / "logdir"):
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755 if n in dirs else 0o644)
    return tmp / "logdir"


def _cases():
    rng = random.Random(SEED)
    return [(i, rng.randrange(2**32), MODES[i % len(MODES)]) for i in range(CASES)]


@pytest.mark.parametrize("i,seed,mode", _cases())
def test_recover_is_a_fixed_point(i, seed, mode, tmp_path):
    d = _source(i, tmp_path)
    rng = random.Random(seed)
    done = [damage(d, rng) for _ in range(rng.randint(1, 3))]
    first = recover(d, *mode)
    # 1: done, bit rot named and left as the broker keeps it (a flip below the recovery point)
    assert first.exit_code in (0, 1, 3, 4), (done, first.exit_code, first.stderr)
    settled = state(d)
    if first.exit_code not in (0, 1):
        # refused before changing anything: the same answer again, still nothing changed
        again = recover(d, *mode)
        assert (again.exit_code, again.stderr) == (first.exit_code, first.stderr), done
        assert state(d) == settled, done
        return
    kept = first.exit_code == 1
    assert not kept or "bit rot" in first.stdout, (done, first.stdout)
    for check in {*mode} | {None}:
        dry = recover(d, "--dry-run", *([check] if check else []))
        assert dry.exit_code == first.exit_code, (done, mode, check, dry.stdout)
        assert ": 0 change(s)" in dry.stdout, (done, mode, check, dry.stdout)
    second = recover(d, *mode)
    assert second.exit_code == first.exit_code, (done, second.stdout, second.stderr)
    assert state(d) == settled, (done, mode, second.stdout)


def test_text_in_place_of_an_only_segment_under_a_clean_shutdown(tmp_path):
    """The field case: the only segment of a partition replaced by 43 bytes of text, under a
    clean-shutdown marker, so its log start offset is its log end offset: no snapshot written at
    the log start on one run and deleted on the next."""
    d = _source(0, tmp_path)
    part = d / "multi-segment-0"
    for f in [*part.glob("00000000000000000000.*"), *part.glob("*.snapshot")]:
        f.unlink()
    (part / "00000000000000000300.log").write_bytes(TEXT)
    for mode in ([], ["--repair"]):
        recover(d, *mode)
        settled = state(d)
        dry = recover(d, "--dry-run", *mode)
        assert (dry.exit_code, ": 0 change(s)" in dry.stdout) == (0, True), dry.stdout
        assert recover(d, *mode).exit_code == 0
        assert state(d) == settled


def test_an_epoch_entry_past_the_log_end_settles_in_one_run(tmp_path):
    """(5, Long.MAX_VALUE) in leader-epoch-checkpoint: LogSegment.recover assigns no lower epoch
    while it is there and truncateFromEnd drops it after, so a broker's second load would assign
    the batches' epoch 0; recover drops it first and settles in one run."""
    d = tmp_path / "logdir"
    shutil.copytree(EXAMPLES, d)
    (d / ".kafka_cleanshutdown").unlink(missing_ok=True)
    cache = d / "codec-none-0" / "leader-epoch-checkpoint"
    cache.write_text("0\n1\n5 9223372036854775807\n")
    first = CliRunner().invoke(cli, ["recover", "--topic", "codec-none", str(d)])
    assert first.exit_code == 0, first.output
    assert cache.read_text() == "0\n1\n0 0\n"
    settled = state(d)
    dry = CliRunner().invoke(cli, ["recover", "--dry-run", "--topic", "codec-none", str(d)])
    assert dry.exit_code == 0 and ": 0 change(s)" in dry.stdout, dry.stdout
    assert CliRunner().invoke(cli, ["recover", "--topic", "codec-none", str(d)]).exit_code == 0
    assert state(d) == settled
