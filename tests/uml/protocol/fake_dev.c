// SPDX-License-Identifier: MIT
/* Recording fake of the device model API; see fake_dev.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "fake_dev.h"

struct vsock_dev {
	struct fake_dev_state s;
};

struct fake_dev_state *fake_dev_state(struct vsock_dev *dev)
{
	return &dev->s;
}

int vsock_dev_create(const struct vsock_dev_config *cfg, struct vsock_dev **out)
{
	struct vsock_dev *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return -ENOMEM;
	dev->s.cid = cfg->guest_cid;
	*out = dev;
	return 0;
}

void vsock_dev_destroy(struct vsock_dev *dev)
{
	free(dev);
}

uint64_t vsock_dev_features(const struct vsock_dev *dev)
{
	return FAKE_DEV_FEATURES;
}

int vsock_dev_read_config(const struct vsock_dev *dev, uint32_t offset, void *buf, uint32_t len)
{
	struct virtio_vsock_config c = { .guest_cid = dev->s.cid };

	if (offset > sizeof(c) || len > sizeof(c) - offset)
		return -EINVAL;
	memcpy(buf, (const char *)&c + offset, len);
	return 0;
}

int vsock_dev_set_features(struct vsock_dev *dev, uint64_t features)
{
	if (dev->s.started) {
		dev->s.order_errors++;
		return -EBUSY;
	}
	if ((features & ~FAKE_DEV_FEATURES) || !(features & (1ull << VIRTIO_F_VERSION_1)))
		return -EINVAL;
	dev->s.features = features;
	dev->s.has_features = true;
	return 0;
}

int vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *regions, unsigned int n)
{
	if (n > VSOCK_MAX_MEM_REGIONS)
		return -EINVAL;
	memcpy(dev->s.regions, regions, n * sizeof(*regions));
	dev->s.nregions = n;
	return 0;
}

static bool in_mem(const struct vsock_dev *dev, uint64_t gpa, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < dev->s.nregions; i++) {
		const struct vsock_mem_region *r = &dev->s.regions[i];

		if (gpa >= r->gpa && gpa - r->gpa <= r->size && len <= r->size - (gpa - r->gpa))
			return true;
	}
	return false;
}

int vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			const struct vsock_vring_config *vring)
{
	uint64_t n;

	if (dev->s.started) {
		dev->s.order_errors++;
		return -EBUSY;
	}
	if (q >= VSOCK_VQ_NUM || !vring->num || (vring->num & (vring->num - 1)))
		return -EINVAL;
	n = vring->num;
	if (!in_mem(dev, vring->desc_gpa, 16 * n) || !in_mem(dev, vring->avail_gpa, 6 + 2 * n) ||
	    !in_mem(dev, vring->used_gpa, 6 + 8 * n))
		return -EINVAL;
	dev->s.vring[q] = *vring;
	dev->s.vring_set[q] = true;
	return 0;
}

int vsock_dev_clear_vring(struct vsock_dev *dev, unsigned int q)
{
	if (dev->s.started) {
		dev->s.order_errors++;
		return -EBUSY;
	}
	if (q >= VSOCK_VQ_NUM)
		return -EINVAL;
	dev->s.vring_set[q] = false;
	return 0;
}

/* A vring's fd the backend has closed: the device would watch a stranger. */
static bool fd_gone(int fd)
{
	return fd >= 0 && fcntl(fd, F_GETFD) < 0;
}

int vsock_dev_start(struct vsock_dev *dev)
{
	unsigned int q;

	if (dev->s.started)
		return -EALREADY;
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		if (dev->s.vring_set[q] &&
		    (fd_gone(dev->s.vring[q].kick_fd) || fd_gone(dev->s.vring[q].call_fd)))
			dev->s.order_errors++;
	if (!dev->s.has_features || !dev->s.nregions || !dev->s.vring_set[VSOCK_VQ_RX] ||
	    !dev->s.vring_set[VSOCK_VQ_TX]) {
		dev->s.order_errors++;
		return -EINVAL;
	}
	dev->s.started = true;
	dev->s.starts++;
	return 0;
}

int vsock_dev_stop(struct vsock_dev *dev, uint16_t last_avail[VSOCK_VQ_NUM])
{
	if (dev->s.started)
		dev->s.stops++;
	dev->s.started = false;
	if (last_avail)
		memcpy(last_avail, dev->s.stop_avail, sizeof(dev->s.stop_avail));
	return 0;
}

int vsock_dev_reset(struct vsock_dev *dev)
{
	dev->s.started = false;
	dev->s.has_features = false;
	dev->s.nregions = 0;
	memset(dev->s.vring_set, 0, sizeof(dev->s.vring_set));
	dev->s.resets++;
	return 0;
}

void vsock_dev_get_counters(const struct vsock_dev *dev, struct vsock_dev_counters *out)
{
	memset(out, 0, sizeof(*out));
	out->dev_resets = dev->s.resets;
}
