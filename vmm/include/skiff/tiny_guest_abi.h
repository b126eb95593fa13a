/* SPDX-License-Identifier: MIT */
/*
 * The contract between skiff and its tiny test guests (tests/guests/).
 *
 * A tiny guest is a static x86-64 ELF that skiff enters in 64-bit mode at
 * CPL3: the low 4 GiB are identity-mapped with 2 MiB pages that have the user
 * bit, CS/SS are flat DPL3 segments, interrupts are off. Registers on entry:
 *   rdi  guest-physical (= virtual) address of the NUL-terminated command
 *        line (the --cmdline string), at SKIFF_TINY_CMDLINE_GPA;
 *   rsi  guest memory size in bytes;
 *   rsp  top of guest memory (16-byte aligned).
 * The guest owns all memory between its ELF image and rsp.
 *
 * CPL3 code cannot use hlt, so the guest talks to the VMM through MMIO: loads
 * and stores outside guest memory become KVM_EXIT_MMIO. RFLAGS.IOPL is 3, so
 * in/out work too (KVM_EXIT_IO: the COM1 UART, the debug-exit port).
 *
 * Memory map (guest-physical):
 *   SKIFF_TINY_GDT_GPA        GDT (flat DPL0 and DPL3 segments)
 *   SKIFF_TINY_CMDLINE_GPA    command line, at most SKIFF_TINY_CMDLINE_MAX bytes
 *   SKIFF_TINY_PGTABLE_GPA    PML4, PDPT, 4 page directories (6 pages)
 *   0x400000 ...              the ELF image (PT_LOAD segments at p_paddr)
 *   SKIFF_VIRTIO_MMIO_GPA     virtio-mmio vsock device (4 KiB), IRQ 5
 *   SKIFF_DEBUG_MMIO_GPA      the debug device below (4 KiB)
 */
#ifndef SKIFF_TINY_GUEST_ABI_H
#define SKIFF_TINY_GUEST_ABI_H

#define SKIFF_TINY_GDT_GPA 0x1000ull
#define SKIFF_TINY_CMDLINE_GPA 0x2000ull
#define SKIFF_TINY_CMDLINE_MAX 4096u
#define SKIFF_TINY_PGTABLE_GPA 0x3000ull
#define SKIFF_TINY_LOAD_MIN 0x100000ull /* PT_LOAD segments must start at or above */

/* The virtio-mmio window of the vsock device, and its IRQ (IOAPIC pin). */
#define SKIFF_VIRTIO_MMIO_GPA 0xd0000000ull
#define SKIFF_VIRTIO_MMIO_SIZE 0x1000ull
#define SKIFF_VIRTIO_MMIO_IRQ 5

/*
 * Debug device: 32-bit registers (64-bit for REPORT_VAL). Writes of other
 * widths are ignored; reads return 0 except where noted.
 *   EXIT        write: stop the VM; the exit code is the value (0..63 are
 *               passed through as the process exit code of `skiff run`).
 *   PUTC        write: the low byte goes to the console.
 *   PANIC       write: stop the VM with the "guest panic" exit reason.
 *   REPORT_KEY  write: select report slot 0..SKIFF_DEBUG_REPORT_SLOTS-1.
 *   REPORT_VAL  write (8 bytes): store a value in the selected slot; the
 *               host reads it with skiff_vm_get_report().
 */
#define SKIFF_DEBUG_MMIO_GPA 0xd0010000ull
#define SKIFF_DEBUG_MMIO_SIZE 0x1000ull
#define SKIFF_DEBUG_EXIT 0x00
#define SKIFF_DEBUG_PUTC 0x04
#define SKIFF_DEBUG_PANIC 0x08
#define SKIFF_DEBUG_REPORT_KEY 0x10
#define SKIFF_DEBUG_REPORT_VAL 0x18
#define SKIFF_DEBUG_REPORT_SLOTS 16

/*
 * Debug-exit I/O port for CPL0 guests (Linux test code): a 1-, 2- or 4-byte
 * out of value V stops the VM with guest exit code V.
 */
#define SKIFF_DEBUG_EXIT_PORT 0x501

#endif /* SKIFF_TINY_GUEST_ABI_H */
