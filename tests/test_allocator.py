"""kafkalog_cli.allocator: glibc's malloc keeps the pages a streaming command frees."""

from __future__ import annotations

import ctypes
import platform

import pytest

from kafkalog_cli import allocator
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not GLIBC, reason="mallopt's settings are glibc's")
def test_the_settings_are_taken_once_per_process():
    assert allocator.tune_for_streaming() is True
    assert allocator.tune_for_streaming() is True


def test_without_mallopt_nothing_changes(monkeypatch):
    class NoMallopt:
        def __init__(self, name):
            pass

    monkeypatch.setattr(allocator, "_done", False)
    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert allocator.tune_for_streaming() is False


def test_every_command_streams_with_the_settings(monkeypatch, tmp_path):
    """The cli group applies them before any command runs (forked workers inherit them)."""
    from click.testing import CliRunner

    from kafkalog_cli import cli as cli_module

    calls = []
    monkeypatch.setattr(cli_module, "tune_for_streaming", lambda: calls.append(1) or True)
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(bytes(build_v2_batch([SimpleRecord(key=b"k", value=b"v", timestamp=1)], 0)))
    result = CliRunner().invoke(cli_module.cli, ["dump-log", "--format", "json", str(segment)])
    assert result.exit_code == 0, result.output
    assert '"kind": "batch"' in result.output
    assert calls == [1]
