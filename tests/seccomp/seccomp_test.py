#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""seccomp filters per thread type (issue 10), through the test-only hook of
SKIFF_TEST_HOOKS builds: SKIFF_TEST_SECCOMP_VIOLATE=<kind>:<call> makes the first
thread of that type try a forbidden call right after its filter is installed.
Under --seccomp kill (the default) the process must die by SIGSYS and say which
thread and which call; under log it must live on.

Usage: seccomp_test.py skiff SKIFF_BIN GUEST_DIR     (label vmm)
       seccomp_test.py vsock SKIFF_VSOCK_BIN          (label device)
"""
import os
import pty
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

fails = []
TIMEOUT = 60  # generous: a loaded 2-core machine
# The hook's calls and the name the kernel's number resolves to.
CALL_NAME = {"execve": "execve", "open": "openat", "socket": "socket", "ptrace": "ptrace"}
# skiff-vsock's exit status on a usage error (vhost_user/main.c): the one
# place this test knows it.
VSOCK_USAGE_EXIT = 64  # EX_USAGE


def expect(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else f"\n     {detail}"))
    if not cond:
        fails.append(what)


def check_killed(r_code, err, kind, call, prog, what):
    want = f"{prog}: seccomp: thread '{kind}' made a forbidden system call {CALL_NAME[call]} ("
    expect(r_code == -signal.SIGSYS and want in err,
           f"{what}: {kind}:{call} dies by SIGSYS naming the thread and the call",
           f"exit {r_code}, stderr: {err.strip()[-600:]}")


def no_core():
    import resource
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# ---------------------------------------------------------------- skiff (vmm)

def skiff_cmd(binary, guest_dir, d, *extra):
    # The echo guest connects to host port 1234; nobody listens there, so the
    # device's control thread connects (refused) and the guest gets an RST.
    # skiff takes each option once: --console none unless the caller gives its own.
    console = [] if "--console" in extra else ["--console", "none"]
    return [binary, "run", "--tiny-guest", "--kernel", f"{guest_dir}/guest_vsock_echo.elf",
            "--cmdline", "port=1234 mib=1", "--mem", "64M", *console,
            "--vsock", f"cid=3,uds={d}/v.sock,rx-threads=2", *extra]


def run_skiff(binary, guest_dir, violate, *extra, stdin=subprocess.DEVNULL):
    with tempfile.TemporaryDirectory(prefix="skiff-sc-") as d:
        env = dict(os.environ)
        env.pop("SKIFF_TEST_SECCOMP_VIOLATE", None)
        if violate:
            env["SKIFF_TEST_SECCOMP_VIOLATE"] = violate
        r = subprocess.run(skiff_cmd(binary, guest_dir, d, *extra), env=env, stdin=stdin,
                           capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=no_core)
        return r.returncode, r.stderr


def test_skiff_sigterm(binary, guest_dir):
    """Filters on: a host connection to a listening guest, then SIGTERM (signal
    thread: skiff_vm_stop(); main thread: teardown with a live connection)."""
    with tempfile.TemporaryDirectory(prefix="skiff-sc-") as d:
        p = subprocess.Popen([binary, "run", "--tiny-guest", "--kernel",
                              f"{guest_dir}/guest_vsock_listen.elf", "--cmdline", "port=6000",
                              "--mem", "64M", "--console", "none", "--vsock",
                              f"cid=3,uds={d}/v.sock"], stdin=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
        reply = b""
        deadline = time.monotonic() + TIMEOUT
        while p.poll() is None and time.monotonic() < deadline and not reply:
            try:
                with socket.socket(socket.AF_UNIX) as c:
                    c.settimeout(TIMEOUT)
                    c.connect(f"{d}/v.sock")
                    c.sendall(b"CONNECT 6000\n")
                    reply = c.recv(64)
                    if reply.startswith(b"OK "):
                        c.sendall(b"ping")
                        echo = c.recv(4, socket.MSG_WAITALL)
                        p.send_signal(signal.SIGTERM)
                        _, err = p.communicate(timeout=TIMEOUT)
                        expect(echo == b"ping" and p.returncode == 128 + signal.SIGTERM and
                               "seccomp" not in err,
                               "kill: host CONNECT, echo, then SIGTERM: exit 143",
                               f"echo {echo!r}, exit {p.returncode}: {err}")
                        return
            except OSError:
                reply = b""
                time.sleep(0.05)  # device not listening or not started yet
        p.kill()
        _, err = p.communicate()
        expect(False, "kill: host CONNECT to a listening guest", f"reply {reply!r}: {err}")


def test_skiff(binary, guest_dir):
    if not os.path.exists("/dev/kvm"):
        print("skip: /dev/kvm does not exist")
        sys.exit(77)
    base_off, err_off = run_skiff(binary, guest_dir, None, "--seccomp", "off")
    expect(base_off >= 0, "filters off: the refused-connect guest ends by itself",
           f"exit {base_off}: {err_off}")
    code, err = run_skiff(binary, guest_dir, None)
    expect(code == base_off and "seccomp" not in err,
           "default (kill): same exit status as with filters off, no violation",
           f"exit {code} vs {base_off}: {err}")
    code, err = run_skiff(binary, guest_dir, None, "--seccomp", "log")
    expect(code == base_off, "log: same exit status", f"exit {code}: {err}")

    for kind, call in (("main", "open"), ("signal", "execve"), ("vcpu", "execve"),
                       ("vcpu", "socket"), ("vsock-ctl", "execve"), ("vsock-pump", "socket"),
                       ("vsock-pump", "open"), ("vsock-lobby", "open"),
                       ("vsock-lobby", "socket"), ("spawner", "ptrace")):
        code, err = run_skiff(binary, guest_dir, f"{kind}:{call}")
        check_killed(code, err, kind, call, "skiff", "skiff")
    # The console input thread exists only when stdin is a terminal.
    master, slave = pty.openpty()
    try:
        code, err = run_skiff(binary, guest_dir, "serial-in:open", "--console", "stdio",
                              stdin=slave)
    finally:
        os.close(slave)
        os.close(master)
    check_killed(code, err, "serial-in", "open", "skiff", "skiff")

    test_skiff_sigterm(binary, guest_dir)

    code, err = run_skiff(binary, guest_dir, "vcpu:execve", "--seccomp", "log")
    expect(code == base_off and "seccomp: thread" not in err,
           "log: a vCPU's execve is let through (logged by the kernel), the VM runs on",
           f"exit {code}: {err}")
    code, err = run_skiff(binary, guest_dir, None, "--seccomp", "maybe")
    expect(code == 64 and "--seccomp" in err, "bad --seccomp value: usage error 64",
           f"exit {code}: {err}")


# ---------------------------------------------------------- skiff-vsock (device)

def vu_msg(req, payload=b"", flags=1):
    return struct.pack("<III", req, flags, len(payload)) + payload


class Frontend:
    """Just enough of a vhost-user frontend to make skiff-vsock start its device."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(TIMEOUT)
        self.s.connect(path)
        self.fds = []

    def send(self, req, payload=b"", fds=()):
        msg = vu_msg(req, payload)
        if fds:
            socket.send_fds(self.s, [msg], list(fds))
        else:
            self.s.sendall(msg)

    def start_device(self, features=1 << 32):
        mem = os.memfd_create("guest", 0)
        self.fds.append(mem)
        os.ftruncate(mem, 1 << 20)
        ua = 0x7f0000000000
        self.send(3)  # SET_OWNER
        self.send(2, struct.pack("<Q", features))  # SET_FEATURES: VERSION_1 (and more)
        self.send(5, struct.pack("<II", 1, 0) + struct.pack("<QQQQ", 0, 1 << 20, ua, 0),
                  [mem])  # SET_MEM_TABLE
        for q, base in ((0, 0x0000), (1, 0x4000)):  # RX, TX
            kick, call = os.eventfd(0), os.eventfd(0)
            self.fds += [kick, call]
            self.send(8, struct.pack("<II", q, 16))  # SET_VRING_NUM
            self.send(10, struct.pack("<II", q, 0))  # SET_VRING_BASE
            self.send(9, struct.pack("<IIQQQQ", q, 0, ua + base, ua + base + 0x800,
                                     ua + base + 0x400, 0))  # SET_VRING_ADDR
            self.send(13, struct.pack("<Q", q), [call])  # SET_VRING_CALL
            self.send(12, struct.pack("<Q", q), [kick])  # SET_VRING_KICK: ready

    def close(self):
        self.s.close()
        for fd in self.fds:
            os.close(fd)


