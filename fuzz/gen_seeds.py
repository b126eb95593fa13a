#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the hand-designed seed inputs of every harness into corpus/<harness>/.

Each seed is a small, meaningful input in the harness's input format (see the
comment at the top of each fuzz_*.c). Run from anywhere; rewrites only the
seed-*.bin files it names, never the crash-* regression inputs.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def put(name, harness, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name + ".bin"), "wb") as f:
        f.write(bytes(data))


class Mem:
    """A guest memory image from GPA 0 (regions R0, R1 then R2 at 0x8000)."""

    def __init__(self):
        self.b = bytearray()

    def w(self, gpa, data):
        if gpa >= 0x8000:  # R2 follows R1 in the input
            gpa = 0x2000 + gpa - 0x8000
        if len(self.b) < gpa + len(data):
            self.b.extend(bytes(gpa + len(data) - len(self.b)))
        self.b[gpa:gpa + len(data)] = data

    def desc(self, table, i, addr, ln, flags=0, nxt=0):
        self.w(table + 16 * i, struct.pack("<QIHH", addr, ln, flags, nxt))

    def avail(self, ring, heads, flags=0):
        self.w(ring, struct.pack("<HH", flags, len(heads)))
        for k, h in enumerate(heads):
            self.w(ring + 4 + 2 * k, struct.pack("<H", h))


NEXT, WRITE, INDIRECT = 1, 2, 4

# ---- virtqueue: avail 0x0, desc 0x110, used 0xa00 ----
def vq_seeds():
    def hdr(flags, log2num, cap, last, pops):
        return bytes([flags | (log2num << 2), cap, last, pops])

    m = Mem()  # three chains: one readable, one split across R0/R1, one mixed
    m.avail(0, [0, 1, 3])
    m.desc(0x110, 0, 0x1000, 64)
    m.desc(0x110, 1, 0xff0, 32, NEXT, 2)
    m.desc(0x110, 2, 0x8000, 16, WRITE)
    m.desc(0x110, 3, 0x1100, 8, NEXT, 4)
    m.desc(0x110, 4, 0x1200, 8, WRITE)
    put("three-chains", "virtqueue", hdr(0, 3, 15, 0, 8) + m.b)

    m = Mem()  # an indirect table in R1 with three entries
    m.avail(0, [0])
    m.desc(0x110, 0, 0x1400, 48, INDIRECT)
    m.desc(0x1400, 0, 0x1800, 44)
    m.desc(0x1400, 1, 0x1900, 100, NEXT | WRITE, 2)  # NEXT is ignored at the end
    m.desc(0x1400, 2, 0x1a00, 4, WRITE)
    m.desc(0x1400, 1, 0x1900, 100, WRITE | NEXT, 2)
    put("indirect", "virtqueue", hdr(3, 2, 15, 0, 4) + m.b)

    m = Mem()  # a loop: 0 -> 1 -> 0
    m.avail(0, [0])
    m.desc(0x110, 0, 0x1000, 8, NEXT, 1)
    m.desc(0x110, 1, 0x1008, 8, NEXT, 0)
    put("loop", "virtqueue", hdr(1, 1, 4, 0, 2) + m.b)

    m = Mem()  # readable after writable, out-of-memory address, too many iovecs
    m.avail(0, [0, 2, 3])
    m.desc(0x110, 0, 0x1000, 8, WRITE | NEXT, 1)
    m.desc(0x110, 1, 0x1008, 8)
    m.desc(0x110, 2, 0x4000, 8)
    m.desc(0x110, 3, 0xfc0, 0x7448, 0)  # R0 | R1 | hole
    put("bad-chains", "virtqueue", hdr(0, 2, 1, 0, 4) + m.b)

    m = Mem()  # avail idx far ahead: broken ring
    m.w(0, struct.pack("<HH", 0, 200))
    put("broken-ring", "virtqueue", hdr(0, 2, 4, 0, 2) + m.b)


# ---- vsock_tx ----
TX_AVAIL, TX_DESC, RX_AVAIL, RX_DESC = 0x000, 0x030, 0x130, 0x160
REQUEST, RESPONSE, RST, SHUTDOWN, RW, CREDIT_UPDATE, CREDIT_REQUEST = 1, 2, 3, 4, 5, 6, 7
STREAM, SEQPACKET, DGRAM = 1, 2, 3
EOM = 1


