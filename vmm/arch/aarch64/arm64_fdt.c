// SPDX-License-Identifier: MIT
/*
 * The arm64 guest's device tree (see arm64_fdt.h): the configuration is
 * checked first, then the tree is written front to back with libfdt's
 * sequential-write calls, whose first error sticks (struct fdt_w).
 *
 * The console is a 16550A ("ns16550a"), not a PL011: vmm/src/serial.c
 * already models a 16550A for x86, and only its bus changes (MMIO, byte
 * registers, reg-shift 0); Linux's 8250 driver (of_serial) and its earlycon
 * take it from the device tree, as they do on Firecracker's arm64 machine.
 * A PL011 would need a second UART model and a fixed-clock node for its
 * "apb_pclk".
 */
#include <errno.h>
#include <inttypes.h>
#include <libfdt.h>
#include <stdio.h>
#include <string.h>

#include "arm64_fdt.h"
#include "arm64_layout.h"
#include "arm64_msg.h"

void arm64_fdt_config_platform(struct arm64_fdt_config *cfg, uint32_t nr_vcpus)
{
	*cfg = (struct arm64_fdt_config){
		.nr_vcpus = nr_vcpus,
		.gicd_base = ARM64_GICD_BASE,
		.gicd_size = ARM64_GICD_SIZE,
		.gicr_base = ARM64_GICR_BASE,
		.gicr_size = (uint64_t)nr_vcpus * ARM64_GICR_STRIDE,
		.timer_ppi = { ARM64_TIMER_PPI_SEC_PHYS, ARM64_TIMER_PPI_PHYS, ARM64_TIMER_PPI_VIRT,
			       ARM64_TIMER_PPI_HYP },
		.psci = ARM64_PSCI_1_0,
		.uart_base = ARM64_UART_BASE,
		.uart_size = ARM64_UART_SIZE,
		.uart_spi = ARM64_UART_SPI,
		.uart_clock_hz = ARM64_UART_CLOCK_HZ,
	};
}

#define SZ_64K 0x10000ull

uint32_t arm64_vcpu_mpidr(uint32_t index)
{
	return (index & 0xfu) | ((index >> 4) & 0xffu) << 8 | ((index >> 12) & 0xffu) << 16;
}

struct region {
	const char *name;
	unsigned int idx; /* virtio-mmio device number, for messages */
	uint64_t base, size;
};

/* [base, base + size) non-empty and not past 2^64. */
static bool region_ok(const struct region *r)
{
	return r->size && r->size - 1 <= UINT64_MAX - r->base;
}

static uint64_t region_last(const struct region *r)
{
	return r->base + (r->size - 1);
}

static int check_regions(const struct region *r, unsigned int n, char *msg, size_t msg_len)
{
	unsigned int i, j;

	for (i = 0; i < n; i++)
		if (!region_ok(&r[i]))
			return arm64_err(msg, msg_len, -EINVAL,
					 "%s %u: region 0x%" PRIx64 " size 0x%" PRIx64
					 " is empty or wraps past 2^64; give it a size and a base "
					 "that fit",
					 r[i].name, r[i].idx, r[i].base, r[i].size);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (r[i].base <= region_last(&r[j]) && r[j].base <= region_last(&r[i]))
				return arm64_err(msg, msg_len, -EINVAL,
						 "%s %u [0x%" PRIx64 ", 0x%" PRIx64
						 "] overlaps %s %u [0x%" PRIx64 ", 0x%" PRIx64
						 "]; move one of them (arm64_layout.h has a map)",
						 r[i].name, r[i].idx, r[i].base, region_last(&r[i]),
						 r[j].name, r[j].idx, r[j].base,
						 region_last(&r[j]));
	return 0;
}

