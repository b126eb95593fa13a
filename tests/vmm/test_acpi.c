// SPDX-License-Identifier: MIT
/*
 * ACPI tables of arch/x86_64/acpi.c, no KVM: every checksum, length,
 * revision and pointer; the FADT's PM1a blocks and reset register; the
 * DSDT's \_S5 package; the MADT's CPUs, IOAPIC and overrides; the error
 * returns. When iasl (Debian acpica-tools) is installed, the tables are
 * also disassembled by it as an independent check (IASL_BIN from CMake).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acpi.h"
#include "mem.h"

#define BUF_LEN 0x10000u
#define GPA 0xe0000ull

static uint8_t buf[BUF_LEN];

static uint16_t g16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t g32(const uint8_t *p)
{
	return (uint32_t)g16(p) | (uint32_t)g16(p + 2) << 16;
}

static uint64_t g64(const uint8_t *p)
{
	return (uint64_t)g32(p) | (uint64_t)g32(p + 4) << 32;
}

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s = (uint8_t)(s + *p++);
	return s;
}

/* The table at guest address @gpa: checks signature, length bounds and checksum. */
static const uint8_t *table(uint64_t gpa, const char *sig, size_t used)
{
	const uint8_t *t;
	uint32_t len;

	ck_assert_uint_ge(gpa, GPA);
	ck_assert_uint_le(gpa - GPA + 36, used);
	t = buf + (gpa - GPA);
	ck_assert_mem_eq(t, sig, 4);
	len = g32(t + 4);
	ck_assert_uint_ge(len, 36);
	ck_assert_uint_le(gpa - GPA + len, used);
	ck_assert_uint_eq(sum(t, len), 0);
	ck_assert_mem_eq(t + 10, "SKIFF ", 6);
	return t;
}

/* skiff's vsock device, and a second one to see that names and _UIDs count up. */
static const struct x86_acpi_virtio_mmio mmio[] = {
	{ .base = 0xd0000000u, .size = 0x1000, .gsi = 5 },
	{ .base = 0xd0001000u, .size = 0x200, .gsi = 6 },
};

static size_t build_mmio(unsigned int ncpus, unsigned int nr_mmio)
{
	size_t used = 0;

	memset(buf, 0xaa, sizeof(buf)); /* so that every byte must be written */
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, ncpus, mmio, nr_mmio, &used), 0);
	ck_assert_uint_gt(used, 0);
	ck_assert_uint_le(used, ACPI_TABLES_MAX);
	return used;
}

static size_t build(unsigned int ncpus)
{
	return build_mmio(ncpus, 0);
}

static const uint8_t *xsdt_entry(size_t used, unsigned int i)
{
	const uint8_t *x = table(g64(buf + 24), "XSDT", used);

	return x + 36 + 8 * i;
}

START_TEST(rsdp_and_xsdt)
{
	size_t used = build(2);
	const uint8_t *x;

	ck_assert_mem_eq(buf, "RSD PTR ", 8);
	ck_assert_uint_eq(sum(buf, 20), 0);
	ck_assert_uint_eq(sum(buf, 36), 0);
	ck_assert_uint_eq(buf[15], 2);
	ck_assert_uint_eq(g32(buf + 16), 0);
	ck_assert_uint_eq(g32(buf + 20), 36);
	x = table(g64(buf + 24), "XSDT", used);
	ck_assert_uint_eq(g64(buf + 24) % 16, 0);
	ck_assert_uint_eq(x[8], 1);
	ck_assert_uint_eq(g32(x + 4), 36 + 2 * 8);
	table(g64(x + 36), "FACP", used);
	table(g64(x + 44), "APIC", used);
}
END_TEST