def vhdr(op, sport, dport, ln=0, typ=STREAM, flags=0, buf_alloc=65536, fwd=0,
         src_cid=3, dst_cid=2):
    return struct.pack("<QQIIIHHIII", src_cid, dst_cid, sport, dport, ln, typ, op,
                       flags, buf_alloc, fwd)


def tx_input(features, log_tx, log_rx, packets, host=None, rx_bufs=0, split=(),
             pump=0, hdata=b"", rx_len=0x80, later=0, rx_later=0, hport=None):
    """The last @later packets and @rx_later RX buffers come after the pump's first turn."""
    """packets: list of (header, payload); each becomes a chain at 0x400 + 0x100 * k."""
    m = Mem()
    heads = []
    d = 0
    for k, (h, payload) in enumerate(packets):
        gpa = 0x400 + 0x100 * k if k < 12 else 0x1000 + 0x100 * (k - 12)
        m.w(gpa, h + payload)
        heads.append(d)
        if k in split and payload:
            m.desc(TX_DESC, d, gpa, 44, NEXT, d + 1)
            m.desc(TX_DESC, d + 1, gpa + 44, len(payload))
            d += 2
        else:
            m.desc(TX_DESC, d, gpa, 44 + len(payload))
            d += 1
    m.avail(TX_AVAIL, heads)
    m.w(TX_AVAIL + 2, struct.pack("<H", len(heads) - later))
    if rx_bufs:
        m.avail(RX_AVAIL, list(range(rx_bufs)))
        m.w(RX_AVAIL + 2, struct.pack("<H", rx_bufs - rx_later))
        for i in range(rx_bufs):
            m.desc(RX_DESC, i, 0x1800 + 0x80 * i, rx_len, WRITE)
    sizes = log_tx | (log_rx << 4)
    hb = (1 if host is not None else 0) | pump
    return (bytes([features, sizes, hb]) + struct.pack("<I", host or hport or 0)
            + bytes([len(hdata)]) + hdata + bytes([later, rx_later]) + m.b)


