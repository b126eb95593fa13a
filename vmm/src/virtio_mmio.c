// SPDX-License-Identifier: MIT
/*
 * virtio-mmio version 2 transport (virtio 1.2 section 4.2.2, register
 * layout; Linux drivers/virtio/virtio_mmio.c is the driver on the other
 * side) in front of the vsock device model. The device is only ever touched
 * through include/skiff/vsock_dev.h:
 *
 *   Status 0 (reset)            -> vsock_dev_reset()
 *   Status |= FEATURES_OK       -> vsock_dev_set_features() (refused: the bit
 *                                  is not set, the driver sees it and fails)
 *   Status |= DRIVER_OK         -> vsock_dev_set_vring() per ready queue,
 *                                  vsock_dev_start(); on error NEEDS_RESET
 *   QueueNotify                 -> ioeventfd per queue (datamatch = index);
 *                                  a write that misses it is forwarded here
 *   device interrupt (notify)   -> InterruptStatus |= 1, irqfd
 *   config space reads          -> vsock_dev_read_config()
 */
#include "virtio_mmio.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skiff/sandbox_vsock.h"
#include "skiff/tiny_guest_abi.h"
#include "vm.h"

#ifndef SKIFF_HAVE_VSOCK

int virtio_mmio_vsock_create(struct vm *vm, uint64_t base, unsigned int irq,
			     struct virtio_mmio **out)
{
	return -ENOTSUP;
}

void virtio_mmio_destroy(struct virtio_mmio *d)
{
}

void virtio_mmio_counters(struct virtio_mmio *d, struct skiff_counters *out)
{
}

bool virtio_mmio_started(struct virtio_mmio *d)
{
	return false;
}

#else /* SKIFF_HAVE_VSOCK */

#include <linux/kvm.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "libskiff.h"
#include "skiff/vsock_dev.h"

_Static_assert(SKIFF_VSOCK_MAX_RX_THREADS == VSOCK_MAX_RX_THREADS,
	       "libskiff.h and vsock_dev.h disagree on the most RX pump threads");
_Static_assert((int)SKIFF_VSOCK_CTL_AUTO == (int)VSOCK_CTL_AUTO &&
		       (int)SKIFF_VSOCK_CTL_OWN == (int)VSOCK_CTL_OWN &&
		       (int)SKIFF_VSOCK_CTL_ON_PUMP0 == (int)VSOCK_CTL_ON_PUMP0,
	       "libskiff.h and vsock_dev.h disagree on the ctl_thread values");

#define VMMIO_VENDOR 0x46464b53 /* "SKFF" */
#define VMMIO_QUEUE_MAX 256

/* Device status bits, virtio 1.2 section 2.1. */
#define ST_ACKNOWLEDGE 1u
#define ST_DRIVER 2u
#define ST_DRIVER_OK 4u
#define ST_FEATURES_OK 8u
#define ST_NEEDS_RESET 0x40u
#define ST_FAILED 0x80u

#define INT_VRING 1u

struct vmmio_queue {
	uint16_t num;
	bool ready;
	uint64_t desc, driver, device; /* GPAs of descriptor table, avail and used rings */
};

struct virtio_mmio {
	struct vm *vm;
	uint64_t base;
	unsigned int irq;
	struct vsock_dev *dev;
	uint64_t dev_features; /* offered, fixed at create */
	int kick_fd[VSOCK_VQ_NUM]; /* ioeventfds, handed to the device as kick fds */
	bool kick_registered[VSOCK_VQ_NUM];
	int irq_fd; /* irqfd */
	bool irq_registered;
	_Atomic uint32_t isr; /* InterruptStatus; set by device threads, cleared by ACK */
	_Atomic uint64_t notify_exits;

	pthread_mutex_t lock; /* protects the register state below */
	uint32_t dev_features_sel, drv_features_sel, queue_sel;
	uint64_t drv_features; /* as written so far */
	uint64_t acked_features; /* accepted at FEATURES_OK */
	uint32_t status;
	bool started;
	unsigned int warned; /* guest-caused messages printed so far (only the first is) */
	struct vmmio_queue q[VSOCK_VQ_NUM];
};