static int check_irqs(const struct arm64_fdt_config *cfg, char *msg, size_t msg_len)
{
	unsigned int i, j;

	for (i = 0; i < 4; i++) {
		if (cfg->timer_ppi[i] > ARM64_FDT_PPI_MAX)
			return arm64_err(msg, msg_len, -EINVAL,
					 "timer PPI %" PRIu32 " is out of range (0-%u)",
					 cfg->timer_ppi[i], ARM64_FDT_PPI_MAX);
		for (j = 0; j < i; j++)
			if (cfg->timer_ppi[i] == cfg->timer_ppi[j])
				return arm64_err(msg, msg_len, -EINVAL,
						 "timer PPI %" PRIu32 " is given twice; the four "
						 "timers need four PPIs",
						 cfg->timer_ppi[i]);
	}
	if (cfg->uart_spi > ARM64_FDT_SPI_MAX)
		return arm64_err(msg, msg_len, -EINVAL,
				 "UART SPI %" PRIu32 " is out of range (0-%u)", cfg->uart_spi,
				 ARM64_FDT_SPI_MAX);
	for (i = 0; i < cfg->nr_virtio; i++) {
		uint32_t spi = cfg->virtio[i].spi;

		if (spi > ARM64_FDT_SPI_MAX)
			return arm64_err(msg, msg_len, -EINVAL,
					 "virtio-mmio %u: SPI %" PRIu32 " is out of range (0-%u)",
					 i, spi, ARM64_FDT_SPI_MAX);
		if (spi == cfg->uart_spi)
			return arm64_err(msg, msg_len, -EINVAL,
					 "virtio-mmio %u: SPI %" PRIu32 " is the UART's; give each "
					 "device its own SPI",
					 i, spi);
		for (j = 0; j < i; j++)
			if (cfg->virtio[j].spi == spi)
				return arm64_err(msg, msg_len, -EINVAL,
						 "virtio-mmio %u: SPI %" PRIu32
						 " is also virtio-mmio %u's; give each device its "
						 "own SPI",
						 i, spi, j);
	}
	return 0;
}

static int check_config(const struct arm64_fdt_config *cfg, char *msg, size_t msg_len)
{
	struct region r[4 + ARM64_FDT_VIRTIO_MAX] = {
		{ "RAM", 0, cfg->ram_base, cfg->ram_size },
		{ "GIC distributor", 0, cfg->gicd_base, cfg->gicd_size },
		{ "GIC redistributors", 0, cfg->gicr_base, cfg->gicr_size },
		{ "UART", 0, cfg->uart_base, cfg->uart_size },
	};
	unsigned int i;
	int err;

	if (!cfg->nr_vcpus || cfg->nr_vcpus > ARM64_MAX_VCPUS)
		return arm64_err(msg, msg_len, -EINVAL, "%" PRIu32 " vCPUs: give 1 to %u",
				 cfg->nr_vcpus, ARM64_MAX_VCPUS);
	if (cfg->nr_virtio > ARM64_FDT_VIRTIO_MAX || (cfg->nr_virtio && !cfg->virtio))
		return arm64_err(msg, msg_len, -EINVAL,
				 "%u virtio-mmio devices: give at most %u, with their array",
				 cfg->nr_virtio, ARM64_FDT_VIRTIO_MAX);
	for (i = 0; i < cfg->nr_virtio; i++)
		r[4 + i] = (struct region){ "virtio-mmio", i, cfg->virtio[i].base,
					    cfg->virtio[i].size };
	err = check_regions(r, 4 + cfg->nr_virtio, msg, msg_len);
	if (err)
		return err;
	if ((cfg->gicd_base | cfg->gicr_base) % SZ_64K || cfg->gicd_size < SZ_64K)
		return arm64_err(msg, msg_len, -EINVAL,
				 "GIC distributor 0x%" PRIx64 " (0x%" PRIx64
				 " bytes), redistributors 0x%" PRIx64
				 ": both need 64 KiB alignment (KVM_VGIC_V3_ADDR_TYPE_*), the "
				 "distributor 64 KiB",
				 cfg->gicd_base, cfg->gicd_size, cfg->gicr_base);
	if (cfg->gicr_size / ARM64_GICR_STRIDE < cfg->nr_vcpus)
		return arm64_err(msg, msg_len, -EINVAL,
				 "%" PRIu32 " vCPUs need 0x%" PRIx64
				 " bytes of GIC redistributors (128 KiB each), the region has "
				 "0x%" PRIx64 "; give fewer vCPUs or a larger region",
				 cfg->nr_vcpus, (uint64_t)(cfg->nr_vcpus * ARM64_GICR_STRIDE),
				 cfg->gicr_size);
	if (cfg->has_initrd) {
		struct region rd = { "initrd", 0, cfg->initrd_start,
				     cfg->initrd_end - cfg->initrd_start };

		if (cfg->initrd_end <= cfg->initrd_start || cfg->initrd_start < r[0].base ||
		    region_last(&rd) > region_last(&r[0]))
			return arm64_err(msg, msg_len, -EINVAL,
					 "initrd [0x%" PRIx64 ", 0x%" PRIx64
					 ") is empty or not inside RAM [0x%" PRIx64 ", 0x%" PRIx64
					 "]; place it in RAM (arm64_boot_plan() does)",
					 cfg->initrd_start, cfg->initrd_end, r[0].base,
					 region_last(&r[0]));
	}
	if (cfg->psci != ARM64_PSCI_0_2 && cfg->psci != ARM64_PSCI_1_0)
		return arm64_err(msg, msg_len, -EINVAL, "unknown PSCI version %d", (int)cfg->psci);
	if (!cfg->uart_clock_hz)
		return arm64_err(msg, msg_len, -EINVAL,
				 "the UART needs a clock frequency (1843200 Hz is usual)");
	if (cfg->bootargs && strlen(cfg->bootargs) >= ARM64_FDT_BOOTARGS_MAX)
		return arm64_err(msg, msg_len, -ENAMETOOLONG,
				 "the kernel command line has %zu bytes; arm64 Linux takes at "
				 "most %u: shorten it",
				 strlen(cfg->bootargs), ARM64_FDT_BOOTARGS_MAX - 1);
	return check_irqs(cfg, msg, msg_len);
}