def tx_seeds():
    PUMP, PEER_SHUT_WR, PEER_CLOSE = 2, 4, 8
    put("pump-stream", "vsock_tx", tx_input(0, 3, 3, [
        (vhdr(REQUEST, 5020, 1024), b""),
        (vhdr(RW, 5020, 1024, 8), b"to host!"),
    ], rx_bufs=8, pump=PUMP | PEER_SHUT_WR, hdata=b"hello from the host side"))
    put("pump-mrg", "vsock_tx", tx_input(8, 3, 3, [
        (vhdr(REQUEST, 5021, 1024), b""),
    ], rx_bufs=8, pump=PUMP, hdata=bytes(range(200)), rx_len=0x40))
    put("pump-seqpacket", "vsock_tx", tx_input(4, 3, 3, [
        (vhdr(REQUEST, 5022, 1025, typ=SEQPACKET), b""),
    ], rx_bufs=8, pump=PUMP | PEER_CLOSE, hdata=b"one message"))
    put("pump-host-connect", "vsock_tx", tx_input(0, 2, 3, [
        (vhdr(RESPONSE, 78, 1 << 30), b""),
    ], host=78, rx_bufs=8, pump=PUMP, hdata=b"prefix after the line"))
    put("pump-credit-update", "vsock_tx", tx_input(0, 3, 3, [
        (vhdr(REQUEST, 5025, 1024), b""),
        (vhdr(RW, 5025, 1024, 200), bytes(200)),
        (vhdr(RW, 5025, 1024, 200), bytes(200)),
    ], rx_bufs=8, pump=PUMP, later=2, rx_later=4))
    put("pump-no-rx-buffers", "vsock_tx", tx_input(0, 2, 1, [
        (vhdr(REQUEST, 5023, 1024), b""),
        (vhdr(RW, 5024, 4000, 4), b"nope"),
    ], rx_bufs=0, pump=PUMP, hdata=b"x"))
    put("stream-lifecycle", "vsock_tx", tx_input(0, 3, 2, [
        (vhdr(REQUEST, 5000, 1024), b""),
        (vhdr(RW, 5000, 1024, 16), b"0123456789abcdef"),
        (vhdr(CREDIT_REQUEST, 5000, 1024), b""),
        (vhdr(CREDIT_UPDATE, 5000, 1024, buf_alloc=4096, fwd=16), b""),
        (vhdr(SHUTDOWN, 5000, 1024, flags=3), b""),
        (vhdr(RST, 5000, 1024), b""),
    ], rx_bufs=4, split=(1,)))
    put("seqpacket", "vsock_tx", tx_input(4, 3, 2, [
        (vhdr(REQUEST, 6000, 1025, typ=SEQPACKET), b""),
        (vhdr(RW, 6000, 1025, 5, typ=SEQPACKET), b"hello"),
        (vhdr(RW, 6000, 1025, 5, typ=SEQPACKET, flags=EOM), b"world"),
        (vhdr(RW, 6000, 1025, 3, typ=SEQPACKET, flags=EOM), b"one"),
        (vhdr(SHUTDOWN, 6000, 1025, typ=SEQPACKET, flags=1), b""),
    ], rx_bufs=2))
    put("host-connect", "vsock_tx", tx_input(1, 2, 2, [
        (vhdr(RESPONSE, 77, 1 << 30), b""),
        (vhdr(RW, 77, 1 << 30, 4), b"ping"),
        (vhdr(SHUTDOWN, 77, 1 << 30, flags=2), b""),
    ], host=77, rx_bufs=2))
    put("malformed", "vsock_tx", tx_input(2, 3, 1, [
        (vhdr(REQUEST, 5001, 1024), b""),
        (vhdr(RW, 5001, 1024, 200), b"short"),  # len beyond the chain: reset
        (vhdr(RW, 5002, 1024, 4, src_cid=9), b"abcd"),  # wrong source CID
        (vhdr(9, 5003, 1024), b""),  # bad op
        (vhdr(RW, 5004, 1024, 4, typ=3), b"abcd"),  # DGRAM
        (vhdr(RW, 5005, 4242, 4), b"abcd"),  # no connection: RST
        (vhdr(REQUEST, 5006, 4243), b""),  # nobody listens: RST
    ]))
    # Datagrams (feature bit 4 of byte 0 = DGRAM; byte 2 bits 4, 5: host datagrams).
    F_MRG, F_DGRAM, H_GATEWAY, H_PORT = 8, 16, 0x10, 0x20
    put("dgram-g2h", "vsock_tx", tx_input(F_DGRAM, 3, 2, [
        (vhdr(RW, 7000, 1024, 5, typ=DGRAM, buf_alloc=0), b"hello"),  # to the host socket
        (vhdr(RW, 7001, 1024, 0, typ=DGRAM, buf_alloc=0), b""),  # empty datagram
        (vhdr(RW, 7000, 4000, 3, typ=DGRAM), b"abc"),  # nobody bound: no_dest
        (vhdr(RW, 7002, 1024, 4, typ=DGRAM, dst_cid=9), b"abcd"),  # unknown guest CID
    ], pump=H_PORT, hport=7000, hdata=b"reply to 7000", rx_bufs=4))
    put("dgram-gateway", "vsock_tx", tx_input(F_DGRAM | F_MRG, 2, 3, [
        (vhdr(RW, 7003, 1024, 2, typ=DGRAM, buf_alloc=0), b"hi"),
    ], pump=H_GATEWAY | H_PORT, hport=7003, hdata=bytes(range(200)), rx_bufs=8))
    put("dgram-malformed", "vsock_tx", tx_input(F_DGRAM, 3, 1, [
        (vhdr(REQUEST, 7010, 1024), b""),  # a stream on the same ports: never reset
        (vhdr(REQUEST, 7010, 1024, typ=DGRAM), b""),  # op not RW
        (vhdr(RW, 7010, 1024, 200, typ=DGRAM), b"short"),  # len beyond the chain
        (vhdr(RW, 7010, 1024, 4, typ=DGRAM, src_cid=9), b"abcd"),  # wrong source CID
        (vhdr(RW, 7010, 1024, 4, typ=DGRAM, flags=1), b"abcd"),  # flags
        (vhdr(RW, 7010, 1024, 4, typ=DGRAM, dst_cid=1), b"abcd"),  # bad destination CID
        (vhdr(RW, 7010, 1024, 4), b"live"),  # the stream still takes data
    ], rx_bufs=2))
    put("credit-overrun", "vsock_tx", tx_input(0, 4, 1, [
        (vhdr(REQUEST, 5010, 1024), b""),
    ] + [(vhdr(RW, 5010, 1024, 200), bytes(range(200)))] * 14 + [
        (vhdr(RW, 5010, 1024, 200), bytes(200)),
    ]))


