"""errors: an error renders itself as one line whatever its file is called."""

from __future__ import annotations

from kafkalog_cli.errors import InvalidRecordError, one_line


def test_control_characters_are_escaped_and_printable_text_is_kept():
    assert one_line("plain: caf\u00e9 \u2603") == "plain: caf\u00e9 \u2603"
    assert one_line("a\nb\tc\x1bd\u2028") == "a\\nb\\tc\\x1bd\\u2028"


def test_an_error_is_one_line_with_its_file_and_byte():
    e = InvalidRecordError("bad\nrecord", path="/logs/t-0/new\nline.log", position=61)
    assert e.line() == "/logs/t-0/new\\nline.log: byte 61: bad\\nrecord"
    assert "\n" in str(e)  # str() stays the raw text
