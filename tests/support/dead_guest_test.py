#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A dead guest is reported within seconds, with its reason, not after the full timeout.

No KVM and no real kernel: the guest is tests/support/fake-guest.sh (passed as the UML
kernel, or first in PATH as qemu-system-x86_64), told by SKIFF_FAKE_GUEST how to die. Each
check runs a command with a --timeout far above its limit here (the time a harness that
does not notice the death takes) and wants: the expected exit status, within LIMIT seconds,
and the reason (the panic line, the signal) in the output.

Usage: dead_guest_test.py guest-run
         scripts/guest-run.sh (uml and qemu): panic then hang, Oops then hang, panic then
         SIGABRT, SIGABRT alone, exit without a result, a hang (the timeout path), a healthy
         guest (no false alarm); SKIFF_SKIP_GUESTS's parsing (guest_watch.skip_reason); and
         GuestRun's stall watch (a guest whose heartbeat stops is ended, no false alarm)
       dead_guest_test.py e2e SKIFF_VSOCK VSOCK_TOOL UDS_PEER
         tests/uml/e2e/guest_e2e.py --set smoke, whose host peers wait for the guest
       dead_guest_test.py rx-batch SKIFF_VSOCK RX_WAKE
         tests/uml/rx-batch/rx_batch_test.py
       dead_guest_test.py ab GUEST_AB
         bench/guest/guest_ab.py --quick (build/bench/guest_ab), both kernels dying
       dead_guest_test.py peer SKIFF_VSOCK WORK_DIR
         tests/peer/peer_test.py: the server guest listens, the client guest panics: the
         server must be stopped at once (skipped, 77, without vsock_test from
         scripts/build-kernels.sh or without user namespaces)