# ---- connect_line: seed byte, max byte, then the bytes ----
def connect_seeds():
    for name, seed, mx, line in [
        ("ok", 0, 0, b"CONNECT 1024\n"),
        ("max-port", 3, 0, b"CONNECT 4294967295\n"),
        ("over-port", 5, 0, b"CONNECT 4294967296\n"),
        ("trailing", 1, 0, b"CONNECT 52\nhello guest"),
        ("prefix", 2, 0, b"CONN"),
        ("lowercase", 0, 0, b"connect 1\n"),
        ("no-digits", 6, 0, b"CONNECT \n"),
        ("short-max", 4, 12, b"CONNECT 123456\n"),
    ]:
        put(name, "connect_line", bytes([seed, mx]) + line)


# ---- vhost_user: u8 req, u8 flags, u8 fd kind, u8 len, payload ----
def vu(req, payload=b"", kind=0, need_reply=False):
    return bytes([req, 1 if need_reply else 0, kind, len(payload)]) + payload


def vu_seeds():
    feats = (1 << 32) | (1 << 0) | (1 << 29) | (1 << 28) | (1 << 30)
    ua = 0x7f0000000000
    table = struct.pack("<II", 1, 0) + struct.pack("<QQQQ", 0, 0x10000, ua, 0)

    def ring(q):
        return (vu(13, struct.pack("<Q", q), kind=1)
                + vu(8, struct.pack("<II", q, 8))
                + vu(10, struct.pack("<II", q, 0))
                + vu(9, struct.pack("<IIQQQQ", q, 0, ua + 0x1000 * (q + 1),
                                    ua + 0x1000 * (q + 1) + 0x200,
                                    ua + 0x1000 * (q + 1) + 0x100, 0))
                + vu(12, struct.pack("<Q", q), kind=1)
                + vu(18, struct.pack("<II", q, 1), need_reply=True))

    uml = (vu(3) + vu(1) + vu(15) + vu(16, struct.pack("<Q", (1 << 3) | (1 << 5) | (1 << 9)))
           + vu(21, kind=2, need_reply=True) + vu(2, struct.pack("<Q", feats), need_reply=True)
           + vu(5, table, kind=3, need_reply=True) + ring(0) + ring(1) + ring(2)
           + vu(24, struct.pack("<III", 0, 8, 0) + bytes(8)))
    put("uml-start", "vhost_user", uml)
    qemu = (vu(3) + vu(1) + vu(2, struct.pack("<Q", feats & ~(1 << 30))) + vu(17)
            + vu(5, table, kind=3) + ring(0) + ring(1)
            + vu(11, struct.pack("<II", 0, 0)) + vu(11, struct.pack("<II", 1, 0))
            + vu(4))
    put("qemu-start-stop", "vhost_user", qemu)
    two = struct.pack("<II", 2, 0) + struct.pack("<QQQQ", 0, 0x8000, ua, 0) + \
        struct.pack("<QQQQ", 0x8000, 0x8000, ua + 0x8000, 0x8000)
    put("two-regions", "vhost_user", vu(5, two, kind=3, need_reply=True)
        + vu(5, two[:40], kind=3, need_reply=True))
    bad = (bytes([1, 2, 0, 0, 0x5])  # reply flag set: dropped
           )
    put("bad-flags", "vhost_user", bad)
    put("too-many-fds", "vhost_user", vu(12, struct.pack("<Q", 0), kind=4, need_reply=True))
    put("config", "vhost_user", vu(24, struct.pack("<III", 4, 8, 0) + bytes(8))
        + vu(24, struct.pack("<III", 0, 4, 0) + bytes(4)) + vu(25, bytes(12)))