START_TEST(fadt_facs_dsdt)
{
	size_t used = build(1);
	const uint8_t *f = table(g64(xsdt_entry(used, 0)), "FACP", used);
	const uint8_t *facs, *d, *aml;
	uint32_t flags = g32(f + 112);

	ck_assert_uint_eq(g32(f + 4), 276);
	ck_assert_uint_eq(f[8], 6);
	ck_assert_uint_eq(f[131], 0);
	/* 32-bit and 64-bit pointers agree */
	ck_assert_uint_eq(g32(f + 36), g64(f + 132));
	ck_assert_uint_eq(g32(f + 40), g64(f + 140));
	ck_assert_uint_eq(g16(f + 46), ACPI_SCI_IRQ);
	ck_assert_uint_eq(g32(f + 48), 0); /* SMI_CMD: always in ACPI mode */
	ck_assert_uint_eq(g32(f + 56), ACPI_PM1A_EVT_PORT);
	ck_assert_uint_eq(g32(f + 64), ACPI_PM1A_CNT_PORT);
	ck_assert_uint_eq(g32(f + 76), 0); /* no PM timer */
	ck_assert_uint_eq(f[88], 4);
	ck_assert_uint_eq(f[89], 2);
	ck_assert_uint_eq(f[91], 0);
	ck_assert_uint_eq(f[92], 0);
	/* WBINVD, PROC_C1, PWR_BUTTON, SLP_BUTTON, RESET_REG_SUP; not HW_REDUCED_ACPI */
	ck_assert_uint_eq(flags, 0x1u | 0x4u | 0x10u | 0x20u | 0x400u);
	ck_assert_uint_eq(flags & (1u << 20), 0);
	/* RESET_REG: system I/O, 8 bits, byte access, the reset port */
	ck_assert_uint_eq(f[116], 1);
	ck_assert_uint_eq(f[117], 8);
	ck_assert_uint_eq(f[118], 0);
	ck_assert_uint_eq(f[119], 1);
	ck_assert_uint_eq(g64(f + 120), ACPI_RESET_PORT);
	ck_assert_uint_eq(f[128], ACPI_RESET_VALUE);
	/* X_PM1a_EVT_BLK and X_PM1a_CNT_BLK match the 32-bit blocks and lengths */
	ck_assert_uint_eq(f[148], 1);
	ck_assert_uint_eq(f[149], 32);
	ck_assert_uint_eq(g64(f + 152), ACPI_PM1A_EVT_PORT);
	ck_assert_uint_eq(f[172], 1);
	ck_assert_uint_eq(f[173], 16);
	ck_assert_uint_eq(g64(f + 176), ACPI_PM1A_CNT_PORT);
	ck_assert_uint_eq(g64(f + 208 + 4), 0); /* X_PM_TMR_BLK */
	ck_assert_uint_eq(g64(f + 244 + 4), 0); /* SLEEP_CONTROL_REG */

	/* FACS: 64-byte aligned, 64 bytes, no checksum */
	ck_assert_uint_eq(g32(f + 36) % 64, 0);
	facs = buf + (g32(f + 36) - GPA);
	ck_assert_mem_eq(facs, "FACS", 4);
	ck_assert_uint_eq(g32(facs + 4), 64);
	ck_assert_uint_eq(facs[32], 2);

	/* DSDT: Name (_S5, Package (2) { 5, 5 }) and nothing else */
	d = table(g32(f + 40), "DSDT", used);
	ck_assert_uint_eq(d[8], 2);
	ck_assert_uint_eq(g32(d + 4), 36 + 12);
	aml = d + 36;
	ck_assert_uint_eq(aml[0], 0x08);
	ck_assert_mem_eq(aml + 1, "_S5_", 4);
	ck_assert_uint_eq(aml[5], 0x12);
	ck_assert_uint_eq(aml[6], 6); /* PkgLength: up to the end of the table */
	ck_assert_uint_eq(6 + aml[6], 12);
	ck_assert_uint_eq(aml[7], 2);
	ck_assert_uint_eq(aml[8], 0x0a);
	ck_assert_uint_eq(aml[9], ACPI_S5_SLP_TYP);
	ck_assert_uint_eq(aml[10], 0x0a);
	ck_assert_uint_eq(aml[11], ACPI_S5_SLP_TYP);
}
END_TEST

/*
 * The DSDT with skiff's vsock device, against bytes worked out by hand from
 * the AML grammar (ACPI 6.0 20.2) and the resource descriptors (6.4.3.4,
 * 6.4.3.6): a 1-byte and a 2-byte PkgLength, a BufferSize, both descriptors.
 */
