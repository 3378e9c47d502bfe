"""formats/framing.py: what verify-crc loads at start, and the page release of its walk."""

from __future__ import annotations

import subprocess
import sys

from kafkalog_cli.formats import framing
from kafkalog_cli.formats.framing import check_batches
from kafkalog_cli.formats.records import SimpleRecord, build_v2_batch


def test_verify_crc_starts_without_the_record_decoder():
    # the decoder, the codecs and the control records cost more start-up than a small file's check
    code = (
        "import sys, kafkalog_cli.commands.verify_crc, kafkalog_cli.ops.verify; "
        "print(sorted(m for m in sys.modules if m.startswith('kafkalog_cli.formats')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    loaded = eval(out)
    assert "kafkalog_cli.formats.framing" in loaded
    for heavy in ("records", "scan", "compression", "control"):
        assert f"kafkalog_cli.formats.{heavy}" not in loaded


def _chain(batches: int) -> bytes:
    out = bytearray()
    for i in range(batches):
        out += build_v2_batch([SimpleRecord(key=b"k", value=b"v" * 200, timestamp=i)], i)
    return bytes(out)


def test_check_batches_tells_of_every_stretch_it_walked(monkeypatch):
    buf = _chain(40)
    monkeypatch.setattr(framing, "WALKED_BYTES", 1000)  # a stretch every few batches
    stretches = []
    res = check_batches(buf, 0, len(buf), walked=lambda a, b: stretches.append((a, b)))
    assert res.batches == 40 and not res.findings
    assert len(stretches) > 3
    assert stretches[0][0] == 0 and stretches[-1][1] == len(buf)
    assert all(a[1] == b[0] for a, b in zip(stretches, stretches[1:]))  # end to end, no gap
