/* SPDX-License-Identifier: MIT */
/*
 * Tiny arm64 test guests for skiff, each a valid arm64 Linux Image (the
 * 64-byte header of Documentation/arm64/booting.rst), so they boot through
 * skiff's real Image loader, device tree placement and boot registers. One
 * source, three guests chosen by GUEST_CASE at assembly time:
 *
 *   1 smp-poweroff  checks that x0 points at a DTB (magic 0xd00dfeed), writes
 *                   "skiff-arm64: cpu0 hello" to the 16550 UART, starts vCPU 1
 *                   with PSCI CPU_ON (KVM answers it in the kernel), waits
 *                   for vCPU 1 to write "skiff-arm64: cpu1 hello" and set a
 *                   flag, then PSCI SYSTEM_OFF: skiff exits 0.
 *   2 reset         writes "skiff-arm64: reset" and calls PSCI SYSTEM_RESET:
 *                   skiff exits 65.
 *   3 nisv          a store pair to an address outside RAM and devices, an
 *                   access KVM cannot decode (KVM_EXIT_ARM_NISV): skiff
 *                   ends the VM as a guest error, 68.
 *
 * Any check that fails writes "skiff-arm64: FAIL <what>" and calls
 * SYSTEM_RESET, so a broken boot never looks like a clean power-off.
 * Runs with the MMU off (every data access is Device-nGnRnE, so the two
 * vCPUs see each other's stores without cache maintenance).
 */
#define UART 0x09000000
#define PSCI_CPU_ON_64 0xc4000003
#define PSCI_SYSTEM_OFF 0x84000008
#define PSCI_SYSTEM_RESET 0x84000009
#define FDT_MAGIC_LE 0xedfe0dd0 /* 0xd00dfeed stored big-endian, read little-endian */

	.text
	.globl _start
_start:
	/* Image header: code0, code1, text_offset, image_size, flags, res2-4, magic, res5 */
	b	entry
	.long	0
	.quad	0
	.quad	image_end - _start
	.quad	0
	.quad	0, 0, 0
	.ascii	"ARM\x64"
	.long	0

/* puts: x9 = NUL-terminated string; clobbers x10, x11 */
puts:
	mov	x10, #UART
1:	ldrb	w11, [x9], #1
	cbz	w11, 2f
	strb	w11, [x10]
	b	1b
2:	ret

fail:	/* x9 = what failed */
	mov	x12, x9
	adr	x9, msg_fail
	bl	puts
	mov	x9, x12
	bl	puts
	adr	x9, msg_nl
	bl	puts
	ldr	x0, =PSCI_SYSTEM_RESET
	hvc	#0
	b	.

entry:
#if GUEST_CASE == 1
	/* booting.rst: x0 = the DTB's physical address */
	ldr	w1, [x0]
	ldr	w2, =FDT_MAGIC_LE
	adr	x9, msg_dtb
	cmp	w1, w2
	b.ne	fail
	adr	x9, msg_cpu0
	bl	puts
	/* CPU_ON(target MPIDR 1, entry, context) */
	ldr	x0, =PSCI_CPU_ON_64
	mov	x1, #1
	adr	x2, secondary
	mov	x3, #0
	hvc	#0
	adr	x9, msg_cpuon
	cbnz	x0, fail
	/* wait for vCPU 1's flag, at most ~2^32 polls */
	adr	x4, flag
	mov	x5, #0x100000000
1:	ldr	w6, [x4]
	cbnz	w6, 2f
	subs	x5, x5, #1
	b.ne	1b
	adr	x9, msg_timeout
	b	fail
2:	adr	x9, msg_off
	bl	puts
	ldr	x0, =PSCI_SYSTEM_OFF
	hvc	#0
	adr	x9, msg_returned
	b	fail

secondary:
	adr	x9, msg_cpu1
	bl	puts
	adr	x4, flag
	mov	w6, #1
	str	w6, [x4]
3:	wfi
	b	3b
#elif GUEST_CASE == 2
	adr	x9, msg_reset
	bl	puts
	ldr	x0, =PSCI_SYSTEM_RESET
	hvc	#0
	b	.
#elif GUEST_CASE == 3
	adr	x9, msg_nisv
	bl	puts
	ldr	x3, =0x0b000000 /* between the virtio-mmio slots and the redistributors */
	stp	x1, x2, [x3]
	adr	x9, msg_returned
	b	fail
#else
#error "GUEST_CASE must be 1, 2 or 3"
#endif

	.ltorg
	.balign	8
flag:	.long	0
msg_fail:	.asciz	"skiff-arm64: FAIL "
msg_nl:		.asciz	"\n"
msg_dtb:	.asciz	"x0 holds no DTB"
msg_cpu0:	.asciz	"skiff-arm64: cpu0 hello\n"
msg_cpu1:	.asciz	"skiff-arm64: cpu1 hello\n"
msg_cpuon:	.asciz	"PSCI CPU_ON refused"
msg_timeout:	.asciz	"vCPU 1 never ran"
msg_off:	.asciz	"skiff-arm64: system off\n"
msg_returned:	.asciz	"the call returned"
msg_reset:	.asciz	"skiff-arm64: reset\n"
msg_nisv:	.asciz	"skiff-arm64: store pair outside RAM\n"
	.balign	8
image_end:
