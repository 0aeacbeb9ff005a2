"""Java's ``new String(bytes, UTF_8)``, transcribed statement by statement from the JDK: the
reference kdump's decoders (kdump.java.java_string, the C renderer's) are tested against.

Source: java.lang.String.decodeUTF8_UTF16 with doReplace = true, and its helpers
(isNotContinuation, isMalformed3, isMalformed3_2, isMalformed4, isMalformed4_2, isMalformed4_3,
malformed3, malformed4, decode2/3/4), in OpenJDK 17 through 25 (checked against the JDK 25
sources, lib/src.zip; tests/test_java_string.py runs both JDKs' decoders where a JDK is
installed). The String(byte[], Charset) constructor first copies a prefix of ASCII and
C2/C3-led pairs as Latin-1, then hands the rest to decodeUTF8_UTF16: the same characters
as decodeUTF8_UTF16 gives for the whole array, so only the loop is transcribed.

Bytes are Java's signed bytes here (``_s``), so each comparison reads as the JDK's does. The
result is the UTF-16 string's text; U+FFFD is String.REPL.
"""

from __future__ import annotations

REPL = "\ufffd"


def _s(b: int) -> int:
    """A byte as Java's signed ``byte`` widened to ``int``."""
    return b - 256 if b >= 128 else b


def _is_not_continuation(b: int) -> bool:
    return (b & 0xC0) != 0x80


def _is_malformed3(b1: int, b2: int, b3: int) -> bool:
    return (b1 == _s(0xE0) and (b2 & 0xE0) == 0x80) or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80


def _is_malformed3_2(b1: int, b2: int) -> bool:
    return (b1 == _s(0xE0) and (b2 & 0xE0) == 0x80) or (b2 & 0xC0) != 0x80


def _is_malformed4(b2: int, b3: int, b4: int) -> bool:
    return (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80 or (b4 & 0xC0) != 0x80


def _is_malformed4_2(b1: int, b2: int) -> bool:  # both unsigned here, as the JDK passes them
    return (
        (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF))
        or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
        or (b2 & 0xC0) != 0x80
    )


def _is_malformed4_3(b3: int) -> bool:
    return (b3 & 0xC0) != 0x80


def _java_int(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def _decode2(b1: int, b2: int) -> int:
    return ((b1 << 6) ^ b2 ^ ((_s(0xC0) << 6) ^ _s(0x80))) & 0xFFFF


def _decode3(b1: int, b2: int, b3: int) -> int:
    return ((b1 << 12) ^ (b2 << 6) ^ (b3 ^ ((_s(0xE0) << 12) ^ (_s(0x80) << 6) ^ _s(0x80)))) & (
        0xFFFF
    )


def _decode4(b1: int, b2: int, b3: int, b4: int) -> int:
    return _java_int(
        (b1 << 18)
        ^ (b2 << 12)
        ^ (b3 << 6)
        ^ (b4 ^ ((_s(0xF0) << 18) ^ (_s(0x80) << 12) ^ (_s(0x80) << 6) ^ _s(0x80)))
    )


def _malformed3(src: list[int], sp: int) -> int:
    b1 = src[sp]
    b2 = src[sp + 1]
    return 1 if (b1 == _s(0xE0) and (b2 & 0xE0) == 0x80) or _is_not_continuation(b2) else 2


def _malformed4(src: list[int], sp: int) -> int:
    b1 = src[sp] & 0xFF
    b2 = src[sp + 1] & 0xFF
    if (
        b1 > 0xF4
        or (b1 == 0xF0 and (b2 < 0x90 or b2 > 0xBF))
        or (b1 == 0xF4 and (b2 & 0xF0) != 0x80)
        or _is_not_continuation(b2)
    ):
        return 1
    if _is_not_continuation(src[sp + 2]):
        return 2
    return 3


def _is_surrogate(c: int) -> bool:
    return 0xD800 <= c <= 0xDFFF


def _is_supplementary(cp: int) -> bool:
    return 0x10000 <= cp <= 0x10FFFF


def java_new_string(data: bytes) -> str:
    """``new String(data, StandardCharsets.UTF_8)``: decodeUTF8_UTF16(..., doReplace=true)."""
    src = [_s(b) for b in data]
    sp, sl = 0, len(src)
    dst: list[str] = []
    while sp < sl:
        b1 = src[sp]
        sp += 1
        if b1 >= 0:
            dst.append(chr(b1))
        elif (b1 >> 5) == -2 and (b1 & 0x1E) != 0:
            if sp < sl:
                b2 = src[sp]
                sp += 1
                if _is_not_continuation(b2):
                    dst.append(REPL)
                    sp -= 1
                else:
                    dst.append(chr(_decode2(b1, b2)))
                continue
            dst.append(REPL)
            break
        elif (b1 >> 4) == -2:
            if sp + 1 < sl:
                b2 = src[sp]
                b3 = src[sp + 1]
                sp += 2
                if _is_malformed3(b1, b2, b3):
                    dst.append(REPL)
                    sp -= 3
                    sp += _malformed3(src, sp)
                else:
                    c = _decode3(b1, b2, b3)
                    dst.append(REPL if _is_surrogate(c) else chr(c))
                continue
            if sp < sl and _is_malformed3_2(b1, src[sp]):
                dst.append(REPL)
                continue
            dst.append(REPL)
            break
        elif (b1 >> 3) == -2:
            if sp + 2 < sl:
                b2, b3, b4 = src[sp], src[sp + 1], src[sp + 2]
                sp += 3
                uc = _decode4(b1, b2, b3, b4)
                if _is_malformed4(b2, b3, b4) or not _is_supplementary(uc):
                    dst.append(REPL)
                    sp -= 4
                    sp += _malformed4(src, sp)
                else:
                    dst.append(chr(uc))  # Character.highSurrogate(uc), lowSurrogate(uc)
                continue
            b1 &= 0xFF
            if b1 > 0xF4 or (sp < sl and _is_malformed4_2(b1, src[sp] & 0xFF)):
                dst.append(REPL)
                continue
            sp += 1
            dst.append(REPL)
            if sp < sl and _is_malformed4_3(src[sp]):
                continue
            break
        else:
            dst.append(REPL)
    return "".join(dst)
