"""dump-log's search over a batch's records (`RecordSearch`): the tests a record must pass, and
whether a batch's bytes rule out every match (the record search scanner `search_v2` asks)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Pattern text that makes a regex's match depend on what lies around the bytes it is given
# (anchors, word boundaries, lookarounds) or on how far a run may extend (possessive and atomic
# matching): such a regex may match a key or value alone and not the batch's bytes, so it cannot
# rule out a batch. Any occurrence counts, even escaped: being conservative only costs speed.
_CONTEXT_SENSITIVE = (
    b"^",
    b"$",
    b"\\b",
    b"\\B",
    b"\\A",
    b"\\Z",
    b"(?=",
    b"(?!",
    b"(?<",
    b"(?>",
    b"*+",
    b"++",
    b"?+",
    b"}+",
)


def _context_free(pattern: re.Pattern[bytes]) -> bool:
    return not any(t in pattern.pattern for t in _CONTEXT_SENSITIVE)


@dataclass(frozen=True)
class RecordSearch:
    """dump-log's search: the tests a record's key and value must all pass (a null key or value
    passes none of its own). `key`: exactly these bytes; `key_prefix`: starting with them;
    `key_regex`, `value_regex`: re.search finds a match in them."""

    key: bytes | None = None
    key_prefix: bytes | None = None
    key_regex: re.Pattern[bytes] | None = None
    value_regex: re.Pattern[bytes] | None = None

    def rules_out(self, data: bytes, pos: int, end: int) -> bool:
        """Whether no record in data[pos:end) can match, by a look at all the bytes at once (C
        speed): a record's key and value are somewhere in them, so a literal absent from the whole
        is absent from each, and so is a match of a context-free regex."""
        for literal in (self.key, self.key_prefix):
            if literal and data.find(literal, pos, end) < 0:
                return True
        for regex in (self.key_regex, self.value_regex):
            if regex is not None and _context_free(regex) and regex.search(data, pos, end) is None:
                return True
        return False


@dataclass(frozen=True)
class HeaderMatch:
    """A test on a record's headers: one named `key` (Kafka's header keys are text), with exactly
    `value` as its bytes; any value when `value` is None (a header of null value passes only
    that)."""

    key: str
    value: bytes | None = None

    def found_in(self, headers) -> bool:
        return any(
            h.key == self.key and (self.value is None or h.value == self.value) for h in headers
        )