def run_vsock(binary, violate, start_device, *extra):
    with tempfile.TemporaryDirectory(prefix="vu-sc-") as d:
        env = dict(os.environ)
        env.pop("SKIFF_TEST_SECCOMP_VIOLATE", None)
        if violate:
            env["SKIFF_TEST_SECCOMP_VIOLATE"] = violate
        p = subprocess.Popen([binary, "--socket", f"{d}/vu.sock", "--cid", "3", "--uds",
                              f"{d}/h.sock", "--rx-threads", "2", *extra], env=env,
                             stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
        fe = None
        deadline = time.monotonic() + TIMEOUT
        while p.poll() is None and time.monotonic() < deadline:
            try:
                fe = Frontend(f"{d}/vu.sock")
                break
            except OSError:
                time.sleep(0.02)  # not listening yet; the process may also be dying
        try:
            if fe and start_device:
                fe.start_device()
        except OSError:
            pass  # the process died mid-setup: judged by its exit below
        if violate is None or "--seccomp" in extra:
            # Nothing kills it: once the device runs, ask it to stop.
            if start_device and fe:
                # GET_FEATURES round trip: every earlier request was handled.
                fe.s.sendall(vu_msg(1))
                fe.s.recv(20, socket.MSG_WAITALL)
            p.send_signal(signal.SIGTERM)
        err = finish(p, term=False)
        if fe:
            fe.close()
        return p.returncode, err


def test_vsock(binary):
    code, err = run_vsock(binary, None, True)
    expect(code == 0 and "dev_starts 1" in err,
           "default (kill): device started by a frontend, clean exit on SIGTERM",
           f"exit {code}: {err}")
    for kind, call, start in (("vu-main", "execve", False), ("vu-main", "socket", False),
                              ("vu-signal", "open", False), ("spawner", "ptrace", False),
                              ("vsock-lobby", "execve", False), ("vsock-lobby", "socket", False),
                              ("vsock-ctl", "execve", True), ("vsock-pump", "socket", True),
                              ("vsock-pump", "ptrace", True)):
        code, err = run_vsock(binary, f"{kind}:{call}", start)
        check_killed(code, err, kind, call, "skiff-vsock", "skiff-vsock")
    code, err = run_vsock(binary, "vsock-ctl:execve", True, "--seccomp", "log")
    expect(code == 0 and "dev_starts 1" in err and "seccomp: thread" not in err,
           "log: the control thread's execve is let through, clean exit",
           f"exit {code}: {err}")
    r = subprocess.run([binary, "--socket", "/tmp/x", "--cid", "3", "--uds", "/tmp/y",
                        "--seccomp", "maybe"], capture_output=True, text=True, timeout=TIMEOUT)
    expect(r.returncode == VSOCK_USAGE_EXIT and "--seccomp" in r.stderr,
           f"bad --seccomp value: usage exit {VSOCK_USAGE_EXIT}",
           f"exit {r.returncode}: {r.stderr}")
    test_vsock_out_of_fds(binary)
    test_vsock_multi(binary)
    test_vsock_dgram(binary)


def test_vsock_dgram(binary):
    """Datagrams under the default filters: the control thread makes a guest port's
    socket (socket, bind; over a stale socket file: newfstatat, connect, unlink) for
    the host's first datagram through the gateway; nobody is killed."""
    with tempfile.TemporaryDirectory(prefix="vu-dg-") as d:
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        stale.bind(f"{d}/h.sock_dgram_g5")
        stale.close()  # a stale socket file where the device binds guest port 5's
        p = subprocess.Popen([binary, "--socket", f"{d}/vu.sock", "--cid", "3", "--uds",
                              f"{d}/h.sock", "--dgram", "on"], stderr=subprocess.PIPE,
                             text=True, preexec_fn=no_core)
        fe = None
        deadline = time.monotonic() + TIMEOUT
        while p.poll() is None and fe is None and time.monotonic() < deadline:
            try:
                fe = Frontend(f"{d}/vu.sock")
            except OSError:
                time.sleep(0.02)  # not listening yet
        expect(fe is not None, "skiff-vsock --dgram on: a frontend connects")
        fe.start_device((1 << 32) | (1 << 3))  # VERSION_1, DGRAM
        fe.s.sendall(vu_msg(1))  # GET_FEATURES round trip: the device runs
        fe.s.recv(20, socket.MSG_WAITALL)
        h = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        h.bind(f"{d}/h.sock_dgram_7")
        h.sendto(b"SEND 5\nhello", f"{d}/h.sock_dgram")
        made = False
        while p.poll() is None and time.monotonic() < deadline and not made:
            try:
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                probe.connect(f"{d}/h.sock_dgram_g5")  # only a live socket takes it
                probe.close()
                made = True
            except OSError:
                time.sleep(0.02)  # the control thread has not made it yet
        h.close()
        err = finish(p)
        fe.close()
        expect(made and p.returncode == 0 and "seccomp: thread" not in err,
               "--dgram on, seccomp kill: guest port 5's socket made over a stale file, clean exit",
               f"exit {p.returncode}: {err}")
        expect("dgram_rx_drop_no_buf 1" in err,
               "the datagram met no RX buffer (the frontend posts none): counted",
               err)


def thread_seccomp(pid):
    """{tid: (comm, Seccomp mode, Seccomp_filters or None)} for every thread."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue  # the thread ended meanwhile
        nf = st.get("Seccomp_filters")  # Linux 5.9 and later
        out[int(tid)] = (comm, int(st["Seccomp"]), int(nf) if nf is not None else None)
    return out


def tsan_thread(pid, threads):
    """In a ThreadSanitizer build (-DSKIFF_SANITIZE=thread: the process maps
    libtsan), the tid of the runtime's background thread, else None. libtsan
    starts that thread itself at the process's first pthread_create(), which is
    sandbox_init() starting the spawner before any filter exists: so it is the
    first thread after the main one, and no filter of ours can cover it (it is
    not skiff's code and runs none of it)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            if "libtsan" not in f.read():
                return None
    except OSError:
        return None
    others = sorted(t for t in threads if t != pid)
    return others[0] if others else None


def multi_cmd(binary, d):
    return [binary, "--guest", f"socket={d}/a.sock,cid=3,uds={d}/ha.sock",
            "--guest", f"socket={d}/b.sock,cid=4", "--rx-threads", "1"]


def test_vsock_multi(binary):
    """Two guests in one process under kill: every thread filtered, each
    guest's server thread ("vu-<cid>") by exactly one filter of its own (so it
    was not created under another thread's filter), both devices started by
    their frontends, clean exit; then a violation in a server thread names
    vu-main (the main thread enters its vu-main filter only after every server
    thread has, so the hook's first vu-main thread is a server thread)."""
    with tempfile.TemporaryDirectory(prefix="vu-sc-") as d:
        env = dict(os.environ)
        env.pop("SKIFF_TEST_SECCOMP_VIOLATE", None)
        p = subprocess.Popen(multi_cmd(binary, d), env=env, stderr=subprocess.PIPE, text=True,
                             preexec_fn=no_core)
        fes = []
        try:
            for sock in ("a.sock", "b.sock"):
                if not wait_path(p, f"{d}/{sock}"):
                    break
                fe = None
                deadline = time.monotonic() + TIMEOUT
                while fe is None and p.poll() is None and time.monotonic() < deadline:
                    try:
                        fe = Frontend(f"{d}/{sock}")
                    except OSError:
                        time.sleep(0.02)  # file there, listen() not yet
                if fe is None:
                    break
                fes.append(fe)
                fe.start_device()
                fe.s.sendall(vu_msg(1))  # GET_FEATURES round trip: all handled
                fe.s.recv(20, socket.MSG_WAITALL)
            threads = thread_seccomp(p.pid) if len(fes) == 2 and p.poll() is None else {}
            tsan = tsan_thread(p.pid, threads) if threads else None
        except OSError as e:
            threads = {}
            print(f"     frontend: {e}")
        finally:
            err = finish(p)
            for fe in fes:
                fe.close()
        servers = {t: v for t, v in threads.items() if v[0] in ("vu-3", "vu-4")}
        expect(len(fes) == 2 and sorted(v[0] for v in servers.values()) == ["vu-3", "vu-4"],
               "multi-guest, kill: both frontends served, a server thread per guest",
               f"frontends {len(fes)}, threads {threads}: {err}")
        ours = {t: v for t, v in threads.items() if t != tsan}
        expect(ours and all(v[1] == 2 for v in ours.values()),
               "multi-guest, kill: every thread runs under a seccomp filter" +
               ("" if tsan is None else
                f" (TSan build: libtsan's own background thread {tsan}, started before"
                " any filter, left out)"),
               f"threads {threads}")
        expect(servers and all(v[2] in (None, 1) for v in servers.values()),
               "multi-guest, kill: each server thread has exactly its own filter",
               f"server threads {servers}")
        expect(p.returncode == 0 and "seccomp" not in err and
               "cid 3 vhost-user:" in err and "cid 4 vhost-user:" in err and
               err.count("dev_starts 1") == 2,
               "multi-guest, kill: both devices started, clean exit on SIGTERM",
               f"exit {p.returncode}: {err}")

        env["SKIFF_TEST_SECCOMP_VIOLATE"] = "vu-main:socket"
        try:
            r = subprocess.run(multi_cmd(binary, d), env=env, capture_output=True, text=True,
                               timeout=TIMEOUT, preexec_fn=no_core)
            code, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as e:
            code, err = None, str(e.stderr)
        check_killed(code, err, "vu-main", "socket", "skiff-vsock", "skiff-vsock, two guests")


def finish(p, term=True):
    """SIGTERM @p if it still runs (unless @term is false) and collect its stderr; a
    process that does not exit within TIMEOUT is killed. Returns the stderr text."""
    if term and p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return err


def wait_path(p, path):
    deadline = time.monotonic() + TIMEOUT
    while p.poll() is None and time.monotonic() < deadline and not os.path.exists(path):
        time.sleep(0.02)  # no event to wait for: the process makes the socket file
    return os.path.exists(path)


def limit_fds(pid, spare):
    """Lower pid's RLIMIT_NOFILE to `spare` above its highest fd. Return: the
    old limits and how many fds it can still open (the holes below too)."""
    fds = [int(f) for f in os.listdir(f"/proc/{pid}/fd")]
    soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (max(fds) + 1 + spare, hard))
    return soft, hard, max(fds) + 1 + spare - len(fds)


def eof_without_ok(c):
    """Read until the end; True when the device closed it without "OK" (a
    close with our CONNECT line unread shows as a reset on AF_UNIX)."""
    data = b""
    try:
        while True:
            b = c.recv(64)
            if not b:
                break
            data += b
    except ConnectionResetError:
        pass
    except OSError:
        return False  # timeout: not closed
    return not data.startswith(b"OK")


def host_clients(path, n):
    cs = []
    for _ in range(n):
        c = socket.socket(socket.AF_UNIX)
        c.settimeout(TIMEOUT)
        c.connect(path)  # queued in the backlog even when nobody accepts
        try:
            c.sendall(b"CONNECT 5000\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # already refused (accepted and closed unread): the caller checks for EOF
        cs.append(c)
    return cs


def test_vsock_out_of_fds(binary):
    """Under kill, out of fds: the lobby (device not started yet) and then the
    control thread take clients off the backlog and refuse them (uds_accept():
    close of the reserved fd, accept4, close, fcntl(F_DUPFD_CLOEXEC)); the
    frontend listener backs off (vu_server.c). None of it may die by SIGSYS."""
    with tempfile.TemporaryDirectory(prefix="vu-sc-") as d:
        env = dict(os.environ)
        env.pop("SKIFF_TEST_SECCOMP_VIOLATE", None)
        p = subprocess.Popen([binary, "--socket", f"{d}/vu.sock", "--cid", "3", "--uds",
                              f"{d}/h.sock", "--rx-threads", "1"], env=env,
                             stderr=subprocess.PIPE, text=True, preexec_fn=no_core)
        fe, cs = None, []
        try:
            if not wait_path(p, f"{d}/vu.sock"):
                expect(False, "out of fds: skiff-vsock starts", p.stderr.read())
                return
            # Lobby: `free` clients held, the last 3 refused at EMFILE.
            soft, hard, free = limit_fds(p.pid, 2)
            cs = host_clients(f"{d}/h.sock", free + 3)
            refused = [eof_without_ok(c) for c in cs[free:]]
            # The frontend listener is out of fds too: vu-main backs off.
            fe_early = socket.socket(socket.AF_UNIX)
            fe_early.connect(f"{d}/vu.sock")
            fe_early.close()
            resource.prlimit(p.pid, resource.RLIMIT_NOFILE, (soft, hard))
            expect(all(refused) and p.poll() is None,
                   "kill, out of fds before the device starts: the lobby refuses the "
                   "extra clients (EOF without OK) and the process lives",
                   f"refused {refused}, exit {p.poll()}")
            for c in cs:
                c.close()
            fe = Frontend(f"{d}/vu.sock")
            fe.start_device()
            fe.s.sendall(vu_msg(1))  # GET_FEATURES round trip: the device runs
            fe.s.recv(20, socket.MSG_WAITALL)
            _, _, free = limit_fds(p.pid, 2)
            cs = host_clients(f"{d}/h.sock", free + 3)
            refused = [eof_without_ok(c) for c in cs[free:]]
            resource.prlimit(p.pid, resource.RLIMIT_NOFILE, (soft, hard))
            expect(all(refused) and p.poll() is None,
                   "kill, out of fds with the device started: the control thread "
                   "refuses the extra clients and the process lives",
                   f"refused {refused}, exit {p.poll()}")
        finally:
            for c in cs:
                c.close()
            err = finish(p)
            if fe:
                fe.close()
        expect(p.returncode == 0 and "dev_starts 1" in err and "seccomp" not in err,
               "kill, out of fds: clean exit on SIGTERM, no seccomp violation",
               f"exit {p.returncode}: {err}")


if __name__ == "__main__":
    if sys.argv[1] == "skiff":
        test_skiff(sys.argv[2], sys.argv[3])
    else:
        test_vsock(sys.argv[2])
    if fails:
        print(f"{len(fails)} failed")
        sys.exit(1)
    print("all passed")