/* Device thread context: never blocks, never takes the register lock. */
static void vmmio_notify(void *opaque, unsigned int queue)
{
	struct virtio_mmio *d = opaque;
	uint64_t one = 1;

	atomic_fetch_or(&d->isr, INT_VRING);
	if (write(d->irq_fd, &one, sizeof(one)) < 0) {
		/* eventfd counter overflow cannot happen with writes of 1 */
	}
}

static void set_hi_lo(uint64_t *v, bool hi, uint32_t val)
{
	if (hi)
		*v = (*v & 0xffffffffull) | ((uint64_t)val << 32);
	else
		*v = (*v & ~0xffffffffull) | val;
}

/* Called with d->lock held. */
static void __vmmio_reset(struct virtio_mmio *d)
{
	vsock_dev_reset(d->dev);
	d->started = false;
	d->status = 0;
	d->dev_features_sel = d->drv_features_sel = d->queue_sel = 0;
	d->drv_features = d->acked_features = 0;
	memset(d->q, 0, sizeof(d->q));
	atomic_store(&d->isr, 0);
}

/* DRIVER_OK: hand the queues to the device and start it. Called with d->lock held. */
static int __vmmio_start(struct virtio_mmio *d)
{
	struct vsock_mem_region region = { .gpa = d->vm->mem.base,
					   .size = d->vm->mem.size,
					   .hva = d->vm->mem.hva };
	unsigned int i;
	int err;

	/* A device reset forgets the memory table: give it again on every start. */
	err = vsock_dev_set_mem(d->dev, &region, 1);
	if (err)
		return err;
	for (i = 0; i < VSOCK_VQ_NUM; i++) {
		struct vsock_vring_config vc = {
			.num = d->q[i].num,
			.desc_gpa = d->q[i].desc,
			.avail_gpa = d->q[i].driver,
			.used_gpa = d->q[i].device,
			.last_avail_idx = 0,
			.kick_fd = d->kick_fd[i],
			.call_fd = -1,
		};

		if (!d->q[i].ready) {
			if (i == VSOCK_VQ_EVENT)
				continue;
			return -EINVAL;
		}
		err = vsock_dev_set_vring(d->dev, i, &vc);
		if (err)
			return err;
	}
	err = vsock_dev_start(d->dev);
	if (!err)
		d->started = true;
	return err;
}

/* Called with d->lock held. */
static void __vmmio_write_status(struct virtio_mmio *d, uint32_t v)
{
	uint32_t old = d->status;
	int err;

	if (!v) {
		__vmmio_reset(d);
		return;
	}
	if ((v & ST_FEATURES_OK) && !(old & ST_FEATURES_OK)) {
		err = -EINVAL;
		if (!(d->drv_features & ~d->dev_features))
			err = vsock_dev_set_features(d->dev, d->drv_features);
		if (err) {
			if (!d->warned++) /* guest-triggered: say it once per VM */
				fprintf(stderr,
					"skiff: virtio-mmio: driver features 0x%llx refused (%s)\n",
					(unsigned long long)d->drv_features, strerror(-err));
			v &= ~ST_FEATURES_OK;
		} else {
			d->acked_features = d->drv_features;
		}
	}
	if ((v & ST_DRIVER_OK) && !(old & ST_DRIVER_OK)) {
		err = (v & ST_FEATURES_OK) ? __vmmio_start(d) : -EINVAL;
		if (err) {
			if (!d->warned++)
				fprintf(stderr, "skiff: virtio-mmio: device start failed (%s)\n",
					strerror(-err));
			v |= ST_NEEDS_RESET;
		}
	}
	d->status = v;
}