# ---- vu_session: u8 opcode and its arguments (see fuzz_vu_session.c) ----
def vus_seeds():
    def op(code, *args, fmt=None):
        return bytes([code]) + (struct.pack(fmt, *args) if fmt else bytes(args))

    def ring(q, kick_kind=0, call_kind=0):
        return (op(8, q, call_kind) + op(4, q, 4, 0) + op(6, q, 0, fmt="<BH")
                + op(5, q, 0x1000 * q, 0x1000 * q + 0x400, 0x1000 * q + 0x800, fmt="<BHHH")
                + op(7, q, kick_kind) + op(10, q, 1))

    def up(nrings=3):
        return (op(0, 0) + op(2, 7) + op(15, 4) + op(1, 0x5f) + op(3, 0)
                + b"".join(ring(q) for q in range(nrings)))

    def chain(q, hdr, segs):
        out = op(13, q, len(segs) - 1) + hdr + bytes(44 - len(hdr))
        for off, ln, fl in segs:
            out += struct.pack("<HHB", off, ln, fl)
        return out

    req = vhdr(REQUEST, 5000, 1234)
    rx_buf = chain(0, b"", [(0x9000, 0x1000, 2)])
    traffic = (rx_buf + rx_buf + chain(1, req, [(0x8000, 44, 0)]) + op(19)
               + chain(1, vhdr(RW, 5000, 1234, ln=4), [(0x8100, 44, 0), (0x8200, 4, 0)])
               + op(19) + op(12, 0) + op(12, 1))
    put("uml-up-traffic", "vu_session", up() + traffic)
    # Finding 3: the event vring's kick closed by GET_VRING_BASE, then a restart.
    put("stale-event-kick", "vu_session",
        up() + op(11, 2) + op(10, 0, 1) + op(12, 1) + op(19) + op(7, 2, 0) + op(10, 2, 1))
    # QEMU: no event vring, GET_VRING_BASE on stop, new kicks and calls after.
    put("qemu-stop-start", "vu_session",
        up(2) + traffic + op(11, 0) + op(11, 1) + op(7, 0, 0) + op(7, 1, 0)
        + op(8, 0, 0) + op(8, 1, 4) + op(12, 1) + op(19))
    # Finding 4: every fd kind as kick, call, err and slave fd.
    kinds = b"".join(op(7, 0, k) + op(8, 1, k) + op(9, 2, k) + op(15, k) for k in range(8))
    put("fd-kinds", "vu_session", up() + kinds + op(7, 0, 0) + op(12, 0) + op(19))
    # Finding 7: the memory file shrinks under a running device; a new table after.
    put("shrink-memfd", "vu_session",
        up() + traffic + op(17, 0x100, fmt="<H") + op(19) + op(3, 1) + up())
    # Disconnect mid-transfer, RESET_OWNER, a memory table replaced while running.
    put("disconnect-reset", "vu_session",
        up() + traffic + op(14) + up() + traffic + op(16) + up() + op(3, 5) + op(3, 0x11)
        + op(3, 0x08) + traffic)


# ---- virtio_mmio: 7-byte ops (u8 op, u16 offset, u32 value) ----
def mmio_seeds():
    def w(off, v):
        return struct.pack("<BHI", 1, off, v)

    def r(off):
        return struct.pack("<BHI", 0, off, 0)

    def mem(gpa, data):
        out = b""
        data = data + bytes(-len(data) % 4)
        for i in range(0, len(data), 4):
            out += struct.pack("<BHI", 3, gpa + i, struct.unpack("<I", data[i:i + 4])[0])
        return out

    init = (r(0) + r(4) + r(8) + w(0x70, 0) + w(0x70, 1) + w(0x70, 3)
            + w(0x14, 1) + r(0x10) + w(0x14, 0) + r(0x10)
            + w(0x24, 1) + w(0x20, 1) + w(0x24, 0) + w(0x20, 1) + w(0x70, 0xb) + r(0x70))
    queues = b""
    for q in range(3):
        base = 0x1000 * (q + 1)
        queues += (w(0x30, q) + r(0x34) + w(0x38, 8) + w(0x80, base) + w(0x84, 0)
                   + w(0x90, base + 0x100) + w(0x94, 0) + w(0xa0, base + 0x200)
                   + w(0xa4, 0) + w(0x44, 1))
    start = w(0x70, 0xf) + r(0x70) + r(0x100) + struct.pack("<BHI", 4, 0x101, 0)
    # One REQUEST on the TX queue (queue 1: desc 0x2000, avail 0x2100), then notify.
    pkt = vhdr(REQUEST, 5000, 1024)
    tx = (mem(0x4000, pkt) + mem(0x2000, struct.pack("<QIHH", 0x4000, 44, 0, 0))
          + mem(0x2100, struct.pack("<HHH", 0, 1, 0)) + w(0x50, 1) + r(0x60) + w(0x64, 1))
    put("driver-init", "virtio_mmio", init + queues + start + tx)
    put("bad-features", "virtio_mmio", w(0x70, 3) + w(0x24, 1) + w(0x20, 0xffffffff)
        + w(0x70, 0xb) + r(0x70) + w(0x70, 0xf) + r(0x70))
    put("odd-widths", "virtio_mmio", struct.pack("<BHI", 4, 0x0, 0) + struct.pack("<BHI", 8, 0x2, 0)
        + struct.pack("<BHI", 12, 0x100, 0) + struct.pack("<BHI", 12, 0xffc, 0)
        + struct.pack("<BHI", 13, 0x70, 0xf) + w(0x30, 7) + w(0x38, 8) + r(0x44))