START_TEST(dsdt_virtio_mmio)
{
	static const uint8_t want[] = {
		0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, 0x05, 0x0a, 0x05,
		/* Scope (\_SB): PkgLength 0x43 in 2 bytes (lead 0x40 | 0x3, then 0x04) */
		0x10, 0x43, 0x04, '\\', '_', 'S', 'B', '_',
		/* Device (VR00): PkgLength 58 */
		0x5b, 0x82, 0x3a, 'V', 'R', '0', '0', 0x08, '_', 'H', 'I', 'D', 0x0d, 'L', 'N', 'R',
		'O', '0', '0', '0', '5', 0x00, 0x08, '_', 'U', 'I', 'D', 0x00,
		/* Name (_CRS, Buffer: PkgLength 26, BufferSize 23) */
		0x08, '_', 'C', 'R', 'S', 0x11, 0x1a, 0x0a, 0x17,
		/* Memory32Fixed: read/write, base 0xd0000000, length 0x1000 */
		0x86, 0x09, 0x00, 0x01, 0x00, 0x00, 0x00, 0xd0, 0x00, 0x10, 0x00, 0x00,
		/* Extended Interrupt: consumer | edge, active high, exclusive; 1 entry: 5 */
		0x89, 0x06, 0x00, 0x03, 0x01, 0x05, 0x00, 0x00, 0x00, 0x79, 0x00, /* End Tag */
	};
	size_t used = build_mmio(1, 1);
	const uint8_t *f = table(g64(xsdt_entry(used, 0)), "FACP", used);
	const uint8_t *d = table(g32(f + 40), "DSDT", used);

	ck_assert_uint_eq(g32(d + 4), 36 + sizeof(want));
	ck_assert_mem_eq(d + 36, want, sizeof(want));
	/* the MADT still follows, intact, 16-byte aligned */
	ck_assert_uint_eq(g64(xsdt_entry(used, 1)) % 16, 0);
	ck_assert_uint_ge(g64(xsdt_entry(used, 1)), g32(f + 40) + g32(d + 4));
	table(g64(xsdt_entry(used, 1)), "APIC", used);
}
END_TEST

/* Walk the MADT's interrupt controller structures; check one of each kind. */
static void check_madt(unsigned int ncpus)
{
	size_t used = build(ncpus);
	const uint8_t *m = table(g64(xsdt_entry(used, 1)), "APIC", used);
	uint32_t len = g32(m + 4), off = 44;
	unsigned int lapics = 0, ioapics = 0, ovr0 = 0, nmis = 0;

	ck_assert_uint_eq(m[8], 4);
	ck_assert_uint_eq(g32(m + 36), 0xfee00000u);
	ck_assert_uint_eq(g32(m + 40), 1); /* PCAT_COMPAT */
	while (off < len) {
		const uint8_t *e = m + off;

		ck_assert_uint_ge(e[1], 2);
		ck_assert_uint_le(off + e[1], len);
		switch (e[0]) {
		case 0:
			ck_assert_uint_eq(e[1], 8);
			ck_assert_uint_eq(e[2], lapics);
			ck_assert_uint_eq(e[3], lapics);
			ck_assert_uint_eq(g32(e + 4), 1);
			lapics++;
			break;
		case 1:
			ck_assert_uint_eq(e[1], 12);
			ck_assert_uint_eq(e[2], ncpus);
			ck_assert_uint_eq(g32(e + 4), 0xfec00000u);
			ck_assert_uint_eq(g32(e + 8), 0);
			ioapics++;
			break;
		case 2:
			ck_assert_uint_eq(e[1], 10);
			ck_assert_uint_eq(e[2], 0);
			if (e[3] == 0) {
				ck_assert_uint_eq(g32(e + 4), 2);
				ovr0++;
			} else {
				ck_assert_uint_eq(e[3], ACPI_SCI_IRQ);
				ck_assert_uint_eq(g32(e + 4), ACPI_SCI_IRQ);
			}
			break;
		case 4:
			ck_assert_uint_eq(e[1], 6);
			ck_assert_uint_eq(e[2], 0xff);
			ck_assert_uint_eq(e[5], 1);
			nmis++;
			break;
		default:
			ck_abort_msg("unexpected MADT entry type %u", e[0]);
		}
		off += e[1];
	}
	ck_assert_uint_eq(off, len);
	ck_assert_uint_eq(lapics, ncpus);
	ck_assert_uint_eq(ioapics, 1);
	ck_assert_uint_eq(ovr0, 1);
	ck_assert_uint_eq(nmis, 1);
}

START_TEST(madt_1_cpu)
{
	check_madt(1);
}
END_TEST

START_TEST(madt_254_cpus)
{
	check_madt(254);
}
END_TEST

