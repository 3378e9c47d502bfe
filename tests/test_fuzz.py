"""Fuzz: real segments (and their indexes) with bit flips, truncations and splices, through every
read command. Whatever the damage: no traceback, no internal error, an exit code from the
documented set, and a failure is one line `kafkalog: <file>...`."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog_cli.cli import cli
from tests.helpers.paths import READ

SOURCES = [
    READ / "rec-none-0" / "00000000000000000185",  # v2, uncompressed, with .index and .timeindex
    READ / "ts-jumble-0" / "00000000000000000000",  # v2, out-of-order timestamps
    READ / "v1-gzip-create" / "00000000000000000000",  # magic 1, gzip wrappers
    READ / "v2-zstd" / "00000000000000000000",  # v2, zstd
    READ / "txn-0" / "00000000000000000000",  # transaction markers
]
DONORS = [p.with_suffix(".log").read_bytes() for p in SOURCES]

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20)),
    st.tuples(
        st.just("splice"),
        st.integers(0, len(DONORS) - 1),
        st.integers(0, 1 << 20),
        st.integers(1, 4096),
        st.integers(0, 1 << 20),
    ),
    st.tuples(
        st.just("set32"),
        st.integers(0, 1 << 20),
        st.sampled_from([0, 13, 14, 60, 2**31 - 1, -1, 2**30]),
    ),
)


def mutate(data: bytes, muts) -> bytes:
    b = bytearray(data)
    for m in muts:
        if not b:
            break
        if m[0] == "flip":
            b[m[1] % len(b)] ^= 1 << m[2]
        elif m[0] == "truncate":
            del b[m[1] % (len(b) + 1) :]
        elif m[0] == "splice":
            donor = DONORS[m[1]]
            start = m[2] % len(donor)
            piece = donor[start : start + m[3]]
            at = m[4] % (len(b) + 1)
            b[at:at] = piece
        elif m[0] == "set32":
            at = m[1] % max(1, len(b) - 3)
            b[at : at + 4] = (m[2] & 0xFFFFFFFF).to_bytes(4, "big")[: len(b) - at]
    return bytes(b)


def check(args) -> None:
    r = CliRunner().invoke(cli, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.stderr, (args, r.stderr)
    assert "internal error" not in r.stderr, (args, r.stderr)
    assert r.exit_code in (0, 1, 3, 4), (args, r.exit_code, r.stderr)
    if r.exit_code in (3, 4):
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("kafkalog: ")]
        assert len(lines) == 1, (args, r.stderr)
    if args[0] == "verify-crc":
        last = r.stdout.splitlines()[-1]
        assert (
            last.startswith('{"kind": "summary"')
            if "json" in args
            else last.startswith("verify-crc: ")
        ), (args, r.stdout)
        if r.exit_code == 0:
            assert '"problems": 0,' in last or " 0 problems " in last


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(
    source=st.integers(0, len(SOURCES) - 1),
    log_muts=st.lists(mutation, min_size=1, max_size=4),
    index_muts=st.lists(mutation, max_size=2),
)
def test_every_read_command_survives_damage(source, log_muts, index_muts):
    src = SOURCES[source]
    d = Path(tempfile.mkdtemp(prefix="kafkalog-fuzz-")) / "topic-0"
    try:
        d.mkdir()
        log = d / src.with_suffix(".log").name
        log.write_bytes(mutate(src.with_suffix(".log").read_bytes(), log_muts))
        for suffix in (".index", ".timeindex"):
            f = src.with_suffix(suffix)
            if f.exists():
                (d / f.name).write_bytes(mutate(f.read_bytes(), index_muts))
        check(["dump-log", "--files", log])
        check(["dump-log", "--files", log, "--print-data-log"])
        check(["dump-log", log, "--format", "json", "--deep-iteration"])
        check(["verify-crc", "--deep", d])
        check(["verify-crc", "--format", "json", log])
        for suffix in (".index", ".timeindex"):
            idx = log.with_suffix(suffix)
            if idx.exists():
                check(["dump-index", idx])
                check(["dump-index", "--verify-index-only", "--format", "json", idx])
                check(["dump-index", "--index-sanity-check", idx])
    finally:
        shutil.rmtree(d.parent, ignore_errors=True)
