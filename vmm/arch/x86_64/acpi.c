// SPDX-License-Identifier: MIT
/*
 * ACPI tables for x86-64 guests, built byte by byte at the offsets of the
 * ACPI 6.0 specification (chapter 5.2): RSDP -> XSDT -> {FADT, MADT},
 * FADT -> {FACS, DSDT}. The FADT describes a PM1a event block, a PM1a
 * control block and a reset register on I/O ports that acpi_pm.c serves;
 * the DSDT holds the \_S5 (soft-off) package and one LNRO0005 device per
 * virtio-mmio device (build_dsdt()). The platform is not
 * "hardware-reduced": with that FADT flag Linux x86 drops the legacy PIC and
 * with it the fixed ISA IRQ numbers that the UART (IRQ 4) and the
 * command-line virtio-mmio device (IRQ 5) use (arch/x86/kernel/acpi/boot.c,
 * acpi_generic_reduced_hw_init()).
 */
#include <errno.h>
#include <string.h>

#include "acpi.h"
#include "aml.h"
#include "le_bytes.h"

#define HDR_LEN 36 /* System Description Table Header, ACPI 6.0 table 5-29 */
#define RSDP_LEN 36
#define XSDT_ENTRIES 2
#define FADT_LEN 276 /* revision 6 (ACPI 6.0, table 5-34) */
#define FACS_LEN 64
#define MADT_FIXED_LEN 44
#define LAPIC_GPA 0xfee00000u
#define IOAPIC_GPA 0xfec00000u

/* FADT flags (table 5-35). */
#define FADT_F_WBINVD (1u << 0)
#define FADT_F_PROC_C1 (1u << 2)
#define FADT_F_PWR_BUTTON (1u << 4) /* no fixed-feature power button */
#define FADT_F_SLP_BUTTON (1u << 5) /* no fixed-feature sleep button */
#define FADT_F_RESET_REG_SUP (1u << 10)
/* IA-PC boot architecture flags (table 5-36). */
#define IAPC_LEGACY_DEVICES (1u << 0) /* COM1 sits on the ISA bus */
#define IAPC_VGA_NOT_PRESENT (1u << 2)
#define IAPC_MSI_NOT_SUPPORTED (1u << 3)
#define IAPC_CMOS_RTC_NOT_PRESENT (1u << 5)

/* Generic Address Structure (table 5-25) address space ids. */
#define GAS_SYSTEM_IO 1
#define GAS_ACCESS_BYTE 1
#define GAS_ACCESS_WORD 2

/* MADT structure types (table 5-45). */
#define MADT_LAPIC 0
#define MADT_IOAPIC 1
#define MADT_INT_OVERRIDE 2
#define MADT_LAPIC_NMI 4
#define MADT_PCAT_COMPAT 1u

/* The byte that makes @len bytes (that byte counted as 0) sum to 0 mod 256. */
static uint8_t acpi_checksum(const uint8_t *p, size_t len)
{
	uint8_t sum = 0;

	while (len--)
		sum = (uint8_t)(sum + *p++);
	return (uint8_t)-sum;
}

/* Header fields; the checksum (offset 9) is set by seal() once the body is in. */
static void header(uint8_t *t, const char sig[4], uint32_t len, uint8_t rev, const char id[8])
{
	memcpy(t, sig, 4);
	le_put32(t + 4, len);
	t[8] = rev;
	memcpy(t + 10, "SKIFF ", 6); /* OEMID */
	memcpy(t + 16, id, 8); /* OEM table id */
	le_put32(t + 24, 1); /* OEM revision */
	memcpy(t + 28, "SKIF", 4); /* creator id */
	le_put32(t + 32, 1); /* creator revision */
}

