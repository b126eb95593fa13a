/* SPDX-License-Identifier: MIT */
/*
 * The arm64 guest's device tree, built with libfdt's sequential-write API
 * from a small description of the machine. No KVM calls: builds and is
 * tested on any host.
 *
 * Bindings followed (Linux Documentation/devicetree/bindings/): cpus.yaml and
 * arm/cpus.yaml (reg = MPIDR affinity), arm/psci.yaml, arm/arch_timer.yaml,
 * interrupt-controller/arm,gic-v3.yaml, serial/8250.yaml, virtio/mmio.yaml,
 * chosen.yaml (linux,initrd-start/-end).
 */
#ifndef SKIFF_ARM64_FDT_H
#define SKIFF_ARM64_FDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Explicit phandles (nothing else in the tree needs one). */
#define ARM64_FDT_PHANDLE_GIC 1u

/* GIC interrupt specifier cells (arm,gic-v3.yaml): type, number, flags. */
#define ARM64_FDT_GIC_SPI 0u
#define ARM64_FDT_GIC_PPI 1u
#define ARM64_FDT_IRQ_EDGE_RISING 1u
#define ARM64_FDT_IRQ_LEVEL_HIGH 4u

/* SPIs are INTIDs 32-1019, so numbers 0-987 in a specifier. */
#define ARM64_FDT_SPI_MAX 987u
/* PPIs are INTIDs 16-31, so numbers 0-15. */
#define ARM64_FDT_PPI_MAX 15u
/* arm64's COMMAND_LINE_SIZE (arch/arm64/include/uapi/asm/setup.h), NUL included. */
#define ARM64_FDT_BOOTARGS_MAX 2048u
/* virtio-mmio devices one tree describes (arm64_layout.h has 32 slots). */
#define ARM64_FDT_VIRTIO_MAX 64u

enum arm64_psci {
	ARM64_PSCI_0_2, /* compatible "arm,psci-0.2" */
	ARM64_PSCI_1_0, /* compatible "arm,psci-1.0", "arm,psci-0.2" */
};

/* One virtio-mmio transport: registers [base, base + size), its SPI. */
struct arm64_fdt_virtio {
	uint64_t base;
	uint64_t size;
	uint32_t spi; /* SPI number (INTID - 32), edge-triggered (irqfd) */
};

/*
 * The machine. Addresses and sizes in bytes (guest physical); a region is
 * [base, base + size). arm64_layout.h has the values skiff uses.
 */
struct arm64_fdt_config {
	uint64_t ram_base, ram_size;
	uint32_t nr_vcpus; /* cpu@N nodes, reg = arm64_vcpu_mpidr(N) */
	const char *bootargs; /* /chosen/bootargs; NULL: empty */
	bool has_initrd;
	uint64_t initrd_start, initrd_end; /* [start, end), inside RAM */
	uint64_t gicd_base, gicd_size; /* distributor, 64 KiB aligned, >= 64 KiB */
	uint64_t gicr_base, gicr_size; /* redistributors, 64 KiB aligned, 128 KiB per vCPU */
	uint32_t timer_ppi[4]; /* secure phys, phys, virt, hyp: PPI numbers 0-15 */
	enum arm64_psci psci;
	uint64_t uart_base, uart_size; /* 16550A, byte registers */
	uint32_t uart_spi;
	uint32_t uart_clock_hz;
	const struct arm64_fdt_virtio *virtio; /* nr_virtio entries */
	unsigned int nr_virtio;
};

/*
 * arm64_vcpu_mpidr() - the MPIDR_EL1 affinity KVM gives vCPU @index at reset
 * (arch/arm64/kvm/sys_regs.c reset_mpidr(): Aff0 = index bits 0-3, so 16
 * CPUs per cluster as GICv3 SGI target lists hold; Aff1 = bits 4-11; Aff2 =
 * bits 12-19). This is the cpu node's reg (Aff3 is 0 for index < 2^20).
 */
uint32_t arm64_vcpu_mpidr(uint32_t index);

/*
 * arm64_fdt_build() - write the DTB for @cfg into @buf.
 * @buf, @buf_len: the caller's buffer; at most ARM64_DTB_MAX_SIZE (arm64_layout.h) of it is used.
 * @dtb_len: set to the DTB's size (its totalsize header field) on success.
 * @msg, @msg_len: on -EINVAL/-ENAMETOOLONG/-ENOSPC, what is wrong and the
 * remedy, NUL-terminated (may be NULL/0).
 *
 * Nodes: / (#address-cells = #size-cells = 2, compatible "linux,dummy-virt",
 * interrupt-parent = the GIC), /cpus/cpu@MPIDR (arm,armv8, enable-method psci),
 * /memory@BASE, /chosen (bootargs, stdout-path, linux,initrd-start/-end as
 * 64-bit values), /intc@GICD (arm,gic-v3, #address-cells = #size-cells = 2
 * and an empty ranges for a later ITS child, phandle ARM64_FDT_PHANDLE_GIC),
 * /timer (arm,armv8-timer, always-on), /psci (method hvc), /uart@BASE
 * (ns16550a, level-high SPI), /virtio_mmio@BASE (virtio,mmio, edge-rising
 * SPI, dma-coherent).
 *
 * Return: 0;
 * -EINVAL when @cfg is inconsistent: zero or more than ARM64_MAX_VCPUS vCPUs,
 * more vCPUs than gicr_size holds, an empty, wrapping or overlapping region,
 * a GIC region not 64 KiB aligned or a distributor under 64 KiB, an initrd
 * that is empty or not inside RAM, a PPI or SPI out of range or used twice,
 * an unknown @psci, a zero UART clock, more than ARM64_FDT_VIRTIO_MAX
 * virtio-mmio devices or nr_virtio without @virtio;
 * -ENAMETOOLONG when bootargs has ARM64_FDT_BOOTARGS_MAX bytes or more;
 * -ENOSPC when the DTB does not fit in @buf_len (or ARM64_DTB_MAX_SIZE) bytes;
 * -EIO for any other libfdt error (a bug).
 */
/*
 * arm64_fdt_config_platform() - zero @cfg, then fill in skiff's fixed
 * platform from arm64_layout.h: GICv3 distributor and the redistributors of
 * @nr_vcpus vCPUs, the four timer PPIs, PSCI 1.0, the 16550 UART. The caller
 * adds RAM, bootargs, the initrd and the virtio-mmio devices.
 */
void arm64_fdt_config_platform(struct arm64_fdt_config *cfg, uint32_t nr_vcpus);

int arm64_fdt_build(const struct arm64_fdt_config *cfg, void *buf, size_t buf_len, size_t *dtb_len,
		    char *msg, size_t msg_len);

#endif /* SKIFF_ARM64_FDT_H */
