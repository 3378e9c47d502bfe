"""UTF-8 decoding as Java's `new String(bytes, UTF_8)` does it (JDK 17 String.decodeUTF8_UTF16).

Valid input decodes as anywhere else. Malformed input differs from Python's "replace" handler:
Java gives one U+FFFD for an encoded surrogate (Python three) and one for an incomplete
sequence cut off by the end of the input. kafka-dump-log prints keys and values through this.
"""

from __future__ import annotations

REPL = "\ufffd"


def java_utf8(b: bytes) -> str:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return _decode_malformed(b)


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _decode_malformed(src: bytes) -> str:
    out: list[str] = []
    sp, sl = 0, len(src)
    while sp < sl:
        b1 = src[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:
            if sp < sl:
                b2 = src[sp]
                sp += 1
                if not _cont(b2):
                    out.append(REPL)
                    sp -= 1
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                continue
            out.append(REPL)
            break
        elif 0xE0 <= b1 <= 0xEF:
            if sp + 1 < sl:
                b2, b3 = src[sp], src[sp + 1]
                sp += 2
                if (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2) or not _cont(b3):
                    out.append(REPL)
                    sp -= 3
                    sp += 1 if ((b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)) else 2
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(REPL if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and ((b1 == 0xE0 and (src[sp] & 0xE0) == 0x80) or not _cont(src[sp])):
                out.append(REPL)
                continue
            out.append(REPL)
            break
        elif 0xF0 <= b1 <= 0xF7:
            if sp + 2 < sl:
                b2, b3, b4 = src[sp], src[sp + 1], src[sp + 2]
                sp += 3
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not (0x10000 <= uc <= 0x10FFFF):
                    out.append(REPL)
                    sp -= 4
                    sp += _malformed4(src, sp)
                else:
                    out.append(chr(uc))
                continue
            if b1 > 0xF4 or (sp < sl and _malformed4_2(b1, src[sp])):
                out.append(REPL)
                continue
            sp += 1
            out.append(REPL)
            if sp < sl and not _cont(src[sp]):
                continue
            break
        else:
            out.append(REPL)
    return "".join(out)


def _malformed4_2(b1: int, b2: int) -> bool:
    return (
        (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF))
        or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
        or not _cont(b2)
    )


def _malformed4(src: bytes, sp: int) -> int:
    b1, b2 = src[sp], src[sp + 1]
    if (
        b1 > 0xF4
        or (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF))
        or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
        or not _cont(b2)
    ):
        return 1
    if not _cont(src[sp + 2]):
        return 2
    return 3
