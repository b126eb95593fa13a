#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kernel modules in load order, decompressed, for an initramfs without kmod.

Usage: kmod-order.py MODDIR OUTDIR MODULE...

MODDIR is an unpacked lib/modules/<release> tree (from a Debian package: no
modules.dep, since depmod runs at install time). Each MODULE and, first, what
its .modinfo "depends=" names, recursively, is written to OUTDIR/<name>.ko
(.ko.xz, .ko.zst and .ko.gz are decompressed: busybox insmod takes plain ELF).
A module that MODDIR/modules.builtin lists is skipped (it is in the kernel).
Prints the file names in load order, one a line. Exit 1 naming the module that
is neither a file nor built in.
"""
import gzip
import lzma
import os
import subprocess
import sys


def norm(name):
    return name.replace("-", "_")


def index(moddir):
    """Module name -> path of its file under MODDIR/kernel."""
    found = {}
    for root, _, files in os.walk(os.path.join(moddir, "kernel")):
        for f in files:
            for ext in (".ko", ".ko.xz", ".ko.zst", ".ko.gz"):
                if f.endswith(ext):
                    found[norm(f[: -len(ext)])] = os.path.join(root, f)
    return found


def builtin(moddir):
    names = set()
    try:
        with open(os.path.join(moddir, "modules.builtin")) as f:
            for line in f:
                names.add(norm(os.path.basename(line.strip()).removesuffix(".ko")))
    except FileNotFoundError:
        pass
    return names


def load(path):
    if path.endswith(".xz"):
        return lzma.open(path).read()
    if path.endswith(".gz"):
        return gzip.open(path).read()
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
    with open(path, "rb") as f:
        return f.read()


def depends(image):
    """The comma-separated names of the .modinfo "depends=" string."""
    for field in image.split(b"\0"):
        if field.startswith(b"depends="):
            return [norm(d) for d in field[8:].decode().split(",") if d]
    return []


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    moddir, outdir, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
    files, inside = index(moddir), builtin(moddir)
    order, seen = [], set()

    def add(name):
        name = norm(name)
        if name in seen:
            return
        seen.add(name)
        if name not in files:
            if name in inside:
                return
            sys.exit(f"kmod-order.py: no module {name} in {moddir} (neither a file nor built in)")
        image = load(files[name])
        for dep in depends(image):
            add(dep)
        with open(os.path.join(outdir, name + ".ko"), "wb") as f:
            f.write(image)
        order.append(name + ".ko")

    os.makedirs(outdir, exist_ok=True)
    for name in wanted:
        add(name)
    print("\n".join(order))


if __name__ == "__main__":
    main()
