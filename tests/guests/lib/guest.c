// SPDX-License-Identifier: MIT
/* Freestanding runtime for tiny guests (see guest.h). */
#include "guest.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	void *ret = dst;

	__asm__ __volatile__("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
	return ret;
}

void *memset(void *dst, int c, size_t n)
{
	void *ret = dst;

	__asm__ __volatile__("rep stosb" : "+D"(dst), "+c"(n) : "a"(c) : "memory");
	return ret;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

void guest_putc(char c)
{
	mmio_write32(SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_PUTC, (uint8_t)c);
}

void guest_puts(const char *s)
{
	while (*s)
		guest_putc(*s++);
}

void guest_putu(uint64_t v)
{
	char buf[21];
	int i = 20;

	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	guest_puts(buf + i);
}

void guest_report(unsigned int slot, uint64_t value)
{
	mmio_write32(SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_REPORT_KEY, slot);
	mmio_write64(SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_REPORT_VAL, value);
}

void guest_exit(uint32_t code)
{
	for (;;)
		mmio_write32(SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_EXIT, code);
}

void guest_panic(const char *why)
{
	guest_puts("guest panic: ");
	guest_puts(why);
	guest_putc('\n');
	for (;;)
		mmio_write32(SKIFF_DEBUG_MMIO_GPA + SKIFF_DEBUG_PANIC, 1);
}

uint64_t cmdline_get(const char *s, const char *key, uint64_t def)
{
	size_t klen = strlen(key);

	while (*s) {
		while (*s == ' ')
			s++;
		if (!memcmp(s, key, klen) && s[klen] == '=') {
			uint64_t v = 0;

			s += klen + 1;
			while (*s >= '0' && *s <= '9')
				v = v * 10 + (uint64_t)(*s++ - '0');
			return v;
		}
		while (*s && *s != ' ')
			s++;
	}
	return def;
}
