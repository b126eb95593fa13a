/* SPDX-License-Identifier: MIT */
/*
 * Tiny guest entry: skiff enters here at CPL3 with rdi = command line,
 * rsi = RAM size, rsp = top of RAM. guest_main's return value is the exit
 * code, written to the debug device (skiff/tiny_guest_abi.h).
 */
	.section .text.start, "ax"
	.globl _start
_start:
	andq	$-16, %rsp
	xorl	%ebp, %ebp
	call	guest_main
	movl	%eax, 0xd0010000	/* SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_EXIT */
1:	jmp	1b
	.section .note.GNU-stack, "", @progbits
