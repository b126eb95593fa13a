/* SPDX-License-Identifier: MIT */
/*
 * Address dispatch for exits to user space: one bus for MMIO, one for port
 * I/O. Devices are added before the vCPUs start; the table is read-only
 * afterwards, so lookups take no lock (each device locks its own state).
 */
#ifndef SKIFF_BUS_H
#define SKIFF_BUS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A device access: @offset from the device's base, @len bytes (1, 2, 4 or 8)
 * at @data, little endian. On a read the handler fills @data.
 */
typedef void (*bus_access_fn)(void *opaque, uint64_t offset, uint8_t *data, uint32_t len,
			      bool is_write);

struct bus_dev {
	uint64_t base;
	uint64_t len;
	bus_access_fn fn;
	void *opaque;
};

#define BUS_MAX_DEVS 16

struct bus {
	struct bus_dev devs[BUS_MAX_DEVS];
	unsigned int n;
};

/* bus_add() - claim [base, base + len). Return: 0; -EINVAL; -EEXIST on overlap; -ENOSPC. */
int bus_add(struct bus *bus, uint64_t base, uint64_t len, bus_access_fn fn, void *opaque);

/*
 * bus_dispatch() - deliver one access. Return: true when a device claimed it.
 * An access that straddles the end of a device is not claimed.
 */
bool bus_dispatch(const struct bus *bus, uint64_t addr, uint8_t *data, uint32_t len, bool is_write);

/* Little-endian helpers for handlers. */
uint64_t bus_get_le(const uint8_t *data, uint32_t len);
void bus_put_le(uint8_t *data, uint32_t len, uint64_t value);

#endif /* SKIFF_BUS_H */
