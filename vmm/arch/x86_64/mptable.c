// SPDX-License-Identifier: MIT
/*
 * MP tables (Intel MultiProcessor Specification 1.4, chapter 4) so that an
 * SMP Linux guest without ACPI finds its CPUs, the IOAPIC and the ISA IRQ
 * routing. Floating pointer and configuration table sit in the BIOS area at
 * 0xf0000, which Linux scans and which the e820 map reserves.
 */
#include <errno.h>
#include <string.h>

#include "x86.h"

#define MP_GPA 0xf0000ull
#define MP_TABLE_GPA (MP_GPA + 16)
#define LAPIC_GPA 0xfee00000u
#define IOAPIC_GPA 0xfec00000u
#define MP_ISA_IRQS 16
#define MP_ISA_ENTRIES (MP_ISA_IRQS - 1) /* IRQ 2 has no pin of its own */

enum { MP_PROC = 0, MP_BUS = 1, MP_IOAPIC = 2, MP_IOINT = 3, MP_LINT = 4 };

static uint8_t checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	while (len--)
		sum = (uint8_t)(sum + *p++);
	return (uint8_t)-sum;
}

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *p, uint32_t v)
{
	le16(p, (uint16_t)v);
	le16(p + 2, (uint16_t)(v >> 16));
}

/* An 8-byte I/O or local interrupt assignment entry. */
static uint8_t *irq_entry(uint8_t *p, uint8_t type, uint8_t irqtype, uint8_t bus_irq,
			  uint8_t dst_id, uint8_t dst_pin)
{
	p[0] = type;
	p[1] = irqtype;
	le16(p + 2, 0); /* polarity and trigger mode conform to the bus */
	p[4] = 0; /* source bus: ISA, id 0 */
	p[5] = bus_irq;
	p[6] = dst_id;
	p[7] = dst_pin;
	return p + 8;
}

int x86_write_mptable(const struct guest_mem *mem, unsigned int ncpus)
{
	size_t size = 44 + 20 * (size_t)ncpus + 8 + 8 + 8 * (MP_ISA_ENTRIES + 2);
	uint8_t *fp, *tbl, *p;
	uint8_t ioapic_id = (uint8_t)ncpus;
	unsigned int i;

	if (!ncpus || ncpus > 254)
		return -EINVAL;
	fp = guest_mem_ptr(mem, MP_GPA, 16);
	tbl = guest_mem_ptr(mem, MP_TABLE_GPA, size);
	if (!fp || !tbl || MP_TABLE_GPA + size > 0x100000)
		return -EFAULT;

	memset(tbl, 0, size);
	memcpy(tbl, "PCMP", 4);
	le16(tbl + 4, (uint16_t)size);
	tbl[6] = 4; /* spec revision 1.4 */
	memcpy(tbl + 8, "SKIFF   ", 8);
	memcpy(tbl + 16, "MICROVM     ", 12);
	le16(tbl + 34, (uint16_t)(ncpus + 2 + MP_ISA_ENTRIES + 2));
	le32(tbl + 36, LAPIC_GPA);

	p = tbl + 44;
	for (i = 0; i < ncpus; i++, p += 20) {
		p[0] = MP_PROC;
		p[1] = (uint8_t)i; /* local APIC id = vCPU index (CPUID leaf 1 agrees) */
		p[2] = 0x14; /* local APIC version */
		p[3] = 0x01 | (i == 0 ? 0x02 : 0); /* enabled; bootstrap processor */
		le32(p + 4, 0x600); /* family 6 */
		le32(p + 8, 0x201); /* FPU, APIC */
	}
	p[0] = MP_BUS;
	p[1] = 0;
	memcpy(p + 2, "ISA   ", 6);
	p += 8;
	p[0] = MP_IOAPIC;
	p[1] = ioapic_id;
	p[2] = 0x11; /* IOAPIC version */
	p[3] = 0x01; /* enabled */
	le32(p + 4, IOAPIC_GPA);
	p += 8;
	/*
	 * ISA IRQ i on pin i, except the PIT (IRQ 0) on pin 2 and no entry for
	 * the cascade IRQ 2: see x86.c set_gsi_routing().
	 */
	for (i = 0; i < MP_ISA_IRQS; i++) {
		if (i != 2)
			p = irq_entry(p, MP_IOINT, 0 /* INT */, (uint8_t)i, ioapic_id,
				      (uint8_t)(i ? i : 2));
	}
	p = irq_entry(p, MP_LINT, 3 /* ExtINT */, 0, 0xff, 0);
	irq_entry(p, MP_LINT, 1 /* NMI */, 0, 0xff, 1);
	tbl[7] = checksum(tbl, size);

	memset(fp, 0, 16);
	memcpy(fp, "_MP_", 4);
	le32(fp + 4, (uint32_t)MP_TABLE_GPA);
	fp[8] = 1; /* length in 16-byte units */
	fp[9] = 4;
	fp[10] = checksum(fp, 16);
	return 0;
}