Exit status 0 all passed, 1 a check failed, 2 usage, 77 skipped.
"""
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "../.."))
sys.path.insert(0, HERE)
from guest_watch import STOPPED_PREFIX, GuestRun, skip_reason  # noqa: E402

FAKE = os.path.join(HERE, "fake-guest.sh")
PANIC = "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b"
GUEST_RUN_LIMIT = 10  # seconds: guest-run.sh's 2 s grace, plus slack for a loaded host
HARNESS_LIMIT = 15  # the harnesses also build an initramfs and start skiff-vsock
failures = []


def check(name, argv, mode, want_rc, want_text, limit, env_extra=None):
    env = dict(os.environ, SKIFF_FAKE_GUEST=mode, **(env_extra or {}))
    env.pop("SKIFF_SKIP_GUESTS", None)  # these boot no real guest: never skipped
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                       env=env, timeout=600)
    secs = time.monotonic() - t0
    errs = []
    if p.returncode != want_rc:
        errs.append(f"exit status {p.returncode}, want {want_rc}")
    if secs >= limit:
        errs.append(f"took {secs:.1f} s, want < {limit} s")
    for t in want_text:
        if t not in p.stdout:
            errs.append(f"no {t!r} in the output")
    print(f"{'FAIL' if errs else 'PASS'} {name}: exit {p.returncode} in {secs:.1f} s"
          + (": " + "; ".join(errs) if errs else ""), flush=True)
    if errs:
        failures.append(name)
        print("    " + " ".join(argv) + "\n    | " + "\n    | ".join(p.stdout.splitlines()[-30:]), flush=True)


def guest_run_checks():
    initrd = tempfile.NamedTemporaryFile(prefix="skiff-fake-initrd-")
    gr = os.path.join(REPO, "scripts/guest-run.sh")
    uml = [gr, "uml", "--kernel", FAKE, "--initrd", initrd.name, "--timeout", "30"]
    died = "guest-run.sh: uml guest died: "
    tail = "guest-run.sh: --- last 20 console lines ---"
    check("uml panic, then hang", uml, "panic-hang", 123, [died + PANIC, "killed 2 s after that line", tail],
          GUEST_RUN_LIMIT)
    check("uml Oops, then hang", uml, "oops-hang", 123, [died + "Oops: 0002 [#1] PREEMPT SMP NOPTI", tail],
          GUEST_RUN_LIMIT)
    check("uml panic, then SIGABRT", uml, "panic-abort", 123, [died + PANIC, "ended by itself, status 134"],
          GUEST_RUN_LIMIT)
    check("uml SIGABRT without a panic line", uml, "abort", 123,
          [died + "killed by SIGABRT", "start_userspace : expected SIGSTOP"], GUEST_RUN_LIMIT)
    check("uml SIGABRT after an orderly halt: the guest's rc stands", uml, "halt-abort", 0,
          ["guest-run.sh: warning: uml ended by SIGABRT after the guest halted", "guest-run.sh: uml guest rc=0"],
          GUEST_RUN_LIMIT)
    check("uml SIGABRT after an orderly halt, guest rc 1", uml, "halt-abort-rc", 1,
          ["guest-run.sh: warning: uml ended by SIGABRT after the guest halted"], GUEST_RUN_LIMIT)
    check("uml exit without a result", uml, "exit", 125, ["without a SKIFF-RESULT line", tail], GUEST_RUN_LIMIT)
    check("uml healthy guest", uml, "ok", 0, ["guest-run.sh: uml guest rc=0"], GUEST_RUN_LIMIT)
    check("uml hang: the timeout still works", uml[:-1] + ["3"], "hang", 124,
          ["guest-run.sh: uml guest timed out after 3 s", tail], GUEST_RUN_LIMIT)
    with tempfile.TemporaryDirectory(prefix="skiff-fake-qemu-") as d:
        os.symlink(FAKE, os.path.join(d, "qemu-system-x86_64"))
        path = {"PATH": d + os.pathsep + os.environ.get("PATH", "")}
        qemu = [gr, "qemu", "--kernel", initrd.name, "--initrd", initrd.name, "--timeout", "30"]
        check("qemu panic, then hang", qemu, "panic-hang", 123, ["guest-run.sh: qemu guest died: " + PANIC],
              GUEST_RUN_LIMIT, path)
        check("qemu healthy guest", qemu, "ok", 0, ["guest-run.sh: qemu guest rc=0"], GUEST_RUN_LIMIT, path)
    initrd.close()


def skip_checks():
    cases = [("", "uml", False), ("0", "qemu", False), ("1", "kvm", True), ("all", "uml", True),
             ("uml", "uml", True), ("uml", "qemu", False), ("qemu,kvm", "kvm", True), ("qemu, kvm", "uml", False),
             ("uml kvm", "kvm", True)]
    for value, kind, want in cases:
        got = skip_reason(kind, {"SKIFF_SKIP_GUESTS": value}) is not None
        ok = got == want
        print(f"{'PASS' if ok else 'FAIL'} SKIFF_SKIP_GUESTS={value!r} {kind}: skipped={got}", flush=True)
        if not ok:
            failures.append(f"skip {value} {kind}")
    try:
        skip_reason("uml", {"SKIFF_SKIP_GUESTS": "umll"})
        print("FAIL SKIFF_SKIP_GUESTS='umll' accepted", flush=True)
        failures.append("skip typo")
    except ValueError as e:
        print(f"PASS SKIFF_SKIP_GUESTS='umll' refused: {e}", flush=True)


def stall_checks():
    """GuestRun(stall_s): a guest whose console goes silent after its heartbeat began is
    ended within about stall_s with the reason; a quiet guest without a heartbeat, and one
    whose heartbeat goes on, are not."""
    cases = [
        ("heartbeat, then silence: ended", "echo SKIFF-ALIVE 1.00 s; sleep 30", True),
        ("silence, no heartbeat yet: left alone", "echo booting; sleep 5", False),
        ("heartbeat goes on: left alone",
         "for i in 1 2 3 4 5 6 7 8; do echo SKIFF-ALIVE $i.00 s; sleep 0.5; done", False),
    ]
    for name, script, want_kill in cases:
        t0 = time.monotonic()
        g = GuestRun(["sh", "-c", script], stall_s=2)
        rc = g.wait(40)
        secs = time.monotonic() - t0
        killed = bool(g.killed) and g.killed.startswith(STOPPED_PREFIX)
        errs = []
        if rc is None:
            errs.append("still running after 40 s")
            g.kill()
        if killed != want_kill:
            errs.append(f"killed={killed} ({g.killed!r}), want {want_kill}")
        if want_kill and secs >= 8:
            errs.append(f"took {secs:.1f} s, want < 8 s (stall_s 2)")
        print(f"{'FAIL' if errs else 'PASS'} stall: {name}: {secs:.1f} s {'; '.join(errs)}", flush=True)
        if errs:
            failures.append(f"stall {name}")


def main(argv):
    what = argv[1] if len(argv) > 1 else ""
    py = sys.executable
    if what == "guest-run" and len(argv) == 2:
        guest_run_checks()
        skip_checks()
        stall_checks()
    elif what == "e2e" and len(argv) == 5:
        e2e = [py, os.path.join(REPO, "tests/uml/e2e/guest_e2e.py"), "--vmm", "uml", "--kernel", FAKE,
               "--skiff-vsock", argv[2], "--vsock-tool", argv[3], "--uds-peer", argv[4], "--set", "smoke",
               "--timeout", "60"]
        for mode, text in (("panic-abort", "FAIL uml guest: uml guest died: " + PANIC),
                           ("panic-hang", "FAIL uml guest: uml guest died: " + PANIC),
                           ("exit", "FAIL uml guest: uml guest ended")):
            check(f"guest_e2e, guest {mode}", e2e, mode, 1, [text, "--- guest console (last 40 lines) ---"],
                  HARNESS_LIMIT)
    elif what == "rx-batch" and len(argv) == 4:
        rxb = [py, os.path.join(REPO, "tests/uml/rx-batch/rx_batch_test.py"), "--kernel", FAKE,
               "--skiff-vsock", argv[2], "--rx-wake", argv[3], "--timeout", "60"]
        check("rx_batch_test, guest panic-hang", rxb, "panic-hang", 1,
              ["FAIL uml patched guest: uml guest died: " + PANIC, "--- guest console (last 40 lines) ---"],
              HARNESS_LIMIT)
    elif what == "ab" and len(argv) == 3:
        ab = [argv[2], "--quick", "--kernel-a", FAKE, "--kernel-b", FAKE]
        check("guest_ab, both guests panic-hang", ab, "panic-hang", 1,
              ["guest_ab: pair 1/1 A (baseline)", "FAILED: guest: uml guest died: " + PANIC,
               "--- guest console (last 30 lines) ---"], HARNESS_LIMIT)
    elif what == "peer" and len(argv) == 4:
        peer = [py, os.path.join(REPO, "tests/peer/peer_test.py"), "--skiff-vsock", argv[2], "--variant",
                "baseline", "--mrg-rxbuf", "off", "--work-dir", argv[3], "--kernel", FAKE, "--timeout", "60",
                "--attempts", "1"]
        vt = subprocess.run([os.path.join(REPO, "scripts/build-kernels.sh"), "--print-path", "baseline", "tools",
                             "vsock_test"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if vt.returncode != 0 or not os.path.exists(vt.stdout.strip()):
            print("dead_guest_test: SKIP: peer_test needs vsock_test (scripts/build-kernels.sh)")
            return 77
        if subprocess.run(["unshare", "--user", "--map-root-user", "--net", "--pid", "--mount", "--fork", "true"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            print("dead_guest_test: SKIP: peer_test needs user, net, pid and mount namespaces")
            return 77
        check("peer_test, client guest panics while the server waits", peer, "peer-client-panic", 1,
              ["FAIL attempt1: client guest: uml guest died: " + PANIC,
               "FAIL attempt1: server guest killed: the client guest died first"], HARNESS_LIMIT)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"dead_guest_test {what}: {'FAILED: ' + ', '.join(failures) if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
