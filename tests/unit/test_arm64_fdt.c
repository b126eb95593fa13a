// SPDX-License-Identifier: MIT
/*
 * The arm64 device tree builder (vmm/arch/aarch64/arm64_fdt.c) on any host:
 * DTBs for 1, 2 and 8 vCPUs, with and without an initrd, with 0, 1 and 2
 * virtio-mmio devices, parsed back with libfdt and checked node by node and
 * property by property (values, cell counts, no extra nodes or properties,
 * the GIC phandle and stdout-path resolve); every -EINVAL, -ENAMETOOLONG
 * and -ENOSPC case; and no byte written past the caller's buffer.
 *
 * Run as `unit-arm64-fdt --golden GOLDEN.dts DTC` it instead writes the DTB
 * of golden_config() to a temporary file, decompiles it with
 * `DTC -I dtb -O dts`, which must not warn (its checks of bindings and
 * phandles are an independent review), and compares the text with the
 * reviewed GOLDEN.dts
 * (exit 77 when DTC is "none": dtc was not found at configure time).
 * `unit-arm64-fdt --write-dtb FILE` writes that DTB, to regenerate the golden
 * file (tests/unit/golden/README.md).
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arm64_fdt.h"
#include "arm64_layout.h"

#define BUF_LEN (64u << 10)
#define GUARD 256u
#define INITRD_START (ARM64_RAM_BASE + (64ull << 20))
#define INITRD_END (INITRD_START + 0x123456)

static const struct arm64_fdt_virtio two_virtio[2] = {
	{ ARM64_VIRTIO_MMIO_BASE, ARM64_VIRTIO_MMIO_SIZE, ARM64_VIRTIO_MMIO_SPI0 },
	{ ARM64_VIRTIO_MMIO_BASE + ARM64_VIRTIO_MMIO_SIZE, ARM64_VIRTIO_MMIO_SIZE,
	  ARM64_VIRTIO_MMIO_SPI0 + 1 },
};

static struct arm64_fdt_config make_config(uint32_t vcpus, bool initrd, unsigned int nr_virtio)
{
	struct arm64_fdt_config c;

	arm64_fdt_config_platform(&c, vcpus);
	c.ram_base = ARM64_RAM_BASE;
	c.ram_size = 512ull << 20;
	c.bootargs = "console=ttyS0 earlycon panic=-1";
	c.has_initrd = initrd;
	c.initrd_start = initrd ? INITRD_START : 0;
	c.initrd_end = initrd ? INITRD_END : 0;
	c.virtio = nr_virtio ? two_virtio : NULL;
	c.nr_virtio = nr_virtio;
	return c;
}

/* The golden file's machine: 2 vCPUs, an initrd, one virtio-mmio device, PSCI 1.0. */
static struct arm64_fdt_config golden_config(void)
{
	return make_config(2, true, 1);
}

static int prop_count(const void *fdt, int node)
{
	int off, n = 0;

	fdt_for_each_property_offset(off, fdt, node) n++;
	return n;
}

static int subnode_count(const void *fdt, int node)
{
	int off, n = 0;

	fdt_for_each_subnode(off, fdt, node) n++;
	return n;
}

static const void *prop(const void *fdt, int node, const char *name, int want_len)
{
	int len = -1;
	const void *p = fdt_getprop(fdt, node, name, &len);

	ck_assert_msg(p, "%s: missing (%d)", name, len);
	ck_assert_msg(len == want_len, "%s: %d bytes, want %d", name, len, want_len);
	return p;
}

static void check_u32(const void *fdt, int node, const char *name, uint32_t want)
{
	ck_assert_uint_eq(fdt32_to_cpu(*(const fdt32_t *)prop(fdt, node, name, 4)), want);
}

static void check_str(const void *fdt, int node, const char *name, const char *want)
{
	ck_assert_str_eq(prop(fdt, node, name, (int)strlen(want) + 1), want);
}

static void check_empty(const void *fdt, int node, const char *name)
{
	prop(fdt, node, name, 0);
}

static void check_cells(const void *fdt, int node, const char *name, const uint32_t *want, int n)
{
	const fdt32_t *p = prop(fdt, node, name, 4 * n);
	int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(fdt32_to_cpu(p[i]) == want[i], "%s cell %d: 0x%x, want 0x%x", name, i,
			      fdt32_to_cpu(p[i]), want[i]);
}