/* Sequential writer with a sticky error: after the first failure every call is a no-op. */
struct fdt_w {
	void *fdt;
	int err;
};

static void w_begin(struct fdt_w *w, const char *name)
{
	if (!w->err)
		w->err = fdt_begin_node(w->fdt, name);
}

static void w_begin_at(struct fdt_w *w, const char *name, uint64_t addr)
{
	char node[64];

	snprintf(node, sizeof(node), "%s@%" PRIx64, name, addr);
	w_begin(w, node);
}

static void w_end(struct fdt_w *w)
{
	if (!w->err)
		w->err = fdt_end_node(w->fdt);
}

static void w_prop(struct fdt_w *w, const char *name, const void *val, size_t len)
{
	if (!w->err)
		w->err = fdt_property(w->fdt, name, val, (int)len);
}

static void w_u32(struct fdt_w *w, const char *name, uint32_t v)
{
	if (!w->err)
		w->err = fdt_property_u32(w->fdt, name, v);
}

static void w_u64(struct fdt_w *w, const char *name, uint64_t v)
{
	if (!w->err)
		w->err = fdt_property_u64(w->fdt, name, v);
}

static void w_str(struct fdt_w *w, const char *name, const char *s)
{
	w_prop(w, name, s, strlen(s) + 1);
}

/* reg = <base size> with #address-cells = #size-cells = 2. */
static void w_reg(struct fdt_w *w, const uint64_t *pairs, unsigned int n)
{
	fdt64_t v[4];
	unsigned int i;

	for (i = 0; i < 2 * n && i < 4; i++)
		v[i] = cpu_to_fdt64(pairs[i]);
	w_prop(w, "reg", v, i * sizeof(v[0]));
}

/* interrupts = <type number flags>, one specifier. */
static void w_irq(struct fdt_w *w, uint32_t type, uint32_t nr, uint32_t flags)
{
	fdt32_t v[3] = { cpu_to_fdt32(type), cpu_to_fdt32(nr), cpu_to_fdt32(flags) };

	w_prop(w, "interrupts", v, sizeof(v));
}

static void write_cpus(struct fdt_w *w, const struct arm64_fdt_config *cfg)
{
	uint32_t i;

	w_begin(w, "cpus");
	w_u32(w, "#address-cells", 1); /* Aff2..Aff0 */
	w_u32(w, "#size-cells", 0);
	for (i = 0; i < cfg->nr_vcpus; i++) {
		w_begin_at(w, "cpu", arm64_vcpu_mpidr(i));
		w_str(w, "device_type", "cpu");
		w_str(w, "compatible", "arm,armv8");
		w_u32(w, "reg", arm64_vcpu_mpidr(i));
		w_str(w, "enable-method", "psci");
		w_end(w);
	}
	w_end(w);
}

static void write_chosen(struct fdt_w *w, const struct arm64_fdt_config *cfg, const char *uart)
{
	w_begin(w, "chosen");
	w_str(w, "bootargs", cfg->bootargs ? cfg->bootargs : "");
	w_str(w, "stdout-path", uart);
	if (cfg->has_initrd) {
		w_u64(w, "linux,initrd-start", cfg->initrd_start);
		w_u64(w, "linux,initrd-end", cfg->initrd_end);
	}
	w_end(w);
}

