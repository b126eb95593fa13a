#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-side help for the harnesses that boot Linux guests: a dead guest ends a case at once.

GuestRun runs scripts/guest-run.sh as a child and reads its console on a thread. guest-run.sh
itself kills a guest a few seconds after a fatal console line (panic, Oops, "Attempted to kill
init") and exits 123 (died), 124 (timed out) or 125 (no SKIFF-RESULT), with one verdict line
naming the reason; GuestRun keeps that line, the console and the exit status, so that a
harness waiting for something from the guest (a connection, a line, a host peer's summary)
can stop waiting as soon as the guest is gone and say why (failure_text()).

A guest that stops altogether (no panic, no line, its timer no longer runs: what QEMU's SVM
fault leaves in an emulated host, docs/test-host.md) is caught by a heartbeat: a harness
boots the guest with HEARTBEAT_ARG (init.sh then prints "SKIFF-ALIVE <uptime> s" every
HEARTBEAT_S seconds) and gives GuestRun stall_s; once a heartbeat was seen, a console silent
for stall_s seconds kills the guest with the reason STOPPED_PREFIX... (host_run.sh retries a
run that shows it, in an emulated host only).

skip_reason(kind) reads SKIFF_SKIP_GUESTS, which skips the tests that boot Linux guests:
  unset, "" or "0"     skip none
  "1" or "all"         skip every kind
  KIND[,KIND...]       skip these kinds: uml (user-mode Linux), qemu (QEMU TCG microvm),
                       kvm (Linux on skiff's own KVM VMM)
Any other word is an error (a typo must not run what it meant to skip).

Command line, for ctest (tests/CMakeLists.txt, skiff_add_test GUEST KIND):
  guest_watch.py gate KIND -- COMMAND [ARGS...]
runs COMMAND, or exits 77 saying why when SKIFF_SKIP_GUESTS skips KIND (2 on a bad value).
"""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

GUEST_KINDS = ("uml", "qemu", "kvm")
# guest-run.sh's exit statuses for a guest that did not end by itself with a result.
DIED, TIMED_OUT, NO_RESULT = 123, 124, 125
DEAD_STATUSES = (DIED, TIMED_OUT, NO_RESULT)
VERDICT = re.compile(r"^guest-run\.sh: (?:\S+ guest (?:rc=|died|timed out|ended)|error: )")
# The guest's heartbeat (tests/guest-programs/init.sh skiff.alive=) and what a stall is called.
HEARTBEAT_S = 10
HEARTBEAT_ARG = f"skiff.alive={HEARTBEAT_S}"
HEARTBEAT_PREFIX = "SKIFF-ALIVE "
STOPPED_PREFIX = "guest_watch: the guest stopped"


def skip_reason(kind, env=None):
    """None when guests of @kind (one of GUEST_KINDS) are to run, else the reason to print.
    Raises ValueError for a SKIFF_SKIP_GUESTS value that is not understood."""
    if kind not in GUEST_KINDS:
        raise ValueError(f"unknown guest kind {kind!r} (one of {', '.join(GUEST_KINDS)})")
    v = (os.environ if env is None else env).get("SKIFF_SKIP_GUESTS", "").strip()
    if v in ("", "0"):
        return None
    if v in ("1", "all"):
        return f"SKIFF_SKIP_GUESTS={v}: every Linux guest test is skipped"
    words = [w for w in re.split(r"[,\s]+", v) if w]
    bad = [w for w in words if w not in GUEST_KINDS]
    if bad:
        raise ValueError(f"SKIFF_SKIP_GUESTS={v!r}: unknown {', '.join(bad)} "
                         f"(use 1, all, or a list of {', '.join(GUEST_KINDS)})")
    if kind in words:
        return f"SKIFF_SKIP_GUESTS={v}: {kind} guest tests are skipped"
    return None


def exit_if_skipped(kind, who):
    """For a harness's main(): exit 77 (ctest's skip) if SKIFF_SKIP_GUESTS skips @kind, 2 if
    its value is bad; else return."""
    try:
        why = skip_reason(kind)
    except ValueError as e:
        print(f"{who}: error: {e}", flush=True)
        sys.exit(2)
    if why:
        print(f"{who}: skipped ({why})", flush=True)
        sys.exit(77)


class GuestRun:
    """One scripts/guest-run.sh process (argv), its console read line by line on a thread.

    on_line(line), if given, is called on that thread for each console line (before the
    verdict); console_path, if given, receives every line as it comes. Lines from the
    verdict on (guest-run.sh's own summary and its copy of the console tail) are kept apart,
    in self.after. ended is set once guest-run.sh has exited (self.status is then its exit
    status, negative for a signal). An exception from on_line is printed and ends the guest
    (reason(): "the harness failed ...") rather than leaving it running unread.
    """

    def __init__(self, argv, on_line=None, console_path=None, echo=None, stall_s=None):
        self.lines = []
        self.after = []
        self.verdict = None
        self.status = None
        self.killed = None  # why this harness killed it, if it did
        self.on_line = on_line
        self.echo = echo
        self.ended = threading.Event()
        self._file = open(console_path, "w") if console_path else None
        # A session of its own: kill() can reach anything guest-run.sh leaves behind.
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, errors="replace",
                                     start_new_session=True)
        self.pid = self.proc.pid
        self._last_t = time.monotonic()  # when the last console line came
        self._alive = None  # the last heartbeat line, once there was one
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if stall_s:
            threading.Thread(target=self._watch_stall, args=(stall_s,), daemon=True).start()

    def _watch_stall(self, stall_s):
        """Kill a guest whose console stays silent for @stall_s s after its heartbeat began:
        it writes a line every HEARTBEAT_S s from a timer, so it no longer runs at all."""
        while not self.ended.wait(1):
            alive = self._alive
            if alive and time.monotonic() - self._last_t >= stall_s:
                self.kill(f"{STOPPED_PREFIX}: its console silent for {stall_s} s though it "
                          f"writes a line every {HEARTBEAT_S} s (last: {alive})")
                return

    def _read(self):
        try:
            for line in self.proc.stdout:
                line = line.rstrip("\r\n")
                self._last_t = time.monotonic()
                if line.startswith(HEARTBEAT_PREFIX):
                    self._alive = line
                if self._file:
                    self._file.write(line + "\n")
                    self._file.flush()
                if self.echo:
                    self.echo(line)
                if self.verdict is None and VERDICT.match(line):
                    self.verdict = line[len("guest-run.sh: "):]
                if self.verdict is not None:
                    self.after.append(line)
                    continue
                self.lines.append(line)
                if self.on_line:
                    try:
                        self.on_line(line)
                    except Exception as e:  # noqa: BLE001 (a harness error must not hang the guest)
                        traceback.print_exc()
                        self.on_line = None
                        self.killed = f"the harness failed on a console line: {e!r}"
                        try:
                            os.killpg(self.pid, signal.SIGTERM)  # guest-run.sh kills the guest
                        except OSError:
                            pass
        finally:
            self.status = self.proc.wait()
            if self._file:
                self._file.close()
            self.ended.set()

    def wait(self, timeout=None):
        """Wait for guest-run.sh to exit; its status, or None if @timeout seconds passed."""
        if not self.ended.wait(timeout):
            return None
        self._reader.join()
        return self.status

    @property
    def dead(self):
        """True once the guest is gone without having ended by itself with a result: died,
        timed out, no SKIFF-RESULT, or killed (by this harness or a signal)."""
        return self.ended.is_set() and (self.status in DEAD_STATUSES or self.status < 0
                                        or self.killed is not None)

    def wait_until(self, event, timeout):
        """Wait for @event (a threading.Event) or the end of the guest, whichever comes first,
        at most @timeout seconds. True if @event is set."""
        step = 0.05
        left = timeout
        while left > 0 and not event.is_set() and not self.ended.is_set():
            event.wait(min(step, left))
            left -= step
            step = min(step * 2, 0.5)
        return event.is_set()

    def kill(self, why="killed by the harness"):
        """End guest-run.sh and its guest now: SIGTERM (guest-run.sh kills the guest's
        process group), then SIGKILL to the whole session after 5 s."""
        if self.ended.is_set():
            return
        self.killed = why
        for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.pid, sig)
            except OSError:
                pass
            if self.ended.wait(grace):
                break
        self._reader.join(5)

    def reason(self):
        """Why the guest ended, in one line."""
        if self.killed and not self.verdict:
            return self.killed
        if self.verdict:
            return self.verdict
        if not self.ended.is_set():
            return "still running"
        return f"guest-run.sh exit status {self.status}"

    def tail(self, n=20):
        return self.lines[-n:]

    def failure_text(self, n=20):
        """The reason and the last @n console lines, for a failure message."""
        return "\n".join([f"guest: {self.reason()}", f"--- guest console (last {n} lines) ---"]
                         + self.tail(n) + ["--- end of guest console ---"])


def serve_scripts(srv, done, next_script):
    """init.sh's control mode (skiff.ctl=PORT) from the host side: @srv listens (with a
    timeout) on <uds>_<PORT>; each time the guest fetches, send it next_script(n), n the
    number served before (0 first), and close: one step per fetch, and the guest's fetch of
    step n + 1 says its step n ended. An empty script ends the guest's loop. Returns, and
    closes @srv, once the event @done is set."""
    n = 0
    while not done.is_set():
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        script = next_script(n)
        n += 1
        try:
            conn.sendall(script.encode())
        except OSError:
            pass  # the guest gave up on this fetch: its console says so
        conn.close()
    srv.close()


STEP_LINE = re.compile(r"SKIFF-STEP (\d+)$")
RESULT_LINE = re.compile(r"SKIFF-RESULT step=\d+ rc=(\S+)")


def control_marker(line):
    """init.sh's control-mode console lines, for harnesses that attribute guest output to
    the step it belongs to (the console lags behind the control socket: the guest may
    already have fetched the next step): ("step", n) for "SKIFF-STEP n" (before step n),
    ("rc", rc) for a step's "SKIFF-RESULT step=n rc=RC", else None."""
    m = STEP_LINE.match(line)
    if m:
        return "step", int(m.group(1))
    m = RESULT_LINE.match(line)
    return ("rc", m.group(1)) if m else None


def wait_any(guests, timeout):
    """Wait until one of @guests (GuestRun) has ended, at most @timeout seconds; return the
    first one found ended, or None."""
    any_ended = threading.Event()
    for g in guests:
        if g.ended.is_set():
            return g
    waiters = [threading.Thread(target=lambda g=g: g.ended.wait(timeout) and any_ended.set(), daemon=True)
               for g in guests]
    for t in waiters:
        t.start()
    any_ended.wait(timeout)
    return next((g for g in guests if g.ended.is_set()), None)


def finish_peer(proc, guest, timeout, dead_timeout=0.5):
    """Collect a host peer's output (subprocess.Popen with stdout=PIPE): wait up to @timeout
    seconds, or only @dead_timeout when @guest is dead (what the peer waits for will not
    come), then kill it. Returns its output."""
    limit = dead_timeout if guest is not None and guest.dead else timeout
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def main(argv):
    if len(argv) >= 4 and argv[1] == "gate" and argv[3] == "--":
        kind, cmd = argv[2], argv[4:]
        try:
            why = skip_reason(kind)
        except ValueError as e:
            print(f"guest_watch: error: {e}", flush=True)
            return 2
        if why:
            print(f"skipped ({why})", flush=True)
            return 77
        if not cmd:
            print("guest_watch: gate: no command", flush=True)
            return 2
        os.execvp(cmd[0], cmd)
    print(__doc__.split("Command line")[1].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
