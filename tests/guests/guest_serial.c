// SPDX-License-Identifier: MIT
/*
 * Tiny guest 4: port I/O at CPL3 (IOPL 3). Drives the COM1 8250: scratch
 * register, divisor latch, loopback (a byte written to THR comes back in
 * RBR with DR set), then prints a line through THR and ends through the
 * debug-exit port with "code=N".
 * Exit codes other than N: 10 scratch, 11 divisor latch, 12 loopback data,
 * 13 LSR.DR, 14 THRE, 15 IIR.
 */
#include "guest.h"

#define COM1 0x3f8

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ __volatile__("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ __volatile__("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
	__asm__ __volatile__("outl %0, %1" : : "a"(v), "Nd"(port));
}

int guest_main(const char *cmdline, uint64_t mem_size);

int guest_main(const char *cmdline, uint64_t mem_size)
{
	static const char msg[] = "serial: hello from CPL3\n";
	uint32_t code = (uint32_t)cmdline_get(cmdline, "code", 0);
	unsigned int i;

	(void)mem_size;
	outb(COM1 + 7, 0xa5);
	if (inb(COM1 + 7) != 0xa5)
		return 10;
	outb(COM1 + 3, 0x80); /* DLAB */
	outb(COM1 + 0, 0x01); /* 115200 baud */
	outb(COM1 + 1, 0x00);
	if (inb(COM1 + 0) != 0x01)
		return 11;
	outb(COM1 + 3, 0x03); /* 8N1, DLAB off */
	if (inb(COM1 + 2) != 0x01) /* no interrupt pending, FIFO off */
		return 15;
	outb(COM1 + 4, 0x10); /* loopback */
	outb(COM1 + 0, 'Z');
	if (!(inb(COM1 + 5) & 0x01))
		return 13;
	if (inb(COM1 + 0) != 'Z')
		return 12;
	if (inb(COM1 + 5) & 0x01)
		return 13;
	outb(COM1 + 4, 0x03); /* DTR, RTS, no loopback */
	for (i = 0; msg[i]; i++) {
		if (!(inb(COM1 + 5) & 0x20))
			return 14;
		outb(COM1, (uint8_t)msg[i]);
	}
	outl(SKIFF_DEBUG_EXIT_PORT, code);
	return 99; /* not reached */
}