/* Called with d->lock held. */
static uint32_t __vmmio_read(struct virtio_mmio *d, uint64_t off)
{
	const struct vmmio_queue *q = d->queue_sel < VSOCK_VQ_NUM ? &d->q[d->queue_sel] : NULL;

	switch (off) {
	case VMMIO_MAGIC:
		return VMMIO_MAGIC_VALUE;
	case VMMIO_VERSION:
		return 2;
	case VMMIO_DEVICE_ID:
		return VIRTIO_ID_VSOCK;
	case VMMIO_VENDOR_ID:
		return VMMIO_VENDOR;
	case VMMIO_DEV_FEATURES:
		return d->dev_features_sel < 2 ?
			       (uint32_t)(d->dev_features >> (32 * d->dev_features_sel)) :
			       0;
	case VMMIO_QUEUE_NUM_MAX:
		return q ? VMMIO_QUEUE_MAX : 0;
	case VMMIO_QUEUE_READY:
		return q ? q->ready : 0;
	case VMMIO_INT_STATUS:
		return atomic_load(&d->isr);
	case VMMIO_STATUS:
		return d->status;
	case VMMIO_SHM_LEN_LO:
	case VMMIO_SHM_LEN_HI:
	case VMMIO_SHM_BASE_LO:
	case VMMIO_SHM_BASE_HI:
		return 0xffffffffu; /* no shared memory regions */
	case VMMIO_CONFIG_GEN:
		return 0; /* the config space never changes */
	default:
		return 0;
	}
}

/* Called with d->lock held. */
static void __vmmio_write(struct virtio_mmio *d, uint64_t off, uint32_t v)
{
	struct vmmio_queue *q = d->queue_sel < VSOCK_VQ_NUM ? &d->q[d->queue_sel] : NULL;
	/* Queue layout is frozen once the queue is enabled or the driver is running. */
	bool q_writable = q && !q->ready && !(d->status & ST_DRIVER_OK);

	switch (off) {
	case VMMIO_DEV_FEATURES_SEL:
		d->dev_features_sel = v;
		break;
	case VMMIO_DRV_FEATURES_SEL:
		d->drv_features_sel = v;
		break;
	case VMMIO_DRV_FEATURES:
		if (d->drv_features_sel < 2 && !(d->status & ST_FEATURES_OK))
			set_hi_lo(&d->drv_features, d->drv_features_sel == 1, v);
		break;
	case VMMIO_QUEUE_SEL:
		d->queue_sel = v;
		break;
	case VMMIO_QUEUE_NUM:
		if (q_writable && v && v <= VMMIO_QUEUE_MAX && !(v & (v - 1)))
			q->num = (uint16_t)v;
		break;
	case VMMIO_QUEUE_READY:
		if (q && !(d->status & ST_DRIVER_OK))
			q->ready = v == 1 && q->num;
		break;
	case VMMIO_QUEUE_DESC_LO:
	case VMMIO_QUEUE_DESC_HI:
		if (q_writable)
			set_hi_lo(&q->desc, off == VMMIO_QUEUE_DESC_HI, v);
		break;
	case VMMIO_QUEUE_DRIVER_LO:
	case VMMIO_QUEUE_DRIVER_HI:
		if (q_writable)
			set_hi_lo(&q->driver, off == VMMIO_QUEUE_DRIVER_HI, v);
		break;
	case VMMIO_QUEUE_DEVICE_LO:
	case VMMIO_QUEUE_DEVICE_HI:
		if (q_writable)
			set_hi_lo(&q->device, off == VMMIO_QUEUE_DEVICE_HI, v);
		break;
	case VMMIO_INT_ACK:
		atomic_fetch_and(&d->isr, ~v);
		break;
	case VMMIO_STATUS:
		__vmmio_write_status(d, v);
		break;
	default:
		break; /* read-only or unknown: ignored */
	}
}