/* reg with #address-cells = #size-cells = 2: @n (base, size) pairs. */
static void check_reg(const void *fdt, int node, const uint64_t *pairs, int n)
{
	uint32_t c[8];
	int i;

	for (i = 0; i < 2 * n; i++) {
		c[2 * i] = (uint32_t)(pairs[i] >> 32);
		c[2 * i + 1] = (uint32_t)pairs[i];
	}
	check_cells(fdt, node, "reg", c, 4 * n);
}

static int node(const void *fdt, const char *path)
{
	int off = fdt_path_offset(fdt, path);

	ck_assert_msg(off >= 0, "%s: %s", path, fdt_strerror(off));
	return off;
}

static void check_tree(const void *fdt, size_t len, const struct arm64_fdt_config *c)
{
	uint32_t timer[12], irq[3];
	char path[64];
	const char *s;
	int root, n, gic, i;

	ck_assert_int_eq(fdt_check_full(fdt, len), 0);
	ck_assert_uint_eq(fdt_totalsize(fdt), len);
	ck_assert_int_eq(fdt_num_mem_rsv(fdt), 0);

	root = node(fdt, "/");
	ck_assert_int_eq(prop_count(fdt, root), 4);
	ck_assert_int_eq(subnode_count(fdt, root), 7 + (int)c->nr_virtio);
	check_u32(fdt, root, "#address-cells", 2);
	check_u32(fdt, root, "#size-cells", 2);
	check_str(fdt, root, "compatible", "linux,dummy-virt");
	check_u32(fdt, root, "interrupt-parent", ARM64_FDT_PHANDLE_GIC);
	gic = fdt_node_offset_by_phandle(fdt, ARM64_FDT_PHANDLE_GIC);
	ck_assert_int_eq(gic, node(fdt, "/intc@8000000"));

	n = node(fdt, "/cpus");
	ck_assert_int_eq(prop_count(fdt, n), 2);
	ck_assert_int_eq(subnode_count(fdt, n), (int)c->nr_vcpus);
	check_u32(fdt, n, "#address-cells", 1);
	check_u32(fdt, n, "#size-cells", 0);
	for (i = 0; i < (int)c->nr_vcpus; i++) {
		snprintf(path, sizeof(path), "/cpus/cpu@%x", arm64_vcpu_mpidr((uint32_t)i));
		n = node(fdt, path);
		ck_assert_int_eq(prop_count(fdt, n), 4);
		ck_assert_int_eq(subnode_count(fdt, n), 0);
		check_str(fdt, n, "device_type", "cpu");
		check_str(fdt, n, "compatible", "arm,armv8");
		check_u32(fdt, n, "reg", arm64_vcpu_mpidr((uint32_t)i));
		check_str(fdt, n, "enable-method", "psci");
	}

	snprintf(path, sizeof(path), "/memory@%" PRIx64, c->ram_base);
	n = node(fdt, path);
	ck_assert_int_eq(prop_count(fdt, n), 2);
	check_str(fdt, n, "device_type", "memory");
	check_reg(fdt, n, (uint64_t[]){ c->ram_base, c->ram_size }, 1);

	n = node(fdt, "/chosen");
	ck_assert_int_eq(prop_count(fdt, n), c->has_initrd ? 4 : 2);
	check_str(fdt, n, "bootargs", c->bootargs);
	s = prop(fdt, n, "stdout-path", (int)strlen("/uart@9000000") + 1);
	ck_assert_int_eq(node(fdt, s), node(fdt, "/uart@9000000"));
	if (c->has_initrd) {
		ck_assert_uint_eq(fdt64_ld(prop(fdt, n, "linux,initrd-start", 8)), c->initrd_start);
		ck_assert_uint_eq(fdt64_ld(prop(fdt, n, "linux,initrd-end", 8)), c->initrd_end);
	} else {
		ck_assert_ptr_null(fdt_getprop(fdt, n, "linux,initrd-start", NULL));
		ck_assert_ptr_null(fdt_getprop(fdt, n, "linux,initrd-end", NULL));
	}

	n = gic;
	ck_assert_int_eq(prop_count(fdt, n), 8);
	ck_assert_int_eq(subnode_count(fdt, n), 0);
	check_str(fdt, n, "compatible", "arm,gic-v3");
	check_u32(fdt, n, "#interrupt-cells", 3);
	check_empty(fdt, n, "interrupt-controller");
	check_u32(fdt, n, "#address-cells", 2);
	check_u32(fdt, n, "#size-cells", 2);
	check_empty(fdt, n, "ranges");
	check_reg(fdt, n, (uint64_t[]){ c->gicd_base, c->gicd_size, c->gicr_base, c->gicr_size },
		  2);
	check_u32(fdt, n, "phandle", ARM64_FDT_PHANDLE_GIC);

	n = node(fdt, "/timer");
	ck_assert_int_eq(prop_count(fdt, n), 3);
	check_str(fdt, n, "compatible", "arm,armv8-timer");
	for (i = 0; i < 4; i++) {
		timer[3 * i] = 1; /* PPI */
		timer[3 * i + 1] = c->timer_ppi[i];
		timer[3 * i + 2] = 4; /* IRQ_TYPE_LEVEL_HIGH */
	}
	check_cells(fdt, n, "interrupts", timer, 12);
	check_empty(fdt, n, "always-on");

	n = node(fdt, "/psci");
	ck_assert_int_eq(prop_count(fdt, n), 2);
	check_str(fdt, n, "method", "hvc");
	if (c->psci == ARM64_PSCI_1_0) {
		ck_assert_int_eq(fdt_stringlist_count(fdt, n, "compatible"), 2);
		ck_assert_str_eq(fdt_stringlist_get(fdt, n, "compatible", 0, NULL), "arm,psci-1.0");
		ck_assert_str_eq(fdt_stringlist_get(fdt, n, "compatible", 1, NULL), "arm,psci-0.2");
	} else {
		check_str(fdt, n, "compatible", "arm,psci-0.2");
	}

	n = node(fdt, "/uart@9000000");
	ck_assert_int_eq(prop_count(fdt, n), 4);
	check_str(fdt, n, "compatible", "ns16550a");
	check_reg(fdt, n, (uint64_t[]){ c->uart_base, c->uart_size }, 1);
	irq[0] = 0; /* SPI */
	irq[1] = c->uart_spi;
	irq[2] = 4;
	check_cells(fdt, n, "interrupts", irq, 3);
	check_u32(fdt, n, "clock-frequency", c->uart_clock_hz);

	for (i = 0; i < (int)c->nr_virtio; i++) {
		snprintf(path, sizeof(path), "/virtio_mmio@%" PRIx64, c->virtio[i].base);
		n = node(fdt, path);
		ck_assert_int_eq(prop_count(fdt, n), 4);
		check_str(fdt, n, "compatible", "virtio,mmio");
		check_reg(fdt, n, (uint64_t[]){ c->virtio[i].base, c->virtio[i].size }, 1);
		irq[0] = 0;
		irq[1] = c->virtio[i].spi;
		irq[2] = 1; /* IRQ_TYPE_EDGE_RISING */
		check_cells(fdt, n, "interrupts", irq, 3);
		check_empty(fdt, n, "dma-coherent");
	}
}