static void seal(uint8_t *t)
{
	uint32_t len =
		(uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;

	t[9] = 0;
	t[9] = acpi_checksum(t, len);
}

/* A Generic Address Structure for a block of @bits bits at I/O port @port. */
static void gas_io(uint8_t *p, uint8_t bits, uint8_t access, uint16_t port)
{
	p[0] = GAS_SYSTEM_IO;
	p[1] = bits;
	p[2] = 0; /* bit offset */
	p[3] = access;
	le_put64(p + 4, port);
}

static void build_fadt(uint8_t *t, uint32_t facs, uint32_t dsdt)
{
	header(t, "FACP", FADT_LEN, 6, "SKIFFACP");
	le_put32(t + 36, facs); /* FIRMWARE_CTRL */
	le_put32(t + 40, dsdt); /* DSDT */
	t[45] = 0; /* preferred PM profile: unspecified */
	le_put16(t + 46, ACPI_SCI_IRQ); /* SCI_INT: never raised, but Linux wants one */
	le_put32(t + 48, 0); /* SMI_CMD 0: always in ACPI mode, no SMM handshake */
	le_put32(t + 56, ACPI_PM1A_EVT_PORT); /* PM1a_EVT_BLK */
	le_put32(t + 64, ACPI_PM1A_CNT_PORT); /* PM1a_CNT_BLK */
	t[88] = ACPI_PM1_EVT_LEN;
	t[89] = ACPI_PM1_CNT_LEN;
	/* PM timer, PM2 and GPE blocks: absent (address and length 0). */
	le_put16(t + 96, 101); /* P_LVL2_LAT > 100: no C2 */
	le_put16(t + 98, 1001); /* P_LVL3_LAT > 1000: no C3 */
	le_put16(t + 109, IAPC_LEGACY_DEVICES | IAPC_VGA_NOT_PRESENT | IAPC_MSI_NOT_SUPPORTED |
				  IAPC_CMOS_RTC_NOT_PRESENT);
	le_put32(t + 112, FADT_F_WBINVD | FADT_F_PROC_C1 | FADT_F_PWR_BUTTON | FADT_F_SLP_BUTTON |
				  FADT_F_RESET_REG_SUP);
	gas_io(t + 116, 8, GAS_ACCESS_BYTE, ACPI_RESET_PORT); /* RESET_REG */
	t[128] = ACPI_RESET_VALUE;
	t[131] = 0; /* FADT minor version: ACPI 6.0 */
	le_put64(t + 132, facs); /* X_FIRMWARE_CTRL */
	le_put64(t + 140, dsdt); /* X_DSDT */
	gas_io(t + 148, 8 * ACPI_PM1_EVT_LEN, GAS_ACCESS_WORD, ACPI_PM1A_EVT_PORT);
	gas_io(t + 172, 8 * ACPI_PM1_CNT_LEN, GAS_ACCESS_WORD, ACPI_PM1A_CNT_PORT);
	/* SLEEP_CONTROL_REG / SLEEP_STATUS_REG (244, 256): hardware-reduced only, 0. */
	memcpy(t + 268, "SKIFFVMM", 8); /* hypervisor vendor identity */
	seal(t);
}

static void build_facs(uint8_t *t)
{
	memcpy(t, "FACS", 4);
	le_put32(t + 4, FACS_LEN);
	t[32] = 2; /* version; no checksum, no waking vector, no global lock owner */
}

/*
 * The DSDT's AML (ACPI 6.0 chapter 20, encoded by aml.c):
 *
 *   Name (_S5, Package (2) { 5, 5 })
 *   Scope (\_SB) {
 *     Device (VR00) {             one per virtio-mmio device
 *       Name (_HID, "LNRO0005")
 *       Name (_UID, 0)
 *       Name (_CRS, ResourceTemplate () {
 *         Memory32Fixed (ReadWrite, base, size)
 *         Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive) { gsi }
 *       })
 *     }
 *   }
 *
 * \_S5 gives the SLP_TYPa and SLP_TYPb values the OS writes to
 * PM1a_CNT.SLP_TYP (and PM1b, absent) for soft-off. LNRO0005 is the ACPI id
 * Linux's virtio_mmio driver matches (drivers/virtio/virtio_mmio.c,
 * virtio_mmio_acpi_match), as QEMU's microvm describes its devices. The
 * interrupt is edge-triggered, active high: skiff raises it through an
 * irqfd without a resample fd, which KVM delivers as a pulse (1 then 0) on
 * that GSI, and an ISA IRQ (0-15) without a MADT override is edge/high
 * anyway. Writes the table at @t; returns its length, or 0 when it does not
 * fit in @cap bytes.
 */
static size_t build_dsdt(uint8_t *t, size_t cap, const struct x86_acpi_virtio_mmio *mmio,
			 unsigned int nr_mmio)
{
	struct aml a;
	aml_mark pkg, sb, dev, crs;
	unsigned int i;
	size_t len;

	if (cap < HDR_LEN)
		return 0;
	aml_init(&a, t + HDR_LEN, cap - HDR_LEN);
	aml_name(&a, "_S5");
	pkg = aml_open_package(&a, 2);
	aml_integer(&a, ACPI_S5_SLP_TYP); /* SLP_TYPa */
	aml_integer(&a, ACPI_S5_SLP_TYP); /* SLP_TYPb */
	aml_close(&a, pkg);
	if (nr_mmio) {
		sb = aml_open_scope(&a, "\\_SB");
		for (i = 0; i < nr_mmio; i++) {
			char seg[5] = { 'V', 'R', (char)('0' + i / 10), (char)('0' + i % 10), 0 };

			dev = aml_open_device(&a, seg);
			aml_name(&a, "_HID");
			aml_string(&a, "LNRO0005");
			aml_name(&a, "_UID");
			aml_integer(&a, i);
			aml_name(&a, "_CRS");
			crs = aml_open_resources(&a);
			aml_memory32_fixed(&a, (uint32_t)mmio[i].base, mmio[i].size);
			aml_interrupt(&a, mmio[i].gsi, false, false);
			aml_close(&a, crs);
			aml_close(&a, dev);
		}
		aml_close(&a, sb);
	}
	if (aml_finish(&a, &len))
		return 0;
	header(t, "DSDT", (uint32_t)(HDR_LEN + len), 2 /* 64-bit AML integers */, "SKIFFDSD");
	seal(t);
	return HDR_LEN + len;
}

/* Interrupt Source Override (table 5-50): ISA @irq arrives on @gsi. */
static uint8_t *madt_override(uint8_t *p, uint8_t irq, uint32_t gsi, uint16_t flags)
{
	p[0] = MADT_INT_OVERRIDE;
	p[1] = 10;
	p[2] = 0; /* bus: ISA */
	p[3] = irq;
	le_put32(p + 4, gsi);
	le_put16(p + 8, flags);
	return p + 10;
}

static size_t madt_len(unsigned int ncpus)
{
	return MADT_FIXED_LEN + 8u * ncpus + 12 + 2 * 10 + 6;
}

/*
 * One local APIC per vCPU (processor UID = APIC id = vCPU index, as in the
 * MP table and CPUID), the IOAPIC with GSIs 0-23, ISA IRQ 0 on GSI 2 (the
 * PIT; skiff's GSI routing puts it on IOAPIC pin 2), the SCI as
 * level/active-high, LINT1 = NMI on every CPU.
 */
static void build_madt(uint8_t *t, unsigned int ncpus)
{
	uint8_t *p = t + MADT_FIXED_LEN;
	unsigned int i;

	header(t, "APIC", (uint32_t)madt_len(ncpus), 4, "SKIFFAPC");
	le_put32(t + 36, LAPIC_GPA);
	le_put32(t + 40, MADT_PCAT_COMPAT); /* dual 8259 present (KVM's in-kernel PIC) */
	for (i = 0; i < ncpus; i++, p += 8) {
		p[0] = MADT_LAPIC;
		p[1] = 8;
		p[2] = (uint8_t)i; /* ACPI processor UID */
		p[3] = (uint8_t)i; /* APIC id */
		le_put32(p + 4, 1); /* enabled */
	}
	p[0] = MADT_IOAPIC;
	p[1] = 12;
	p[2] = (uint8_t)ncpus; /* IOAPIC id: after the CPUs, as in the MP table */
	p[3] = 0;
	le_put32(p + 4, IOAPIC_GPA);
	le_put32(p + 8, 0); /* GSI base */
	p += 12;
	p = madt_override(p, 0, 2, 0); /* flags 0: conforms to the ISA bus */
	p = madt_override(p, ACPI_SCI_IRQ, ACPI_SCI_IRQ, 0x000d); /* active high, level */
	p[0] = MADT_LAPIC_NMI;
	p[1] = 6;
	p[2] = 0xff; /* all processors */
	le_put16(p + 3, 0); /* flags: conform */
	p[5] = 1; /* LINT1 */
	seal(t);
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static bool mmio_valid(const struct x86_acpi_virtio_mmio *mmio, unsigned int nr_mmio)
{
	unsigned int i;

	if (nr_mmio > X86_ACPI_MAX_VIRTIO_MMIO)
		return false;
	for (i = 0; i < nr_mmio; i++)
		if (!mmio[i].size || mmio[i].base > UINT32_MAX ||
		    mmio[i].size - 1 > UINT32_MAX - mmio[i].base)
			return false;
	return true;
}

int x86_acpi_build(uint8_t *buf, size_t len, uint64_t gpa, unsigned int ncpus,
		   const struct x86_acpi_virtio_mmio *mmio, unsigned int nr_mmio, size_t *used)
{
	size_t xsdt = align_up(RSDP_LEN, 16);
	size_t fadt = align_up(xsdt + HDR_LEN + 8 * XSDT_ENTRIES, 16);
	size_t facs = align_up(fadt + FADT_LEN, 64); /* the FACS must be 64-byte aligned */
	size_t dsdt = facs + FACS_LEN;
	size_t dsdt_len, madt, end;
	uint8_t *x;

	if (!ncpus || ncpus > 254 || (gpa & 15) || gpa >= (1ull << 32) ||
	    !mmio_valid(mmio, nr_mmio))
		return -EINVAL;
	if (gpa + len > (1ull << 32))
		len = (size_t)((1ull << 32) - gpa); /* the tables stay below 4 GiB */
	if (dsdt > len)
		return -ENOSPC;
	memset(buf, 0, dsdt);
	dsdt_len = build_dsdt(buf + dsdt, len - dsdt, mmio, nr_mmio);
	if (!dsdt_len)
		return -ENOSPC;
	madt = align_up(dsdt + dsdt_len, 16);
	end = madt + madt_len(ncpus);
	if (end > len)
		return -ENOSPC;
	memset(buf + dsdt + dsdt_len, 0, end - dsdt - dsdt_len);

	build_fadt(buf + fadt, (uint32_t)(gpa + facs), (uint32_t)(gpa + dsdt));
	build_facs(buf + facs);
	build_madt(buf + madt, ncpus);

	x = buf + xsdt;
	header(x, "XSDT", HDR_LEN + 8 * XSDT_ENTRIES, 1, "SKIFFXSD");
	le_put64(x + HDR_LEN, gpa + fadt);
	le_put64(x + HDR_LEN + 8, gpa + madt);
	seal(x);

	/* RSDP (table 5-27): the first 20 bytes have their own checksum. */
	memcpy(buf, "RSD PTR ", 8);
	memcpy(buf + 9, "SKIFF ", 6);
	buf[15] = 2; /* revision: ACPI 2.0+ layout, XSDT used */
	le_put32(buf + 16, 0); /* no RSDT */
	le_put32(buf + 20, RSDP_LEN);
	le_put64(buf + 24, gpa + xsdt);
	buf[8] = acpi_checksum(buf, 20);
	buf[32] = acpi_checksum(buf, RSDP_LEN);
	*used = end;
	return 0;
}

int x86_write_acpi(const struct guest_mem *mem, unsigned int ncpus,
		   const struct x86_acpi_virtio_mmio *mmio, unsigned int nr_mmio, uint64_t *rsdp)
{
	uint8_t *p = guest_mem_ptr(mem, ACPI_TABLES_GPA, ACPI_TABLES_MAX);
	size_t used;
	int err;

	if (!p)
		return -EFAULT;
	err = x86_acpi_build(p, ACPI_TABLES_MAX, ACPI_TABLES_GPA, ncpus, mmio, nr_mmio, &used);
	if (err)
		return err;
	*rsdp = ACPI_TABLES_GPA;
	return 0;
}
