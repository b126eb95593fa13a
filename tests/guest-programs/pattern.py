# SPDX-License-Identifier: MIT
"""The byte pattern and checksum of pattern.h, for host-side test scripts.

pattern(seed, offset, length) -> bytes equal to skiff_pattern_fill(); fnv1a(data, h)
continues a 64-bit FNV-1a checksum (start with FNV_INIT). Run this file to self-check
against values printed by the C implementation.
"""
import struct

FNV_INIT = 0xCBF29CE484222325
_M = (1 << 64) - 1


def word(seed, k):
    z = (seed * 0x9E3779B97F4A7C15 + k) & _M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
    return z ^ (z >> 31)


def pattern(seed, offset, length):
    first, last = offset // 8, (offset + length + 7) // 8
    raw = b"".join(struct.pack("<Q", word(seed, k)) for k in range(first, last))
    start = offset - first * 8
    return raw[start:start + length]


def fnv1a(data, h=FNV_INIT):
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & _M
    return h


if __name__ == "__main__":
    import sys
    seed, off, n = (int(a, 0) for a in sys.argv[1:4]) if len(sys.argv) == 4 else (7, 3, 29)
    d = pattern(seed, off, n)
    print("%s %016x" % (d.hex(), fnv1a(d)))
