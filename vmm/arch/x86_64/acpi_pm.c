// SPDX-License-Identifier: MIT
/*
 * The ACPI fixed-hardware registers the FADT of acpi.c points at (ACPI 6.0,
 * 4.8.3), on I/O ports ACPI_PM1A_EVT_PORT .. ACPI_RESET_PORT:
 *
 *   +0 PM1_STS  2 bytes, write-1-to-clear; no event ever fires, reads 0
 *   +2 PM1_EN   2 bytes, kept so that the OS reads back what it enabled
 *   +4 PM1_CNT  2 bytes; SCI_EN reads 1 (the platform is always in ACPI
 *               mode, FADT SMI_CMD is 0); SLP_EN with SLP_TYP = \_S5's value
 *               powers the VM off
 *   +6 unused (reads 0)
 *   +8 RESET_REG 1 byte; ACPI_RESET_VALUE resets (ends) the VM
 *
 * Linux reaches PM1_CNT from acpi_power_off() -> acpi_enter_sleep_state(5)
 * -> acpi_hw_legacy_sleep() (drivers/acpi/acpica/hwsleep.c), and the reset
 * register from acpi_reboot() (drivers/acpi/reboot.c, "reboot=a").
 * Accesses of any width at any offset are handled byte by byte. The register
 * state is vm->acpi_pm1 (atomic: PM1_EN in bits 0-15, PM1_CNT in 16-31),
 * so several vCPUs need no lock.
 */
#include <stdatomic.h>
#include <string.h>

#include "acpi.h"
#include "vm.h"

#define OFF_STS 0
#define OFF_EN 2
#define OFF_CNT 4
#define OFF_RESET 8

/* Byte @off (0-3) of the EN/CNT word: EN is bytes 0-1, CNT bytes 2-3. */
static unsigned int state_shift(uint64_t off)
{
	return (unsigned int)(off - OFF_EN) * 8;
}

static void pm1_cnt_written(struct vm *vm, uint16_t cnt)
{
	unsigned int typ = (cnt & ACPI_PM1_CNT_SLP_TYP_MASK) >> ACPI_PM1_CNT_SLP_TYP_SHIFT;

	if (!(cnt & ACPI_PM1_CNT_SLP_EN))
		return;
	if (typ == ACPI_S5_SLP_TYP)
		vm_end(vm, SKIFF_EXIT_POWEROFF, 0, -1, 0,
		       "guest powered off (ACPI S5 through PM1a_CNT)");
	/* Other sleep types are not offered by the DSDT: nothing happens. */
}

static void pm_pio(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct vm *vm = opaque;
	uint32_t i;

	for (i = 0; i < len; i++, off++) {
		if (off >= OFF_EN && off < OFF_CNT + 2) {
			unsigned int sh = state_shift(off);
			uint32_t old = atomic_load(&vm->acpi_pm1), val;

			if (!is_write) {
				val = (old >> sh) & 0xff;
				if (off == OFF_CNT)
					val |= ACPI_PM1_CNT_SCI_EN;
				data[i] = (uint8_t)val;
				continue;
			}
			do {
				val = (old & ~(0xffu << sh)) | (uint32_t)data[i] << sh;
			} while (!atomic_compare_exchange_weak(&vm->acpi_pm1, &old, val));
			/* SLP_EN sits in the high byte of PM1_CNT: act once that byte is in. */
			if (off == OFF_CNT + 1 || (off == OFF_CNT && i + 1 == len))
				pm1_cnt_written(vm, (uint16_t)(val >> 16));
		} else if (off == OFF_RESET) {
			if (!is_write)
				data[i] = 0;
			else if (data[i] == ACPI_RESET_VALUE)
				vm_end(vm, SKIFF_EXIT_REBOOT, 0, -1, 0,
				       "guest reset through the ACPI reset register");
		} else if (!is_write) {
			data[i] = 0; /* PM1_STS (no status bit is ever set), +6 and +7 unused */
		}
	}
}

int x86_acpi_pm_add(struct vm *vm)
{
	atomic_store(&vm->acpi_pm1, 0);
	return bus_add(&vm->pio_bus, ACPI_PM1A_EVT_PORT, ACPI_PM_PORTS_LEN, pm_pio, vm);
}