/* Build into a buffer with a guard area behind @len; check the guard is untouched. */
static int build(const struct arm64_fdt_config *c, uint8_t *buf, size_t len, size_t *out, char *msg,
		 size_t msg_len)
{
	size_t i;
	int err;

	memset(buf, 0xa5, len + GUARD);
	err = arm64_fdt_build(c, buf, len, out, msg, msg_len);
	for (i = len; i < len + GUARD; i++)
		ck_assert_msg(buf[i] == 0xa5, "byte %zu past the %zu-byte buffer written", i, len);
	return err;
}

/*
 * Build @c into a buffer of BUF_LEN, expect success and no message, and
 * check the tree against @expect (@c itself, or @c with what the builder
 * should have made of it). Returns the DTB (valid until the next call).
 */
static const void *build_checked(const struct arm64_fdt_config *c,
				 const struct arm64_fdt_config *expect)
{
	static uint8_t buf[BUF_LEN + GUARD];
	char msg[256] = "";
	size_t len = 0;

	ck_assert_int_eq(build(c, buf, BUF_LEN, &len, msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "");
	check_tree(buf, len, expect);
	return buf;
}

static const uint32_t loop_vcpus[3] = { 1, 2, 8 };

/* _i: vCPUs (1, 2, 8) x initrd (no, yes) x virtio-mmio devices (0, 1, 2). */
START_TEST(configs)
{
	struct arm64_fdt_config c = make_config(loop_vcpus[_i / 6], (_i / 3) % 2, _i % 3);

	build_checked(&c, &c);
}
END_TEST

START_TEST(psci_0_2_and_no_bootargs)
{
	struct arm64_fdt_config c = make_config(1, false, 0), expect;

	c.psci = ARM64_PSCI_0_2;
	c.bootargs = NULL;
	expect = c;
	expect.bootargs = "";
	build_checked(&c, &expect);
}
END_TEST

START_TEST(mpidr_clusters)
{
	struct arm64_fdt_config c = make_config(17, false, 0);
	const void *fdt;

	ck_assert_uint_eq(arm64_vcpu_mpidr(0), 0);
	ck_assert_uint_eq(arm64_vcpu_mpidr(15), 0xf);
	ck_assert_uint_eq(arm64_vcpu_mpidr(16), 0x100);
	ck_assert_uint_eq(arm64_vcpu_mpidr(17), 0x101);
	ck_assert_uint_eq(arm64_vcpu_mpidr(511), 0x1f0f);
	ck_assert_uint_eq(arm64_vcpu_mpidr(4096), 0x10000);
	fdt = build_checked(&c, &c);
	ck_assert_int_ge(fdt_path_offset(fdt, "/cpus/cpu@100"), 0);
	ck_assert_int_lt(fdt_path_offset(fdt, "/cpus/cpu@10"), 0);
}
END_TEST

START_TEST(max_vcpus)
{
	struct arm64_fdt_config c = make_config(ARM64_MAX_VCPUS, true, 2);

	build_checked(&c, &c);
}
END_TEST

/*
 * The map of arm64_layout.h holds together at its limits: 512 vCPUs' full
 * redistributor region, all 32 virtio-mmio slots on their SPIs, and the
 * largest RAM, with no region overlapping another.
 */
START_TEST(layout_at_limits)
{
	static struct arm64_fdt_virtio v[ARM64_VIRTIO_MMIO_SLOTS];
	struct arm64_fdt_config c = make_config(ARM64_MAX_VCPUS, true, 0);
	unsigned int i;

	for (i = 0; i < ARM64_VIRTIO_MMIO_SLOTS; i++) {
		v[i].base = ARM64_VIRTIO_MMIO_BASE + i * ARM64_VIRTIO_MMIO_SIZE;
		v[i].size = ARM64_VIRTIO_MMIO_SIZE;
		v[i].spi = ARM64_VIRTIO_MMIO_SPI0 + i;
	}
	c.virtio = v;
	c.nr_virtio = ARM64_VIRTIO_MMIO_SLOTS;
	c.gicr_size = ARM64_GICR_SIZE;
	c.ram_size = ARM64_RAM_MAX_SIZE;
	ck_assert_uint_eq(c.ram_base + c.ram_size, 1ull << ARM64_IPA_BITS);
	ck_assert_uint_le(ARM64_GICD_BASE + ARM64_GICD_SIZE, ARM64_GIC_ITS_BASE);
	ck_assert_uint_le(ARM64_GIC_ITS_BASE + ARM64_GIC_ITS_SIZE, ARM64_UART_BASE);
	build_checked(&c, &c);
}
END_TEST

/* Every size below the DTB's own gives -ENOSPC; its own size succeeds, same bytes. */
START_TEST(nospace)
{
	struct arm64_fdt_config c = make_config(8, true, 2);
	static uint8_t ref[BUF_LEN + GUARD], buf[BUF_LEN + GUARD];
	size_t want = 0, len, got;
	char msg[256];

	ck_assert_int_eq(build(&c, ref, BUF_LEN, &want, NULL, 0), 0);
	for (len = 0; len < want; len++) {
		msg[0] = 0;
		got = 12345;
		ck_assert_int_eq(build(&c, buf, len, &got, msg, sizeof(msg)), -ENOSPC);
		ck_assert_uint_eq(got, 12345);
		ck_assert_ptr_nonnull(strstr(msg, "larger buffer"));
	}
	ck_assert_int_eq(build(&c, buf, want, &got, NULL, 0), 0);
	ck_assert_uint_eq(got, want);
	ck_assert_mem_eq(buf, ref, want);
	ck_assert_int_eq(arm64_fdt_build(&c, NULL, 0, &got, NULL, 0), -ENOSPC);
}
END_TEST

/* Error cases: _i picks one broken field of a good configuration. */
static int broken(int i, struct arm64_fdt_config *c, struct arm64_fdt_virtio *v, char *args)
{
	*c = make_config(2, true, 2);
	memcpy(v, two_virtio, 2 * sizeof(*v));
	c->virtio = v;
	switch (i) {
	case 0:
		c->nr_vcpus = 0;
		break;
	case 1:
		c->nr_vcpus = ARM64_MAX_VCPUS + 1;
		c->gicr_size = ARM64_GICR_SIZE * 2;
		break;
	case 2:
		c->nr_vcpus = 3;
		break; /* gicr_size holds 2 */
	case 3:
		c->uart_base = ARM64_RAM_BASE + 0x1000;
		break; /* in RAM */
	case 4:
		v[1].base = v[0].base + 0x100;
		break;
	case 5:
		c->gicd_size = ARM64_GICR_BASE - ARM64_GICD_BASE + 0x10000;
		break;
	case 6:
		c->ram_size = 0;
		break;
	case 7:
		c->ram_base = UINT64_MAX - 0xfff;
		break; /* wraps */
	case 8:
		v[0].size = 0;
		break;
	case 9:
		c->gicd_base += 0x1000;
		break;
	case 10:
		c->gicr_base += 0x8000;
		break;
	case 11:
		c->gicd_size = 0x8000;
		break;
	case 12:
		c->initrd_end = c->initrd_start;
		break;
	case 13:
		c->initrd_end = c->initrd_start - 1;
		break;
	case 14:
		c->initrd_start = ARM64_RAM_BASE - 0x1000;
		break;
	case 15:
		c->initrd_end = c->ram_base + c->ram_size + 1;
		break;
	case 16:
		c->timer_ppi[2] = 16;
		break;
	case 17:
		c->timer_ppi[3] = c->timer_ppi[0];
		break;
	case 18:
		c->uart_spi = 988;
		break;
	case 19:
		v[1].spi = 988;
		break;
	case 20:
		v[0].spi = c->uart_spi;
		break;
	case 21:
		v[1].spi = v[0].spi;
		break;
	case 22:
		c->psci = (enum arm64_psci)7;
		break;
	case 23:
		c->uart_clock_hz = 0;
		break;
	case 24:
		c->nr_virtio = ARM64_FDT_VIRTIO_MAX + 1;
		break;
	case 25:
		c->virtio = NULL;
		break;
	case 26:
		v[0].base = UINT64_MAX;
		v[0].size = 2;
		break;
	case 27:
		c->uart_size = 0;
		break;
	case 28: /* the last byte of the address space is fine, one more is not */
		c->ram_base = UINT64_MAX - 0xffff;
		c->ram_size = 0x10001;
		break;
	case 29:
		memset(args, 'a', ARM64_FDT_BOOTARGS_MAX);
		args[ARM64_FDT_BOOTARGS_MAX] = 0;
		c->bootargs = args;
		return -ENAMETOOLONG;
	}
	return -EINVAL;
}

START_TEST(errors)
{
	static uint8_t buf[BUF_LEN + GUARD];
	static char args[ARM64_FDT_BOOTARGS_MAX + 1];
	struct arm64_fdt_virtio v[2];
	struct arm64_fdt_config c;
	char msg[256] = "";
	size_t len = 777;
	int want = broken(_i, &c, v, args);

	ck_assert_int_eq(build(&c, buf, BUF_LEN, &len, msg, sizeof(msg)), want);
	ck_assert_msg(strlen(msg) > 20, "case %d: message '%s'", _i, msg);
	ck_assert_uint_eq(len, 777);
	ck_assert_int_eq(build(&c, buf, BUF_LEN, &len, NULL, 0), want);
}
END_TEST

/* The edges that must still work: the longest bootargs, regions touching each other. */
START_TEST(edges_accepted)
{
	static char args[ARM64_FDT_BOOTARGS_MAX];
	struct arm64_fdt_config c = make_config(2, true, 2);

	memset(args, 'a', sizeof(args) - 1);
	args[sizeof(args) - 1] = 0;
	c.bootargs = args;
	c.initrd_start = c.ram_base;
	c.initrd_end = c.ram_base + c.ram_size;
	c.gicd_size = ARM64_UART_BASE - ARM64_GICD_BASE; /* ends where the UART starts */
	c.timer_ppi[0] = 0;
	c.timer_ppi[1] = ARM64_FDT_PPI_MAX;
	c.uart_spi = ARM64_FDT_SPI_MAX;
	build_checked(&c, &c);

	/* RAM and initrd ending at the last byte of the address space. */
	c.ram_base = 0xffffffff00000000ull;
	c.ram_size = 1ull << 32;
	c.initrd_start = UINT64_MAX - 0xfff;
	c.initrd_end = 0; /* [start, end) cannot end at 2^64: an u64 end wraps */
	ck_assert_int_eq(
		arm64_fdt_build(&c, (uint8_t[BUF_LEN]){ 0 }, BUF_LEN, &(size_t){ 0 }, NULL, 0),
		-EINVAL);
	c.initrd_end = UINT64_MAX;
	build_checked(&c, &c);
}
END_TEST

static int write_dtb(const char *path)
{
	struct arm64_fdt_config c = golden_config();
	static uint8_t buf[BUF_LEN];
	char msg[256];
	size_t len;
	FILE *f;
	int err = arm64_fdt_build(&c, buf, sizeof(buf), &len, msg, sizeof(msg));

	if (err) {
		fprintf(stderr, "arm64_fdt_build: %d: %s\n", err, msg);
		return 1;
	}
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		return 1;
	}
	return 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		p = malloc((size_t)n + 1);
		if (p && fread(p, 1, (size_t)n, f) == (size_t)n) {
			p[n] = 0;
			*len = (size_t)n;
		} else {
			free(p);
			p = NULL;
		}
	}
	fclose(f);
	return p;
}