# ---- kernel_loader: mode byte, knob byte, image ----
def bzimage(version=0x020f, xlf=1, init_size=0x4000, setup_sects=1, payload=256):
    setup = (setup_sects + 1) * 512
    b = bytearray(setup + payload)
    b[0x1f1] = setup_sects
    b[0x1fe:0x200] = b"\x55\xaa"
    b[0x200] = 0xeb
    b[0x201] = 0x66
    b[0x202:0x206] = b"HdrS"
    b[0x206:0x208] = struct.pack("<H", version)
    b[0x22c:0x230] = struct.pack("<I", 0x37ffffff)
    b[0x236:0x238] = struct.pack("<H", xlf)
    b[0x238:0x23c] = struct.pack("<I", 2047)
    b[0x260:0x264] = struct.pack("<I", init_size)
    return bytes(b)


def elf(paddr, entry, code=b"\xf4" * 16, memsz_extra=0x1000, phnum=1):
    eh = bytearray(64)
    eh[0:4] = b"\x7fELF"
    eh[4], eh[5], eh[6] = 2, 1, 1
    struct.pack_into("<HHIQQQIHHHHHH", eh, 16, 2, 62, 1, entry, 64, 0, 0, 64, 56, phnum,
                     0, 0, 0)
    total = 64 + 56 * phnum + len(code)
    ph = struct.pack("<IIQQQQQQ", 1, 5, 0, paddr, paddr, total, total + memsz_extra, 0x1000)
    return bytes(eh) + ph * phnum + code


def loader_seeds():
    put("bzimage", "kernel_loader", bytes([0, 0]) + bzimage())
    put("bzimage-initrd", "kernel_loader", bytes([2, 16]) + bzimage())
    put("bzimage-old", "kernel_loader", bytes([0, 0]) + bzimage(version=0x0204))
    put("bzimage-long-cmdline", "kernel_loader", bytes([4, 255]) + bzimage())
    put("vmlinux", "kernel_loader",
        bytes([2, 3]) + elf(0x100000, 0xffffffff80000000 + 0x100000 + 0x78))
    put("tiny", "kernel_loader", bytes([1, 0]) + elf(0x100000, 0x100000 + 0x78))
    put("tiny-two-loads", "kernel_loader", bytes([1, 0]) + elf(0x200000, 0x200000 + 0x78 + 56,
                                                             phnum=2))


# ---- arm64_image: mode, RAM knob, u16 base knob, u16 initrd knob, u32 DTB slot, image ----
def arm64_image(text_offset=0, image_size=0x100000, flags=2, magic=b"ARM\x64", payload=192):
    h = struct.pack("<IIQQQQQQ4sI", 0x91005a4d, 0x14000000, text_offset, image_size, flags,
                    0, 0, 0, magic, 0x40)
    return h + bytes(range(payload % 256)) + bytes(payload - payload % 256)


def arm64_input(mode, ram_knob, image, base_knob=0, initrd_knob=0, dtb=0):
    return struct.pack("<BBHHI", mode, ram_knob, base_knob, initrd_knob, dtb) + image


def arm64_seeds():
    put("image", "arm64_image", arm64_input(0, 63, arm64_image()))
    put("image-initrd-dtb", "arm64_image",
        arm64_input(3, 127, arm64_image(text_offset=0x80000), initrd_knob=4096))
    put("image-unaligned-ram", "arm64_image", arm64_input(3, 95, arm64_image(), base_knob=1))
    put("image-top-of-memory", "arm64_image",
        arm64_input(7, 255, arm64_image(image_size=0x200000), base_knob=1, initrd_knob=100))
    put("ram-ends-at-2-64", "arm64_image", arm64_input(4, 255, arm64_image()))
    put("image-dtb-slot", "arm64_image", arm64_input(10, 63, arm64_image(), dtb=0x1000))
    put("image-too-big", "arm64_image", arm64_input(1, 15, arm64_image(image_size=0x1000000)))
    put("image-big-endian", "arm64_image", arm64_input(0, 63, arm64_image(flags=1)))
    put("image-bad-magic", "arm64_image", arm64_input(0, 63, arm64_image(magic=b"ARM\x65")))
    put("gzip", "arm64_image", arm64_input(0, 63, b"\x1f\x8b\x08\x00" + bytes(60)))


if __name__ == "__main__":
    vq_seeds()
    tx_seeds()
    connect_seeds()
    vu_seeds()
    vus_seeds()
    mmio_seeds()
    loader_seeds()
    arm64_seeds()