static void vmmio_access(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct virtio_mmio *d = opaque;
	uint64_t one = 1;
	uint32_t v;

	if (off >= VMMIO_CONFIG) {
		/* Device-specific config: any width; read-only for vsock. */
		if (!is_write &&
		    vsock_dev_read_config(d->dev, (uint32_t)(off - VMMIO_CONFIG), data, len))
			memset(data, 0, len);
		return;
	}
	if (len != 4 || (off & 3)) {
		if (!is_write)
			memset(data, 0, len);
		return; /* registers are 32-bit wide (virtio 1.2 4.2.2.2) */
	}
	v = (uint32_t)bus_get_le(data, 4);
	if (is_write && off == VMMIO_QUEUE_NOTIFY) {
		/* Only reached when the ioeventfd did not match: forward it. */
		atomic_fetch_add_explicit(&d->notify_exits, 1, memory_order_relaxed);
		if (v < VSOCK_VQ_NUM && write(d->kick_fd[v], &one, sizeof(one)) < 0) {
			/* cannot fail for an eventfd written with 1 */
		}
		return;
	}
	pthread_mutex_lock(&d->lock);
	if (is_write)
		__vmmio_write(d, off, v);
	else
		bus_put_le(data, 4, __vmmio_read(d, off));
	pthread_mutex_unlock(&d->lock);
}

/*
 * KVM wiring of the kick and interrupt eventfds. A vm without a KVM VM fd
 * (vm_fd < 0: the virtio-mmio fuzzer, which drives the MMIO bus itself and
 * reads the eventfds directly) has nothing to wire; libskiff never creates a
 * device before its VM fd exists.
 */
static int ioeventfd(struct virtio_mmio *d, unsigned int q, bool assign)
{
	struct kvm_ioeventfd io = {
		.datamatch = q,
		.addr = d->base + VMMIO_QUEUE_NOTIFY,
		.len = 4,
		.fd = d->kick_fd[q],
		.flags = KVM_IOEVENTFD_FLAG_DATAMATCH | (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
	};

	if (d->vm->vm_fd < 0)
		return 0;
	return ioctl(d->vm->vm_fd, KVM_IOEVENTFD, &io) < 0 ? -errno : 0;
}

static int irqfd(struct virtio_mmio *d, bool assign)
{
	struct kvm_irqfd irq = {
		.fd = (uint32_t)d->irq_fd,
		.gsi = d->irq,
		.flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN,
	};

	if (d->vm->vm_fd < 0)
		return 0;
	return ioctl(d->vm->vm_fd, KVM_IRQFD, &irq) < 0 ? -errno : 0;
}

int virtio_mmio_vsock_create(struct vm *vm, uint64_t base, unsigned int irq,
			     struct virtio_mmio **out)
{
	struct vsock_dev_config cfg = {
		.guest_cid = vm->cfg.vsock_cid,
		.uds_path = vm->cfg.vsock_uds,
		.group = vm->cfg.vsock_group,
		.rx_threads = vm->cfg.vsock_rx_threads,
		.ctl_thread = vm->cfg.vsock_ctl_thread, /* the same values */
		.mrg_rxbuf = vm->cfg.vsock_mrg_rxbuf,
		.dgram = vm->cfg.vsock_dgram,
		.conn_buf_size = vm->cfg.vsock_conn_buf,
	};
	struct vsock_mem_region region = { .gpa = vm->mem.base,
					   .size = vm->mem.size,
					   .hva = vm->mem.hva };
	struct virtio_mmio *d;
	unsigned int i;
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->vm = vm;
	d->base = base;
	d->irq = irq;
	d->irq_fd = -1;
	for (i = 0; i < VSOCK_VQ_NUM; i++)
		d->kick_fd[i] = -1;
	pthread_mutex_init(&d->lock, NULL);

	cfg.notify = vmmio_notify;
	cfg.notify_opaque = d;
	if (vm->cfg.seccomp)
		cfg.spawn = sandbox_vsock_spawn; /* device threads get their filters */
	err = vsock_dev_create(&cfg, &d->dev);
	if (err)
		goto err;
	d->dev_features = vsock_dev_features(d->dev);
	err = vsock_dev_set_mem(d->dev, &region, 1);
	if (err)
		goto err;
	for (i = 0; i < VSOCK_VQ_NUM; i++) {
		d->kick_fd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (d->kick_fd[i] < 0) {
			err = -errno;
			goto err;
		}
		err = ioeventfd(d, i, true);
		if (err)
			goto err;
		d->kick_registered[i] = true;
	}
	d->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->irq_fd < 0) {
		err = -errno;
		goto err;
	}
	err = irqfd(d, true);
	if (err)
		goto err;
	d->irq_registered = true;
	err = bus_add(&vm->mmio_bus, base, SKIFF_VIRTIO_MMIO_SIZE, vmmio_access, d);
	if (err)
		goto err;
	*out = d;
	return 0;
err:
	virtio_mmio_destroy(d);
	return err;
}

