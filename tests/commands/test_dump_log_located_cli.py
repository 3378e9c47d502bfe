"""Issue 26, point 9: dump-log's JSON record lines say where they come from (topic, partition,
file), --timestamps iso, one default payload encoding for dump-log and export, help texts that
name the options' real choices. The fast paths and the general path write the same bytes."""

from __future__ import annotations

import io
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from kafkalog_cli.cli import cli
from kafkalog_cli.render.jsonl import JsonDumper
from kafkalog_cli.storage.selection import Filters
from tests.helpers.paths import EXAMPLES
from tests.helpers.strategies import v2_batches

LOG = "00000000000000000000.log"


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def lines(output: str, kind: str = "record") -> list[dict]:
    return [o for o in map(json.loads, output.splitlines()) if o["kind"] == kind]


def test_a_key_search_over_a_log_dir_names_each_records_topic_and_partition():
    # reproduced first: five identical {"offset": 3, ...} lines, one per codec topic
    r = invoke("dump-log", EXAMPLES, "--format", "json", "--print-data-log", "--key", "k003")
    assert r.exit_code == 0, r.output
    got = [
        (o["topic"], o["partition"], Path(o["file"]).parent.name, o["offset"], o["value"])
        for o in lines(r.stdout)
    ]
    assert got == [
        (f"codec-{c}", 0, f"codec-{c}-0", 3, "value-3-xxx")
        for c in ("gzip", "lz4", "none", "snappy", "zstd")
    ]
    first = lines(r.stdout)[0]
    assert list(first)[:4] == ["kind", "topic", "partition", "file"]


def test_a_file_outside_a_partition_dir_has_null_topic_and_partition(tmp_path):
    shutil.copy(EXAMPLES / "codec-none-0" / LOG, tmp_path / LOG)
    r = invoke("dump-log", tmp_path / LOG, "--format", "json", "--deep-iteration", "--limit", "1")
    (rec,) = lines(r.stdout)
    assert (rec["topic"], rec["partition"], rec["file"]) == (None, None, str(tmp_path / LOG))


def _dump(path: Path, *, fast: bool, **options) -> bytes:
    out = io.BytesIO()
    d = JsonDumper(out, deep=True, **options)
    if not fast:
        d.layout = d.found_layout = None
    d.dump(str(path))
    return out.getvalue()


@pytest.mark.parametrize("part", ["codec-none-0", "txn-0", "idempotent-lz4-0", "multi-segment-0"])
@pytest.mark.parametrize("encoding", ["utf8", "hex", "base64"])
def test_fast_and_general_paths_lay_in_the_same_topic_partition_and_file(part, encoding):
    for log in sorted((EXAMPLES / part).glob("*.log")):
        fast = _dump(log, fast=True, payload_encoding=encoding)
        assert fast == _dump(log, fast=False, payload_encoding=encoding)
        topic, _, n = part.rpartition("-")
        for rec in lines(fast.decode()):
            assert (rec["topic"], rec["partition"], rec["file"]) == (topic, int(n), str(log))
        # a search's lines, cut out of the fast path's, are the general path's too
        assert _dump(
            log, fast=True, payload_encoding=encoding, filters=Filters.given(key_prefix=b"k00")
        ) == _dump(
            log, fast=False, payload_encoding=encoding, filters=Filters.given(key_prefix=b"k00")
        )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=v2_batches())
def test_property_fast_path_with_a_location_is_the_general_paths_bytes(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("p") / 'top"ic\\x-7'  # a topic name JSON must escape
    d.mkdir()
    log = d / LOG
    log.write_bytes(data)
    try:
        fast = _dump(log, fast=True)
    except Exception as e:  # a batch the general path refuses too
        with pytest.raises(type(e)):
            _dump(log, fast=False)
        return
    assert fast == _dump(log, fast=False)
    for rec in lines(fast.decode("utf-8", "surrogatepass")):
        assert (rec["topic"], rec["partition"]) == ('top"ic\\x', 7)


def test_timestamps_iso_writes_utc_text_for_records_and_batches():
    part = EXAMPLES / "codec-none-0"
    ms = invoke("dump-log", part, "--format", "json", "--deep-iteration")
    iso = invoke("dump-log", part, "--format", "json", "--deep-iteration", "--timestamps", "iso")
    assert ms.exit_code == iso.exit_code == 0
    for a, b in zip(lines(ms.stdout), lines(iso.stdout)):
        assert (
            b["timestamp"]
            == datetime.fromtimestamp(a["timestamp"] / 1000, timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%S.%f"
            )[:-3]
            + "Z"
        )
        assert {k: v for k, v in a.items() if k != "timestamp"} == {
            k: v for k, v in b.items() if k != "timestamp"
        }
    assert lines(iso.stdout)[3]["timestamp"] == "2023-11-14T22:13:20.003Z"
    batch = lines(iso.stdout, "batch")[0]
    assert batch["base_timestamp"].endswith("Z") and batch["max_timestamp"].startswith(
        "2023-11-14T22:13:20."
    )
    # a search and a decoder take the general path: the same text there
    found = invoke("dump-log", part, "--format", "json", "--key", "k003", "--timestamps", "iso")
    assert [o["timestamp"] for o in lines(found.stdout)] == ["2023-11-14T22:13:20.003Z"]


def test_timestamps_is_ignored_with_a_warning_in_text_format():
    r = invoke("dump-log", EXAMPLES / "codec-none-0", "--timestamps", "iso")
    assert r.exit_code == 0
    assert "kafkalog: warning: --timestamps applies to --format json only" in r.stderr
    assert r.stdout == invoke("dump-log", EXAMPLES / "codec-none-0").stdout


def test_dump_log_and_export_json_default_to_the_same_payload_encoding():
    dumped = lines(
        invoke("dump-log", EXAMPLES / "codec-zstd-0", "--format", "json", "--key", "k003").stdout
    )
    r = invoke("export", EXAMPLES / "codec-zstd-0", "-", "--to", "jsonl")
    assert r.exit_code == 0, r.output
    exported = [json.loads(x) for x in r.stdout.splitlines()]
    (three,) = [o for o in exported if o["offset"] == 3]
    assert three["value"] == dumped[0]["value"] == "value-3-xxx"
    assert three["key"] == dumped[0]["key"] == "k003"
    for name in ("dump-log", "export"):
        assert "[default: utf8]" in invoke(name, "--help").stdout.replace("\n", " ").replace(
            "  ", " "
        )


@pytest.mark.parametrize("name", ["dump-log", "dump-index"])
def test_help_names_the_format_choices_there_are(name):
    text = invoke(name, "--help").stdout
    assert "--format kafka" not in text
    assert "[text|json]" in text
