#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hold one idle KVM VM open for the whole life of the emulated host (scripts/test-host.sh).

Why: the host kernel flips static keys when the first KVM VM is created and when the last
one goes away (preempt_notifier_key, whose branches sit in __schedule(), and the LAPIC's
apic_sw_disabled), and a static key flip rewrites kernel text live with int3 patching
(text_poke_bp()). Under QEMU's multi-threaded TCG that rewrite of code every vCPU is running
can hang the emulated host: seen on 2026-12-02, once in ~20 VM lifecycles, both vCPUs
looping through __schedule+0x2ab and exc_int3 with interrupts off, the host silent for
good (test-host.sh's stall report). With this VM alive (one vCPU whose LAPIC is never
software-enabled), the keys' counts never fall back to zero, so skiff's VMs starting and
ending patch no kernel text.

Usage: test-host-keeper.py READY_FILE   (writes READY_FILE once the VM exists, then sleeps
until killed). Exit 1 with a message if /dev/kvm cannot give it a VM.
"""
import fcntl
import os
import sys
import time

KVM_CREATE_VM = 0xAE01
KVM_CREATE_VCPU = 0xAE41
KVM_CREATE_IRQCHIP = 0xAE60


def main():
    try:
        kvm = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
        vm = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        fcntl.ioctl(vm, KVM_CREATE_IRQCHIP, 0)
        fcntl.ioctl(vm, KVM_CREATE_VCPU, 0)
    except OSError as e:
        print(f"test-host-keeper: cannot create the idle VM: {e}", file=sys.stderr)
        return 1
    with open(sys.argv[1], "w") as f:
        f.write(f"{os.getpid()}\n")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
