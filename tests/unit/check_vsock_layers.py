#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of the device model (devices/virtio_vsock/src): calls only go down.

Parses every `#include "..."` of the .c and .h files in SRC (default: the
tree's devices/virtio_vsock/src) and fails (exit 1, one line per finding) when
  - a file is not placed in a module of the LAYERS list below (a new file
    must say where it belongs);
  - a file includes a header of a module in a higher layer;
  - the include graph between modules has a cycle (each cycle is printed).
A module is the pair name.c + name.h (MODULE_OF names the exceptions); an
include between two files of one module is not an edge. Headers outside SRC
(skiff/*.h, the public ones, and system headers) are not looked at.
`--self-test` checks that a tree with an upward include and a cycle fails.

The list mirrors the diagram in devices/virtio_vsock/README.md ("Layers"):
keep the two in step.
"""
import os
import re
import sys

# Bottom to top. A module may include its own layer's and lower layers' headers.
LAYERS = [
    ("base", ["iov", "guest_mem", "counters", "host_uds", "host_dgram"]),
    ("virtqueue", ["virtqueue"]),
    ("queues", ["packet", "rxq", "rawq", "txbuf", "killq"]),
    ("conn", ["conn"]),
    ("muxer", ["muxer"]),
    ("router", ["router", "dgram"]),
    # The aggregate (struct vsock_dev) with its thread shells and the public API.
    ("device", ["device"]),
]

# Files whose module is not their own name.
MODULE_OF = {
    "dev.h": "device",
    "device.c": "device",
    "dev_step.h": "device",
    "rx_pump.c": "device",
    "pump.h": "device",
    "dev_ctl.c": "device",
    "ctl.h": "device",
    "host_lobby.c": "device",
    "lobby.h": "device",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(name):
    return MODULE_OF.get(name, os.path.splitext(name)[0])


def find_cycles(graph):
    """Every elementary cycle reachable by DFS back edges, as lists of nodes."""
    cycles, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return cycles


def self_test():
    """The check catches an upward include and a cycle: a tree that has both must fail."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        files = {
            "iov.h": '#include "conn.h"\n',  # base includes conn: upward
            "conn.h": "",
            "conn.c": '#include "conn.h"\n#include "muxer.h"\n',  # conn -> muxer: upward
            "muxer.h": '#include "conn.h"\n',  # muxer -> conn -> muxer: a cycle
        }
        for name, text in files.items():
            with open(os.path.join(d, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        problems = check(d)
    want = ["iov.h (layer base) includes conn.h", "conn.c (layer conn) includes muxer.h",
            "include cycle between modules: conn -> muxer -> conn"]
    missing = [w for w in want if not any(w in p for p in problems)]
    for m in missing:
        print("check_vsock_layers: self-test: not reported: " + m)
    print(f"check_vsock_layers: self-test: {len(problems)} problems reported")
    return 1 if missing else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "..", "devices", "virtio_vsock", "src")
    problems = check(src)
    for p in problems:
        print("check_vsock_layers: " + p)
    if problems:
        return 1
    print(f"check_vsock_layers: {src}: no cycle, every include goes down or across")
    return 0


def check(src):
    """Return the list of problems of the tree @src."""
    layer_of = {m: i for i, (_, mods) in enumerate(LAYERS) for m in mods}
    files = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
    problems, graph = [], {}

    for f in files:
        mod = module_of(f)
        if mod not in layer_of:
            problems.append(f"{f}: module '{mod}' is in no layer of LAYERS "
                            "(tests/unit/check_vsock_layers.py)")
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            if not os.path.exists(os.path.join(src, inc)):
                continue  # skiff/*.h or another directory's
            to = module_of(os.path.basename(inc))
            if to == mod:
                continue
            graph.setdefault(mod, set()).add(to)
            if mod in layer_of and to in layer_of and layer_of[to] > layer_of[mod]:
                problems.append(
                    f"{f} (layer {LAYERS[layer_of[mod]][0]}) includes {inc} "
                    f"(layer {LAYERS[layer_of[to]][0]}): a lower layer may not "
                    "include a higher one")
    for cyc in find_cycles(graph):
        problems.append("include cycle between modules: " + " -> ".join(cyc))
    return problems


if __name__ == "__main__":
    sys.exit(main())
