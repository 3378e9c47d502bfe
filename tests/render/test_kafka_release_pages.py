"""dump-log's text path lets go of the mapped pages it has printed (a 1 GiB segment held 1 GiB of
resident memory before), and what it prints does not change."""

from __future__ import annotations

from click.testing import CliRunner

from kafkalog_cli.cli import cli
from kafkalog_cli.render import kafka
from tests.helpers.paths import EXAMPLES

SEGMENT = EXAMPLES / "multi-segment-0"


def test_printed_pages_are_released_and_the_output_is_the_same(monkeypatch):
    runner = CliRunner()
    want = runner.invoke(cli, ["dump-log", str(SEGMENT)])
    assert want.exit_code == 0, want.output
    released = []
    monkeypatch.setattr(kafka, "RELEASE_BYTES", 512)
    monkeypatch.setattr(kafka, "release_pages", lambda buf, a, b: released.append((a, b)))
    got = runner.invoke(cli, ["dump-log", str(SEGMENT)])
    assert got.exit_code == 0, got.output
    assert got.output == want.output
    assert released, "no page was released"
    assert all(a < b for a, b in released)
    for (_, b), (c, _) in zip(released, released[1:]):
        assert c in (b, 0)  # each range starts where the last one ended, or a next file's at 0
