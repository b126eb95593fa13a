// SPDX-License-Identifier: MIT
/*
 * Tiny guest 1: prints a line on the console through the debug device,
 * stores a value computed in guest memory in report slot 0, and exits with
 * the code given as "code=N" on the command line (default 0).
 *   report 0: sum of i*i for i < n ("n=N", default 1000), computed here
 * "spin=1" loops forever after the report (for stop tests), "fault=1" ends in
 * a triple fault (no IDT), "emufail=1" reads MMIO with popcnt, an instruction
 * KVM's emulator does not know.
 */
#include "guest.h"

static uint64_t table[4096];

int guest_main(const char *cmdline, uint64_t mem_size);

int guest_main(const char *cmdline, uint64_t mem_size)
{
	uint64_t n = cmdline_get(cmdline, "n", 1000), sum = 0, i;

	guest_puts("tiny guest: hello, mem=");
	guest_putu(mem_size >> 20);
	guest_puts("M\n");
	if (n > 4096)
		n = 4096;
	for (i = 0; i < n; i++)
		table[i] = i * i;
	for (i = 0; i < n; i++)
		sum += table[i];
	guest_report(0, sum);
	if (cmdline_get(cmdline, "spin", 0)) /* until the host stops the VM */
		for (;;)
			barrier();
	if (cmdline_get(cmdline, "emufail", 0)) {
		/* popcnt with an MMIO operand: KVM must emulate it and cannot. */
		uint64_t v;

		__asm__ __volatile__("popcnt %1, %0"
				     : "=r"(v)
				     : "m"(*(volatile uint64_t *)(SKIFF_DEBUG_MMIO_GPA + 0x100)));
		guest_report(1, v);
	}
	if (cmdline_get(cmdline, "fault", 0))
		*(volatile uint64_t *)0xfffffff000000000ull =
			1; /* non-canonical: #GP, triple fault */
	return (int)cmdline_get(cmdline, "code", 0);
}
