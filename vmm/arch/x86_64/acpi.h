/* SPDX-License-Identifier: MIT */
/*
 * Minimal ACPI for x86-64 Linux guests (ACPI 6.0): tables in the BIOS area
 * (acpi.c) and the power-management I/O ports they point at (acpi_pm.c).
 * Enough for a guest to find its CPUs and IOAPIC (MADT), its virtio-mmio
 * devices (LNRO0005 in the DSDT) and to power off (\_S5 in the DSDT, PM1a
 * control block) or reset (FADT RESET_REG).
 */
#ifndef SKIFF_X86_ACPI_H
#define SKIFF_X86_ACPI_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

struct vm;

/* Where the tables go: 16-byte aligned, inside the 0xe0000-0xfffff RSDP scan range. */
#define ACPI_TABLES_GPA 0xe0000ull
#define ACPI_TABLES_MAX 0x10000u /* up to 0xf0000, where the MP tables start */

/* Fixed-hardware register blocks (port I/O), see acpi_pm.c. */
#define ACPI_PM1A_EVT_PORT 0x600 /* PM1_STS (2 bytes), then PM1_EN (2 bytes) */
#define ACPI_PM1_EVT_LEN 4
#define ACPI_PM1A_CNT_PORT 0x604 /* PM1_CNT, 2 bytes */
#define ACPI_PM1_CNT_LEN 2
#define ACPI_RESET_PORT 0x608 /* FADT RESET_REG, 1 byte */
#define ACPI_RESET_VALUE 0x0e
#define ACPI_PM_PORTS_LEN 9 /* 0x600..0x608 */
#define ACPI_SCI_IRQ 9

/* PM1_CNT bits (ACPI 6.0, 4.8.3.2.1). */
#define ACPI_PM1_CNT_SCI_EN 0x0001
#define ACPI_PM1_CNT_SLP_TYP_SHIFT 10
#define ACPI_PM1_CNT_SLP_TYP_MASK 0x1c00
#define ACPI_PM1_CNT_SLP_EN 0x2000
/* The SLP_TYP value the DSDT's \_S5 package gives for soft-off. */
#define ACPI_S5_SLP_TYP 5

/* A virtio-mmio device for the DSDT: register window and interrupt. */
struct x86_acpi_virtio_mmio {
	uint64_t base; /* guest-physical, the window below 4 GiB */
	uint32_t size; /* bytes */
	uint32_t gsi; /* edge-triggered, active high */
};

#define X86_ACPI_MAX_VIRTIO_MMIO 100 /* device names VR00..VR99 */

/*
 * x86_acpi_build() - RSDP, XSDT, FADT, FACS, DSDT and MADT for @ncpus
 * vCPUs and the @nr_mmio virtio-mmio devices of @mmio (each an LNRO0005
 * device in the DSDT, _UID its index) into @buf, which the guest will see at
 * guest-physical @gpa (16-byte aligned, below 4 GiB); the RSDP is at
 * @buf[0]. Every table carries its length, revision and checksum. @used
 * gets the bytes written.
 * Return: 0; -EINVAL for ncpus 0 or > 254, a misaligned @gpa, more than
 * X86_ACPI_MAX_VIRTIO_MMIO devices or a window that is empty or crosses
 * 4 GiB; -ENOSPC when @len is too small.
 */
int x86_acpi_build(uint8_t *buf, size_t len, uint64_t gpa, unsigned int ncpus,
		   const struct x86_acpi_virtio_mmio *mmio, unsigned int nr_mmio, size_t *used);

/*
 * x86_write_acpi() - x86_acpi_build() at ACPI_TABLES_GPA in guest RAM.
 * @rsdp gets the RSDP's address (for boot_params.acpi_rsdp_addr).
 * Return: as x86_acpi_build(); -EFAULT when RAM does not cover the area.
 */
int x86_write_acpi(const struct guest_mem *mem, unsigned int ncpus,
		   const struct x86_acpi_virtio_mmio *mmio, unsigned int nr_mmio, uint64_t *rsdp);

/*
 * x86_acpi_pm_add() - the PM1a event/control blocks and the reset register
 * on the port I/O bus. Writing SLP_EN with SLP_TYP = ACPI_S5_SLP_TYP ends the
 * VM as SKIFF_EXIT_POWEROFF; writing ACPI_RESET_VALUE to the reset port ends
 * it as SKIFF_EXIT_REBOOT. Return: 0 or -errno from bus_add().
 */
int x86_acpi_pm_add(struct vm *vm);

#endif /* SKIFF_X86_ACPI_H */