void virtio_mmio_destroy(struct virtio_mmio *d)
{
	unsigned int i;

	if (!d)
		return;
	/* Stops the device threads before their fds go away. */
	vsock_dev_destroy(d->dev);
	if (d->irq_registered)
		irqfd(d, false);
	if (d->irq_fd >= 0)
		close(d->irq_fd);
	for (i = 0; i < VSOCK_VQ_NUM; i++) {
		if (d->kick_registered[i])
			ioeventfd(d, i, false);
		if (d->kick_fd[i] >= 0)
			close(d->kick_fd[i]);
	}
	pthread_mutex_destroy(&d->lock);
	free(d);
}

bool virtio_mmio_started(struct virtio_mmio *d)
{
	bool started;

	pthread_mutex_lock(&d->lock);
	started = d->started;
	pthread_mutex_unlock(&d->lock);
	return started;
}

void virtio_mmio_counters(struct virtio_mmio *d, struct skiff_counters *out)
{
	struct vsock_dev_counters c;

	vsock_dev_get_counters(d->dev, &c);
	out->vsock_present = true;
	out->vsock_device_features = d->dev_features;
	pthread_mutex_lock(&d->lock);
	out->vsock_driver_features = d->acked_features;
	out->vsock_status = d->status;
	pthread_mutex_unlock(&d->lock);
	out->vsock_notify_exits = atomic_load(&d->notify_exits);
	out->vsock_tx_pkts = c.tx_pkts;
	out->vsock_tx_bytes = c.tx_bytes;
	out->vsock_rx_pkts = c.rx_pkts;
	out->vsock_rx_bytes = c.rx_bytes;
	out->vsock_kicks = c.kicks;
	out->vsock_irqs_sent = c.irqs_sent;
	out->vsock_irqs_suppressed = c.irqs_suppressed;
	out->vsock_conn_resets = c.conn_resets;
	out->vsock_dropped_pkts = c.dropped_pkts;
	out->vsock_malformed_pkts = c.malformed_pkts;
	out->vsock_conns_opened = c.conns_opened;
	out->vsock_conns_closed = c.conns_closed;
	out->vsock_dev_resets = c.dev_resets;
	out->vsock_conns_open = c.conns_open;
	out->vsock_host_fds = c.host_fds;
	out->vsock_conns_refused = c.conns_refused;
	out->vsock_stray_pkts = c.stray_pkts;
	out->vsock_rx_pkt_limit_stalls = c.rx_pkt_limit_stalls;
	out->vsock_dgram_tx_pkts = c.dgram_tx_pkts;
	out->vsock_dgram_tx_bytes = c.dgram_tx_bytes;
	out->vsock_dgram_tx_drop_malformed = c.dgram_tx_drop_malformed;
	out->vsock_dgram_tx_drop_no_dest = c.dgram_tx_drop_no_dest;
	out->vsock_dgram_tx_drop_full = c.dgram_tx_drop_full;
	out->vsock_dgram_tx_drop_err = c.dgram_tx_drop_err;
	out->vsock_dgram_rx_pkts = c.dgram_rx_pkts;
	out->vsock_dgram_rx_bytes = c.dgram_rx_bytes;
	out->vsock_dgram_rx_drop_no_buf = c.dgram_rx_drop_no_buf;
	out->vsock_dgram_rx_drop_too_big = c.dgram_rx_drop_too_big;
	out->vsock_dgram_rx_drop_bad_addr = c.dgram_rx_drop_bad_addr;
	out->vsock_dgram_rx_drop_err = c.dgram_rx_drop_err;
	out->vsock_dgram_rx_drop_no_dest = c.dgram_rx_drop_no_dest;
}

#endif /* SKIFF_HAVE_VSOCK */