START_TEST(errors)
{
	size_t used;

	struct x86_acpi_virtio_mmio bad = { .base = 0xfffff000u, .size = 0x2000, .gsi = 5 };

	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, 0, NULL, 0, &used), -EINVAL);
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, 255, NULL, 0, &used), -EINVAL);
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA + 8, 1, NULL, 0, &used), -EINVAL);
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), 1ull << 32, 1, NULL, 0, &used), -EINVAL);
	ck_assert_int_eq(x86_acpi_build(buf, 100, GPA, 1, NULL, 0, &used), -ENOSPC);
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), 0xffffff00ull, 254, NULL, 0, &used),
			 -ENOSPC);
	/* a window crossing 4 GiB, an empty one, one above 4 GiB, too many devices */
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, 1, &bad, 1, &used), -EINVAL);
	bad = (struct x86_acpi_virtio_mmio){ .base = 0xd0000000u, .size = 0, .gsi = 5 };
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, 1, &bad, 1, &used), -EINVAL);
	bad = (struct x86_acpi_virtio_mmio){ .base = 1ull << 32, .size = 0x1000, .gsi = 5 };
	ck_assert_int_eq(x86_acpi_build(buf, sizeof(buf), GPA, 1, &bad, 1, &used), -EINVAL);
	ck_assert_int_eq(
		x86_acpi_build(buf, sizeof(buf), GPA, 1, mmio, X86_ACPI_MAX_VIRTIO_MMIO + 1, &used),
		-EINVAL);
	/* room for the FADT but not for the DSDT with a device */
	ck_assert_int_eq(x86_acpi_build(buf, 0x238, GPA, 1, mmio, 1, &used), -ENOSPC);
}
END_TEST

START_TEST(in_guest_memory)
{
	struct guest_mem mem;
	uint64_t rsdp = 0;
	const uint8_t *p;

	ck_assert_int_eq(guest_mem_create(&mem, 2u << 20), 0);
	ck_assert_int_eq(x86_write_acpi(&mem, 3, mmio, 1, &rsdp), 0);
	ck_assert_uint_eq(rsdp, ACPI_TABLES_GPA);
	p = guest_mem_ptr(&mem, rsdp, 36);
	ck_assert_mem_eq(p, "RSD PTR ", 8);
	ck_assert_uint_eq(sum(p, 36), 0);
	guest_mem_destroy(&mem);
	/* RAM that ends inside the table area */
	ck_assert_int_eq(guest_mem_create(&mem, 0xe0000), 0);
	ck_assert_int_eq(x86_write_acpi(&mem, 1, NULL, 0, &rsdp), -EFAULT);
	guest_mem_destroy(&mem);
}
END_TEST

#ifdef IASL_BIN
static void write_file(const char *dir, const char *name, const uint8_t *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* The disassembly @name.dsl of @dir, NUL-terminated (caller frees). */
static char *read_dsl(const char *dir, const char *name)
{
	char path[512], *text;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.dsl", dir, name);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "iasl wrote no %s", path);
	text = calloc(1, 1 << 20);
	ck_assert_ptr_nonnull(text);
	n = fread(text, 1, (1 << 20) - 1, f);
	text[n] = 0;
	fclose(f);
	return text;
}

static int run_iasl(const char *dir, const char *file)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' -d %s > %s.log 2>&1", dir, IASL_BIN, file,
		 file);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Each table through "iasl -d" (the RSDP it cannot read on its own): it
 * must parse, and say what we meant.
 */
/*
 * @text with comments ("// ..." to the end of the line) and white space
 * removed (caller frees), so that checks do not depend on iasl's layout.
 */
static char *squeeze(const char *text)
{
	char *out = malloc(strlen(text) + 1), *o = out;

	ck_assert_ptr_nonnull(out);
	while (*text) {
		if (text[0] == '/' && text[1] == '/') {
			while (*text && *text != '\n')
				text++;
			continue;
		}
		if (*text != ' ' && *text != '\n' && *text != '\t')
			*o++ = *text;
		text++;
	}
	*o = 0;
	return out;
}

