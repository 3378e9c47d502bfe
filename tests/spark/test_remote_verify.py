"""`kafkalog verify-crc` on S3-compatible storage (the moto server of tests/spark/conftest.py):
read by ranged reads, the same report as for the local copy of the same files, positions in
the remote file's coordinates, on both engines. Skipped when moto's server cannot start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from kafkalog_cli.cli import cli
from tests.spark.helpers import BUCKET, KAFKALOG

SEGMENT = "broker-0/multi-segment-0/00000000000000000300.log"


def verify(*args):
    r = CliRunner().invoke(cli, ["verify-crc", *map(str, args), "--format", "json"])
    return r.exit_code, [json.loads(line) for line in r.stdout.splitlines()], r.stderr


def _comparable(lines: list[dict], prefix: str) -> list[dict]:
    """The report with the path prefix taken off every file name, and no timings."""
    out = []
    for d in lines:
        d = {k: v for k, v in d.items() if k != "elapsed_s"}
        if d.get("file"):
            assert d["file"].startswith(prefix), d
            d["file"] = d["file"][len(prefix) :]
        out.append(d)
    return out


def _upload(uri_key: str, data: bytes) -> None:
    from kafkalog_cli.storage import remote

    s3fs, _ = remote.filesystem(f"s3a://{uri_key}")
    with s3fs.open_output_stream(uri_key) as out:
        out.write(data)


@pytest.mark.parametrize("deep", [False, True])
def test_a_clean_archive_on_s3_gives_the_local_copys_report(s3, monkeypatch, deep):
    from kafkalog_cli.storage import remote

    local, uri, _ = s3
    flags = ["--deep"] if deep else []
    code, want, _ = verify(local, *flags)
    assert code == 0 and want[-1]["files"] == 6 and want[-1]["batches"] > 0
    monkeypatch.setattr(remote, "CHUNK", 3000)  # many ranges, and batches bigger than one
    reads = []
    original = remote.RemoteSegment.read_range

    def counting(self, suffix, position, size):
        data = original(self, suffix, position, size)
        reads.append((self.uri, position, len(data)))
        return data

    monkeypatch.setattr(remote.RemoteSegment, "read_range", counting)
    code, got, _ = verify(uri, *flags)
    assert code == 0
    assert _comparable(got, uri) == _comparable(want, str(local))
    seg = f"{uri}/{SEGMENT}"
    size = (local / SEGMENT).stat().st_size
    ranges = sorted((p, n) for u, p, n in reads if u == seg)
    assert len(ranges) >= 3 and max(n for _, n in ranges) < size  # never the whole file at once
    assert sum(n for _, n in ranges) >= size


def _corrupt(local, tmp_path, kind="crc"):
    """A copy of multi-segment-0 with one byte of a batch's payload in the middle flipped (or, for
    "size", its size field made 3), locally and on S3; (local dir, its URI, the batch's position)."""
    from kafkalog_cli.formats.records import iter_batches

    src = local / "broker-0" / "multi-segment-0"
    dst = tmp_path / "broken" / "multi-segment-0"
    shutil.copytree(src, dst)
    log = dst / "00000000000000000300.log"
    data = bytearray(log.read_bytes())
    at = next(b.position for b in iter_batches(bytes(data)) if b.position >= len(data) // 2)
    if kind == "size":
        data[at + 8 : at + 12] = (3).to_bytes(4, "big")
    else:
        data[at + 70] ^= 0xFF  # past the 61-byte v2 header: a record's bytes
    log.write_bytes(bytes(data))
    key = f"{BUCKET}/broken-{tmp_path.name}/multi-segment-0"
    for f in dst.iterdir():
        _upload(f"{key}/{f.name}", f.read_bytes())
    return dst, f"s3a://{key}", at


@pytest.mark.parametrize("kind", ["crc", "size"])
def test_a_corrupt_batch_on_s3_is_reported_at_its_byte_in_the_remote_file(
    s3, monkeypatch, tmp_path, kind
):
    from kafkalog_cli.storage import remote

    local, _, _ = s3
    dst, uri, at = _corrupt(local, tmp_path, kind)
    code, want, _ = verify(dst)
    assert code == 1
    monkeypatch.setattr(remote, "CHUNK", 2500)  # the broken batch is deep inside a later range
    code, got, err = verify(uri)
    assert code == 1
    problems = [d for d in got if d["kind"] == "problem"]
    assert [(d["file"], d["position"], d["problem"]) for d in problems] == [
        (f"{uri}/00000000000000000300.log", at, kind)
    ]
    assert _comparable(got, uri) == _comparable(want, str(dst))
    size = (dst / "00000000000000000300.log").stat().st_size
    text = CliRunner().invoke(cli, ["verify-crc", uri]).stdout
    assert (
        f"{uri}/00000000000000000300.log: byte {at}: "
        + (
            "v2 batch CRC-32C mismatch"
            if kind == "crc"
            else f"corrupt size field 3 (smaller than the minimum record overhead 14); the rest of the file, "
            f"{size - at} bytes, cannot be read"
        )
        in text
    )


def test_a_missing_remote_path_is_exit_4_and_the_others_are_still_verified(s3):
    local, uri, _ = s3
    missing = f"s3a://{BUCKET}/nothing-here"
    code, got, err = verify(missing, f"{uri}/broker-1")
    assert code == 4
    assert f"kafkalog: {missing}: no such file or directory" in err
    assert got[-1]["files"] == 2 and got[-1]["problems"] == 1


def test_spark_on_s3_gives_the_local_engines_report(s3, tmp_path):
    local, uri, env = s3
    dst, broken, at = _corrupt(local, tmp_path)
    run_env = {**os.environ, **env}
    outs = {}
    for engine in ("local", "spark"):
        args = [
            str(KAFKALOG),
            "verify-crc",
            uri,
            broken,
            "--format",
            "json",
            "--engine",
            engine,
        ] + (["--master", "local[1]"] if engine == "spark" else [])
        p = subprocess.run(args, capture_output=True, text=True, timeout=600, env=run_env)
        if (
            engine == "spark"
            and p.returncode == 4
            and ("pyspark" in p.stderr or "Java" in p.stderr)
        ):
            pytest.skip(p.stderr.strip())
        assert p.returncode == 1, p.stderr
        outs[engine] = [
            {k: v for k, v in json.loads(line).items() if k != "elapsed_s"}
            for line in p.stdout.splitlines()
        ]
    assert outs["spark"] == outs["local"]
    assert [(d["file"], d["position"]) for d in outs["local"] if d["kind"] == "problem"] == [
        (f"{broken}/00000000000000000300.log", at)
    ]
    assert outs["local"][-1]["files"] == 8


def test_topic_and_partition_choose_remote_partition_dirs(s3):
    local, uri, _ = s3
    code, want, _ = verify(local, "--topic", "multi-*")
    assert code == 0 and want[-1]["files"] == 4
    code, got, _ = verify(uri, "--topic", "multi-*")
    assert code == 0 and _comparable(got, uri) == _comparable(want, str(local))
    code, got, _ = verify(f"{uri}/{SEGMENT}", "--topic", "multi-segment")
    assert code == 0 and got[-1]["files"] == 1
    code, _, err = verify(uri, "--topic", "nothing")
    assert code == 4 and "no partition dir matches" in err
