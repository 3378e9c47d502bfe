"""kafkalog_cli.allocator: glibc's malloc keeps the pages a streaming command frees."""
from __future__ import annotations

import ctypes
import platform
import resource
import subprocess
import sys

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


def _page_faults(segment, tune: bool) -> int:
    code = ("import sys, resource; from kafkalog_cli import allocator\n"
            f"{'allocator.tune_for_streaming()' if tune else ''}\n"
            "import io; from kafkalog_cli.render.jsonl import dump_json\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "dump_json([sys.argv[1]], open('/dev/null', 'wb'), deep=True, payload_encoding='utf8')\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n")
    out = subprocess.run([sys.executable, "-c", code, str(segment)], capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.mark.skipif(not GLIBC, reason="mallopt's settings are glibc's")
def test_a_json_dump_stops_faulting_in_the_pages_it_frees(tmp_path):
    """What the settings are for: dumping a segment as JSON Lines without them faults in the
    same heap pages batch after batch (the kernel's work, a fifth of the CPU time); with them
    the dump faults a fraction as often."""
    batch = bytes(build_v2_batch([SimpleRecord(key=b"k%04d" % i, value=bytes(range(100)) * 3, timestamp=i)
                                  for i in range(100)], 0))
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(batch * 300)
    untuned, tuned = _page_faults(segment, False), _page_faults(segment, True)
    assert tuned * 3 < untuned, (tuned, untuned)