/* The DSDT's disassembly describes both virtio-mmio devices of mmio[]. */
static void check_dsdt_devices(const char *dsl)
{
	char *sq = squeeze(dsl);

	ck_assert_msg(strstr(sq,
			     "Scope(\\_SB){Device(VR00){Name(_HID,\"LNRO0005\")"
			     "Name(_UID,Zero)Name(_CRS,ResourceTemplate(){"
			     "Memory32Fixed(ReadWrite,0xD0000000,0x00001000,)"
			     "Interrupt(ResourceConsumer,Edge,ActiveHigh,Exclusive,,,){0x00000005,}"
			     "})}"),
		      "DSDT disassembly:\n%s", dsl);
	ck_assert_msg(strstr(sq,
			     "Device(VR01){Name(_HID,\"LNRO0005\")"
			     "Name(_UID,One)Name(_CRS,ResourceTemplate(){"
			     "Memory32Fixed(ReadWrite,0xD0001000,0x00000200,)"
			     "Interrupt(ResourceConsumer,Edge,ActiveHigh,Exclusive,,,){0x00000006,}"
			     "})}}"),
		      "DSDT disassembly:\n%s", dsl);
	free(sq);
}

START_TEST(iasl_disassembly)
{
	size_t used = build_mmio(2, 2);
	const uint8_t *f = table(g64(xsdt_entry(used, 0)), "FACP", used);
	const uint8_t *m = table(g64(xsdt_entry(used, 1)), "APIC", used);
	const uint8_t *x = table(g64(buf + 24), "XSDT", used);
	const uint8_t *d = table(g32(f + 40), "DSDT", used);
	char dir[] = "/tmp/skiff-acpi-XXXXXX", cmd[600];
	char *t;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_file(dir, "facp.dat", f, g32(f + 4));
	write_file(dir, "apic.dat", m, g32(m + 4));
	write_file(dir, "xsdt.dat", x, g32(x + 4));
	write_file(dir, "dsdt.aml", d, g32(d + 4));
	ck_assert_int_eq(run_iasl(dir, "facp.dat"), 0);
	ck_assert_int_eq(run_iasl(dir, "apic.dat"), 0);
	ck_assert_int_eq(run_iasl(dir, "xsdt.dat"), 0);
	ck_assert_int_eq(run_iasl(dir, "dsdt.aml"), 0);

	t = read_dsl(dir, "dsdt");
	ck_assert_msg(strstr(t, "Name (_S5, Package (0x02)"), "DSDT disassembly:\n%s", t);
	ck_assert_ptr_nonnull(strstr(t, "0x05"));
	ck_assert_ptr_null(strstr(t, "Incorrect")); /* iasl's word for a bad checksum */
	check_dsdt_devices(t);
	free(t);
	t = read_dsl(dir, "facp");
	ck_assert_msg(strstr(t, "Revision : 06"), "FADT disassembly:\n%s", t);
	ck_assert_ptr_null(strstr(t, "Incorrect"));
	ck_assert_ptr_nonnull(strstr(t, "PM1A Event Block Address : 00000600"));
	ck_assert_ptr_nonnull(strstr(t, "PM1A Control Block Address : 00000604"));
	ck_assert_ptr_nonnull(strstr(t, "Reset Register Supported (V2) : 1"));
	ck_assert_ptr_nonnull(strstr(t, "Hardware Reduced (V5) : 0"));
	free(t);
	t = read_dsl(dir, "apic");
	ck_assert_ptr_null(strstr(t, "Incorrect"));
	ck_assert_msg(strstr(t, "Subtable Type : 02 [Interrupt Source Override]"), "MADT:\n%s", t);
	ck_assert_ptr_nonnull(strstr(t, "Interrupt : 00000002"));
	ck_assert_ptr_nonnull(strstr(t, "Local Apic ID : 01"));
	free(t);
	t = read_dsl(dir, "xsdt");
	ck_assert_ptr_null(strstr(t, "Incorrect"));
	free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("vmm_acpi");
	TCase *tc = tcase_create("acpi");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, rsdp_and_xsdt);
	tcase_add_test(tc, fadt_facs_dsdt);
	tcase_add_test(tc, dsdt_virtio_mmio);
	tcase_add_test(tc, madt_1_cpu);
	tcase_add_test(tc, madt_254_cpus);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, in_guest_memory);
#ifdef IASL_BIN
	tcase_add_test(tc, iasl_disassembly);
#else
	printf("vmm_acpi: iasl (acpica-tools) not found at configure time: "
	       "disassembly check not built\n");
#endif
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
