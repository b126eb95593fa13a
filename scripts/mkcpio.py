#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a cpio "newc" archive (the initramfs format) from a spec, without root.

Spec lines (the format of the kernel's usr/gen_init_cpio):
    dir   NAME MODE UID GID
    file  NAME SOURCE MODE UID GID
    slink NAME TARGET MODE UID GID
    nod   NAME MODE UID GID c|b MAJOR MINOR
MODE is octal; '#' starts a comment. Usage: mkcpio.py SPEC OUTPUT (OUTPUT '-' = stdout).
Entries are written in spec order; parents must come before children.
"""
import stat
import sys


def header(ino, mode, uid, gid, nlink, size, rmaj, rmin, namesize):
    fields = (ino, mode, uid, gid, nlink, 0, size, 0, 0, rmaj, rmin, namesize, 0)
    return b"070701" + b"".join(b"%08X" % f for f in fields)


def pad4(n):
    return b"\0" * ((4 - n % 4) % 4)


def entry(out, ino, name, mode, uid, gid, data=b"", rmaj=0, rmin=0):
    name_b = name.lstrip("/").encode() + b"\0"
    h = header(ino, mode, uid, gid, 2 if stat.S_ISDIR(mode) else 1, len(data), rmaj, rmin,
               len(name_b))
    out.write(h + name_b)
    out.write(pad4(len(h) + len(name_b)))
    out.write(data)
    out.write(pad4(len(data)))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mkcpio.py SPEC OUTPUT")
    with open(sys.argv[1]) as f:
        lines = [l.split("#", 1)[0].split() for l in f]
    out = sys.stdout.buffer if sys.argv[2] == "-" else open(sys.argv[2], "wb")
    ino = 1
    for lineno, w in enumerate(lines, 1):
        if not w:
            continue
        try:
            kind = w[0]
            if kind == "dir":
                entry(out, ino, w[1], stat.S_IFDIR | int(w[2], 8), int(w[3]), int(w[4]))
            elif kind == "file":
                with open(w[2], "rb") as src:
                    data = src.read()
                entry(out, ino, w[1], stat.S_IFREG | int(w[3], 8), int(w[4]), int(w[5]), data)
            elif kind == "slink":
                entry(out, ino, w[1], stat.S_IFLNK | int(w[3], 8), int(w[4]), int(w[5]),
                      w[2].encode())
            elif kind == "nod":
                t = {"c": stat.S_IFCHR, "b": stat.S_IFBLK}[w[5]]
                entry(out, ino, w[1], t | int(w[2], 8), int(w[3]), int(w[4]),
                      rmaj=int(w[6]), rmin=int(w[7]))
            else:
                raise ValueError("unknown entry type " + kind)
        except (IndexError, ValueError, KeyError, OSError) as e:
            sys.exit("mkcpio.py: %s:%d: %s" % (sys.argv[1], lineno, e))
        ino += 1
    entry(out, 0, "TRAILER!!!", 0, 0, 0)
    out.write(b"\0" * 512)
    out.flush()


if __name__ == "__main__":
    main()
