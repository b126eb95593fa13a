// SPDX-License-Identifier: MIT
/* MMIO and port I/O dispatch tables (see bus.h). */
#include "bus.h"

#include <errno.h>

int bus_add(struct bus *bus, uint64_t base, uint64_t len, bus_access_fn fn, void *opaque)
{
	unsigned int i;

	if (!len || base + len < base || !fn)
		return -EINVAL;
	for (i = 0; i < bus->n; i++) {
		const struct bus_dev *d = &bus->devs[i];

		if (base < d->base + d->len && d->base < base + len)
			return -EEXIST;
	}
	if (bus->n == BUS_MAX_DEVS)
		return -ENOSPC;
	bus->devs[bus->n++] = (struct bus_dev){ base, len, fn, opaque };
	return 0;
}

bool bus_dispatch(const struct bus *bus, uint64_t addr, uint8_t *data, uint32_t len, bool is_write)
{
	unsigned int i;

	for (i = 0; i < bus->n; i++) {
		const struct bus_dev *d = &bus->devs[i];

		if (addr >= d->base && addr - d->base < d->len &&
		    len <= d->len - (addr - d->base)) {
			d->fn(d->opaque, addr - d->base, data, len, is_write);
			return true;
		}
	}
	return false;
}

uint64_t bus_get_le(const uint8_t *data, uint32_t len)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = 0; i < len && i < 8; i++)
		v |= (uint64_t)data[i] << (8 * i);
	return v;
}

void bus_put_le(uint8_t *data, uint32_t len, uint64_t value)
{
	uint32_t i;

	for (i = 0; i < len && i < 8; i++)
		data[i] = (uint8_t)(value >> (8 * i));
}
