// SPDX-License-Identifier: MIT
/*
 * Debug device: how a tiny CPL3 guest ends the VM, prints and reports values
 * (register map in skiff/tiny_guest_abi.h). State is the VM's report slots
 * and selected key (atomics), so it takes no lock.
 */
#include "debug_dev.h"

#include <stdatomic.h>

#include "skiff/tiny_guest_abi.h"
#include "vm.h"

static void debug_mmio(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct vm *vm = opaque;
	_Static_assert(SKIFF_DEBUG_REPORT_SLOTS <= 16, "report slots fit vm->reports");
	uint64_t v = bus_get_le(data, len);
	unsigned int key;

	if (!is_write) {
		bus_put_le(data, len, 0);
		return;
	}
	switch (off) {
	case SKIFF_DEBUG_EXIT:
		vm_end(vm, SKIFF_EXIT_GUEST_CODE, v, -1, 0, "guest exit code %llu",
		       (unsigned long long)v);
		break;
	case SKIFF_DEBUG_PUTC: {
		char c = (char)v;

		vm_console_write(vm, &c, 1);
		break;
	}
	case SKIFF_DEBUG_PANIC:
		vm_end(vm, SKIFF_EXIT_PANIC, v, -1, 0, "guest panic (debug device, value %llu)",
		       (unsigned long long)v);
		break;
	case SKIFF_DEBUG_REPORT_KEY:
		if (v < SKIFF_DEBUG_REPORT_SLOTS)
			atomic_store(&vm->report_key, (unsigned int)v);
		break;
	case SKIFF_DEBUG_REPORT_VAL:
		if (len != 8)
			break;
		key = atomic_load(&vm->report_key);
		atomic_store(&vm->reports[key], v);
		atomic_fetch_or(&vm->report_set, 1u << key);
		break;
	default:
		break;
	}
}

static void debug_exit_port(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct vm *vm = opaque;
	uint64_t v = bus_get_le(data, len);

	if (!is_write) {
		bus_put_le(data, len, 0);
		return;
	}
	vm_end(vm, SKIFF_EXIT_GUEST_CODE, v, -1, 0, "guest wrote %llu to the debug-exit port",
	       (unsigned long long)v);
}

int debug_dev_add(struct vm *vm)
{
	int err;

	err = bus_add(&vm->mmio_bus, SKIFF_DEBUG_MMIO_GPA, SKIFF_DEBUG_MMIO_SIZE, debug_mmio, vm);
	if (err)
		return err;
	return bus_add(&vm->pio_bus, SKIFF_DEBUG_EXIT_PORT, 4, debug_exit_port, vm);
}