static void write_gic_timer_psci(struct fdt_w *w, const struct arm64_fdt_config *cfg)
{
	static const char psci_1_0[] = "arm,psci-1.0\0arm,psci-0.2";
	uint64_t reg[4] = { cfg->gicd_base, cfg->gicd_size, cfg->gicr_base, cfg->gicr_size };
	fdt32_t t[12];
	unsigned int i;

	w_begin_at(w, "intc", cfg->gicd_base);
	w_str(w, "compatible", "arm,gic-v3");
	w_u32(w, "#interrupt-cells", 3);
	w_prop(w, "interrupt-controller", NULL, 0);
	/* No children yet (an ITS would be one); dtc wants the cells of an interrupt provider. */
	w_u32(w, "#address-cells", 2);
	w_u32(w, "#size-cells", 2);
	w_prop(w, "ranges", NULL, 0);
	w_reg(w, reg, 2);
	w_u32(w, "phandle", ARM64_FDT_PHANDLE_GIC);
	w_end(w);

	for (i = 0; i < 4; i++) {
		t[3 * i] = cpu_to_fdt32(ARM64_FDT_GIC_PPI);
		t[3 * i + 1] = cpu_to_fdt32(cfg->timer_ppi[i]);
		t[3 * i + 2] = cpu_to_fdt32(ARM64_FDT_IRQ_LEVEL_HIGH);
	}
	w_begin(w, "timer");
	w_str(w, "compatible", "arm,armv8-timer");
	w_prop(w, "interrupts", t, sizeof(t));
	w_prop(w, "always-on", NULL, 0);
	w_end(w);

	w_begin(w, "psci");
	if (cfg->psci == ARM64_PSCI_1_0)
		w_prop(w, "compatible", psci_1_0, sizeof(psci_1_0));
	else
		w_str(w, "compatible", "arm,psci-0.2");
	w_str(w, "method", "hvc");
	w_end(w);
}

static void write_devices(struct fdt_w *w, const struct arm64_fdt_config *cfg)
{
	unsigned int i;

	w_begin_at(w, "uart", cfg->uart_base);
	w_str(w, "compatible", "ns16550a");
	w_reg(w, (uint64_t[]){ cfg->uart_base, cfg->uart_size }, 1);
	w_irq(w, ARM64_FDT_GIC_SPI, cfg->uart_spi, ARM64_FDT_IRQ_LEVEL_HIGH);
	w_u32(w, "clock-frequency", cfg->uart_clock_hz);
	w_end(w);

	for (i = 0; i < cfg->nr_virtio; i++) {
		const struct arm64_fdt_virtio *v = &cfg->virtio[i];

		w_begin_at(w, "virtio_mmio", v->base);
		w_str(w, "compatible", "virtio,mmio");
		w_reg(w, (uint64_t[]){ v->base, v->size }, 1);
		w_irq(w, ARM64_FDT_GIC_SPI, v->spi, ARM64_FDT_IRQ_EDGE_RISING);
		w_prop(w, "dma-coherent", NULL, 0);
		w_end(w);
	}
}

int arm64_fdt_build(const struct arm64_fdt_config *cfg, void *buf, size_t buf_len, size_t *dtb_len,
		    char *msg, size_t msg_len)
{
	struct fdt_w w = { buf, 0 };
	char uart[64];
	int err;

	err = check_config(cfg, msg, msg_len);
	if (err)
		return err;
	if (buf_len > ARM64_DTB_MAX_SIZE)
		buf_len = ARM64_DTB_MAX_SIZE;
	snprintf(uart, sizeof(uart), "/uart@%" PRIx64, cfg->uart_base);

	w.err = fdt_create(buf, (int)buf_len);
	if (!w.err)
		w.err = fdt_finish_reservemap(buf);
	w_begin(&w, "");
	w_u32(&w, "#address-cells", 2);
	w_u32(&w, "#size-cells", 2);
	w_str(&w, "compatible", "linux,dummy-virt");
	w_u32(&w, "interrupt-parent", ARM64_FDT_PHANDLE_GIC);
	write_cpus(&w, cfg);
	w_begin_at(&w, "memory", cfg->ram_base);
	w_str(&w, "device_type", "memory");
	w_reg(&w, (uint64_t[]){ cfg->ram_base, cfg->ram_size }, 1);
	w_end(&w);
	write_chosen(&w, cfg, uart);
	write_gic_timer_psci(&w, cfg);
	write_devices(&w, cfg);
	w_end(&w);
	if (!w.err)
		w.err = fdt_finish(buf);

	if (w.err == -FDT_ERR_NOSPACE)
		return arm64_err(msg, msg_len, -ENOSPC,
				 "the device tree does not fit in %zu bytes; give a larger buffer "
				 "(at most %llu bytes are used)",
				 buf_len, ARM64_DTB_MAX_SIZE);
	if (w.err)
		return arm64_err(msg, msg_len, -EIO, "libfdt: %s", fdt_strerror(w.err));
	*dtb_len = fdt_totalsize(buf);
	return 0;
}