/* --golden GOLDEN.dts DTC: the decompiled DTB of golden_config() must equal GOLDEN.dts. */
static int golden(const char *want_path, const char *dtc)
{
	char dir[] = "/tmp/skiff-fdt-golden.XXXXXX", dtb[64], dts[64], warn[64], cmd[512];
	size_t want_len = 0, got_len = 0, warn_len = 0;
	char *want, *got, *warnings;
	int ret = 1;

	if (!strcmp(dtc, "none")) {
		printf("dtc (device-tree-compiler) was not found at configure time: skipped; "
		       "scripts/setup.sh installs it\n");
		return 77;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dtb, sizeof(dtb), "%s/g.dtb", dir);
	snprintf(dts, sizeof(dts), "%s/g.dts", dir);
	snprintf(warn, sizeof(warn), "%s/warnings", dir);
	if (write_dtb(dtb))
		goto out;
	snprintf(cmd, sizeof(cmd), "'%s' -I dtb -O dts -o '%s' '%s' 2>'%s'", dtc, dts, dtb, warn);
	if (system(cmd)) {
		fprintf(stderr, "failed: %s\n", cmd);
		goto out;
	}
	want = slurp(want_path, &want_len);
	got = slurp(dts, &got_len);
	warnings = slurp(warn, &warn_len);
	if (!want || !got || !warnings) {
		fprintf(stderr, "cannot read %s or %s\n", want_path, dts);
	} else if (warn_len) {
		fprintf(stderr, "dtc warns about the DTB:\n%s", warnings);
	} else if (want_len != got_len || memcmp(want, got, want_len)) {
		fprintf(stderr, "the DTB differs from the golden source %s:\n", want_path);
		snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s' >&2", want_path, dts);
		if (system(cmd) < 0)
			perror("diff");
		fprintf(stderr, "if the change is intended, review it and regenerate the file "
				"(tests/unit/golden/README.md)\n");
	} else {
		printf("golden: %s matches (%zu bytes of dts)\n", want_path, got_len);
		ret = 0;
	}
	free(want);
	free(got);
	free(warnings);
out:
	unlink(dtb);
	unlink(dts);
	unlink(warn);
	rmdir(dir);
	return ret;
}

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;
	SRunner *sr;
	int failed;

	if (argc == 4 && !strcmp(argv[1], "--golden"))
		return golden(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "--write-dtb"))
		return write_dtb(argv[2]);
	s = suite_create("unit-arm64-fdt");
	tc = tcase_create("fdt");
	tcase_add_loop_test(tc, configs, 0, 18);
	tcase_add_test(tc, psci_0_2_and_no_bootargs);
	tcase_add_test(tc, mpidr_clusters);
	tcase_add_test(tc, max_vcpus);
	tcase_add_test(tc, layout_at_limits);
	tcase_add_test(tc, nospace);
	tcase_add_loop_test(tc, errors, 0, 30);
	tcase_add_test(tc, edges_accepted);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
