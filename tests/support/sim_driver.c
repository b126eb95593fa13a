// SPDX-License-Identifier: MIT
/*
 * Simulated virtio-vsock driver: guest memory, the driver side of the split
 * virtqueues (virtio 1.2 section 2.7) and the service thread.
 *
 * Memory layout, in the driver's linear view (one memfd, mapped once here
 * and once more per region for the device, so the device's HVAs are not
 * contiguous across the region boundary):
 *
 *   rings of the 3 queues | TX slots | RX slots | event slots | misc arena
 *
 * The chain whose head is descriptor h keeps its buffers (and indirect
 * table, at the slot's end) in slot h of its queue. Free descriptors are a
 * FIFO so heads, and hence slots, rotate.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sim_internal.h"

#define SIM_DEFAULT_QSIZE 256u
#define SIM_MISC_SIZE (16ull << 20)
#define SIM_EVT_BUFS 8u
#define SIM_PAGE 4096ull

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

const char *sim_shape_name(enum sim_shape shape)
{
	static const char *const names[SIM_SHAPE_NUM] = { "linear", "hdr_sep", "split",
							  "indirect" };
	return shape < SIM_SHAPE_NUM ? names[shape] : "?";
}

/* ---- memory ---- */

static uint64_t lin2gpa(const struct sim_drv *drv, uint64_t lin)
{
	return lin < drv->r0_size ? lin : lin + drv->gap;
}

static bool gpa2lin(const struct sim_drv *drv, uint64_t gpa, uint64_t len, uint64_t *lin)
{
	uint64_t l;

	if (gpa + len < gpa)
		return false;
	if (gpa < drv->r0_size) {
		l = gpa;
	} else if (gpa >= drv->r0_size + drv->gap) {
		l = gpa - drv->gap;
	} else {
		return false;
	}
	if (l + len > drv->lin_size)
		return false;
	/* a range crossing the hole is not guest memory */
	if (drv->gap && l < drv->r0_size && l + len > drv->r0_size)
		return false;
	*lin = l;
	return true;
}

void *sim_gpa_ptr(struct sim_drv *drv, uint64_t gpa, uint64_t len)
{
	uint64_t l;

	if (!gpa2lin(drv, gpa, len, &l))
		return NULL;
	return drv->lin + l;
}

uint64_t sim_alloc(struct sim_drv *drv, uint64_t len, uint64_t align)
{
	uint64_t at, gpa = 0;

	if (!align)
		align = 1;
	pthread_mutex_lock(&drv->lock);
	at = align_up(drv->misc_next, align);
	if (at + len <= drv->misc_end && at + len >= at) {
		drv->misc_next = at + len;
		gpa = lin2gpa(drv, at);
	}
	pthread_mutex_unlock(&drv->lock);
	return gpa;
}

const struct vsock_mem_region *sim_drv_regions(const struct sim_drv *drv, unsigned int *n)
{
	*n = drv->nregions;
	return drv->regions;
}

uint64_t sim_drv_mem_end(const struct sim_drv *drv)
{
	return lin2gpa(drv, drv->lin_size - 1) + 1;
}

uint64_t sim_drv_boundary_gpa(const struct sim_drv *drv)
{
	return drv->nregions == 2 ? drv->r0_size + drv->gap : 0;
}

uint64_t sim_drv_region0_end(const struct sim_drv *drv)
{
	return drv->r0_size;
}

static int map_regions(struct sim_drv *drv)
{
	void *a, *b;

	drv->lin = mmap(NULL, drv->lin_size, PROT_READ | PROT_WRITE, MAP_SHARED, drv->memfd, 0);
	if (drv->lin == MAP_FAILED)
		return -errno;
	if (drv->nregions == 1) {
		a = mmap(NULL, drv->lin_size, PROT_READ | PROT_WRITE, MAP_SHARED, drv->memfd, 0);
		if (a == MAP_FAILED)
			return -errno;
		drv->regions[0] = (struct vsock_mem_region){ 0, drv->lin_size, a };
		return 0;
	}
	a = mmap(NULL, drv->r0_size, PROT_READ | PROT_WRITE, MAP_SHARED, drv->memfd, 0);
	if (a == MAP_FAILED)
		return -errno;
	b = mmap(NULL, drv->lin_size - drv->r0_size, PROT_READ | PROT_WRITE, MAP_SHARED, drv->memfd,
		 (off_t)drv->r0_size);
	if (b == MAP_FAILED) {
		munmap(a, drv->r0_size);
		return -errno;
	}
	drv->regions[0] = (struct vsock_mem_region){ 0, drv->r0_size, a };
	drv->regions[1] = (struct vsock_mem_region){ drv->r0_size + drv->gap,
						     drv->lin_size - drv->r0_size, b };
	return 0;
}

/* ---- errors and waiting ---- */

void sim__proto_error(struct sim_drv *drv, const char *fmt, ...)
{
	va_list ap;

	drv->stats.proto_errors++;
	va_start(ap, fmt);
	vsnprintf(drv->last_error, sizeof(drv->last_error), fmt, ap);
	va_end(ap);
	if (getenv("SIM_DRV_VERBOSE"))
		fprintf(stderr, "sim_driver: %s\n", drv->last_error);
}

void sim_drv_last_error(struct sim_drv *drv, char *buf, size_t len)
{
	pthread_mutex_lock(&drv->lock);
	snprintf(buf, len, "%s", drv->last_error);
	pthread_mutex_unlock(&drv->lock);
}

void sim__deadline(struct timespec *ts, int timeout_ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	if (timeout_ms < 0)
		timeout_ms = 24 * 3600 * 1000;
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Wait on drv->cond until @deadline. Return: 0 or -ETIMEDOUT. */
int sim__wait(struct sim_drv *drv, const struct timespec *deadline)
{
	int rc = pthread_cond_timedwait(&drv->cond, &drv->lock, deadline);

	return rc == ETIMEDOUT ? -ETIMEDOUT : 0;
}

static void broadcast(struct sim_drv *drv)
{
	drv->changes++;
	pthread_cond_broadcast(&drv->cond);
}

/* ---- virtqueue, driver side ---- */

static uint16_t *used_event(struct sim_vq *vq)
{
	return &vq->avail->ring[vq->num];
}

static uint16_t *avail_event(struct sim_vq *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

static void vq_init_rings(struct sim_drv *drv, struct sim_vq *vq)
{
	unsigned int i;

	memset(vq->desc, 0, 16u * vq->num);
	memset(vq->avail, 0, 6u + 2u * vq->num);
	memset(vq->used, 0, 6u + 8u * vq->num);
	vq->avail_idx = vq->kicked_idx = vq->last_used = 0;
	vq->free_head = 0;
	vq->free_cnt = vq->num;
	for (i = 0; i < vq->num; i++) {
		vq->free_ring[i] = (uint16_t)i;
		vq->chains[i].kind = SIM_CH_FREE;
		vq->chains[i].done = false;
	}
	vq->inflight = 0;
	vq->suppress = false;
}

static int vq_alloc_desc(struct sim_vq *vq, uint16_t *out)
{
	if (!vq->free_cnt)
		return -ENOSPC;
	*out = vq->free_ring[vq->free_head];
	vq->free_head = (uint16_t)((vq->free_head + 1) & (vq->num - 1));
	vq->free_cnt--;
	return 0;
}

static void vq_free_desc(struct sim_vq *vq, uint16_t d)
{
	unsigned int tail = (vq->free_head + vq->free_cnt) & (vq->num - 1u);

	if (vq->lifo) {
		vq->free_head = (uint16_t)((vq->free_head - 1u) & (vq->num - 1u));
		vq->free_ring[vq->free_head] = d;
	} else {
		vq->free_ring[tail] = d;
	}
	vq->free_cnt++;
}

static void vq_free_chain(struct sim_vq *vq, uint16_t head)
{
	struct sim_chain *ch = &vq->chains[head];
	unsigned int i;

	/* LIFO: free the head last so that it is the next head again. */
	for (i = 0; i < ch->ndesc; i++)
		vq_free_desc(vq, ch->descs[vq->lifo ? ch->ndesc - 1 - i : i]);
	ch->ndesc = 0;
	ch->kind = SIM_CH_FREE;
	ch->done = false;
	vq->inflight--;
}

static void vq_publish(struct sim_vq *vq, uint16_t head)
{
	vq->avail->ring[vq->avail_idx & (vq->num - 1)] = head;
	vq->avail_idx++;
	__atomic_store_n(&vq->avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
	vq->inflight++;
}

/* Kick if the device asked for it (virtio 1.2 2.7.10, 2.7.7). */
static void vq_kick(struct sim_drv *drv, struct sim_vq *vq)
{
	uint16_t old = vq->kicked_idx, now = vq->avail_idx;
	bool need;
	uint64_t one = 1;

	if (old == now)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vq->kicked_idx = now;
	if (drv->features & (1ull << VIRTIO_RING_F_EVENT_IDX))
		need = vring_need_event(__atomic_load_n(avail_event(vq), __ATOMIC_ACQUIRE), now,
					old);
	else
		need = !(__atomic_load_n(&vq->used->flags, __ATOMIC_ACQUIRE) &
			 VRING_USED_F_NO_NOTIFY);
	if (!need) {
		drv->stats.kicks_suppressed++;
		return;
	}
	drv->stats.kicks_sent++;
	if (write(vq->kick_fd, &one, sizeof(one)) != sizeof(one))
		sim__proto_error(drv, "kick write failed: %s", strerror(errno));
}

/* Ask for (or suppress) interrupts; return true if used entries are pending. */
static bool vq_enable_cb(struct sim_drv *drv, struct sim_vq *vq)
{
	if (drv->features & (1ull << VIRTIO_RING_F_EVENT_IDX)) {
		uint16_t ev = vq->suppress ? (uint16_t)(vq->last_used + 0x7fff) : vq->last_used;

		__atomic_store_n(used_event(vq), ev, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&vq->avail->flags, vq->suppress ? VRING_AVAIL_F_NO_INTERRUPT : 0,
				 __ATOMIC_RELEASE);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) != vq->last_used;
}

/*
 * Lengths of the pieces of a chain of @shape carrying @hdr_len header bytes
 * then @body bytes, body cut in @chunk pieces. Return: count, or 0 if it
 * does not fit @max.
 */
static unsigned int shape_pieces(enum sim_shape shape, uint32_t hdr_len, uint32_t body,
				 uint32_t chunk, uint32_t *lens, unsigned int max)
{
	unsigned int n = 0;

	switch (shape) {
	case SIM_SHAPE_LINEAR:
		lens[n++] = hdr_len + body;
		return n;
	case SIM_SHAPE_HDR_SEP:
		lens[n++] = hdr_len;
		if (body)
			lens[n++] = body;
		return n;
	case SIM_SHAPE_SPLIT:
	case SIM_SHAPE_INDIRECT:
		if (hdr_len < 28)
			return 0;
		lens[n++] = 7;
		lens[n++] = 20;
		lens[n++] = hdr_len - 27;
		while (body) {
			uint32_t l = body < chunk ? body : chunk;

			if (n >= max)
				return 0;
			lens[n++] = l;
			body -= l;
		}
		return n;
	default:
		return 0;
	}
}

/*
 * Build a chain of pieces @lens in slot @head of @vq. The ring descriptors
 * come from the free list (the first one is @head, already taken).
 * Return: 0 or -ENOSPC / -EINVAL.
 */
static int vq_build(struct sim_drv *drv, struct sim_vq *vq, uint16_t head, enum sim_shape shape,
		    const uint32_t *lens, unsigned int n, bool writable)
{
	struct sim_chain *ch = &vq->chains[head];
	uint64_t at = vq->slot_lin + (uint64_t)head * vq->slot_size;
	uint64_t table = at + vq->slot_size - 16ull * vq->num;
	uint16_t wflag = writable ? VRING_DESC_F_WRITE : 0;
	unsigned int i;
	uint32_t cap = 0;

	ch->npieces = (uint16_t)n;
	for (i = 0; i < n; i++) {
		ch->pieces[i].lin = at;
		ch->pieces[i].len = lens[i];
		at += lens[i] + SIM_PIECE_GAP;
		cap += lens[i];
	}
	if (at > table)
		return -EINVAL;
	ch->cap = cap;
	ch->descs[0] = head;
	ch->ndesc = 1;
	if (shape == SIM_SHAPE_INDIRECT) {
		struct vring_desc *t = (struct vring_desc *)(drv->lin + table);

		for (i = 0; i < n; i++) {
			t[i].addr = lin2gpa(drv, ch->pieces[i].lin);
			t[i].len = ch->pieces[i].len;
			t[i].flags = (uint16_t)(wflag | (i + 1 < n ? VRING_DESC_F_NEXT : 0));
			t[i].next = (uint16_t)(i + 1 < n ? i + 1 : 0);
		}
		vq->desc[head].addr = lin2gpa(drv, table);
		vq->desc[head].len = 16u * n;
		vq->desc[head].flags = VRING_DESC_F_INDIRECT;
		vq->desc[head].next = 0;
		return 0;
	}
	if (n - 1 > vq->free_cnt)
		return -ENOSPC;
	for (i = 1; i < n; i++)
		vq_alloc_desc(vq, &ch->descs[i]);
	ch->ndesc = (uint16_t)n;
	for (i = 0; i < n; i++) {
		struct vring_desc *d = &vq->desc[ch->descs[i]];

		d->addr = lin2gpa(drv, ch->pieces[i].lin);
		d->len = ch->pieces[i].len;
		d->flags = (uint16_t)(wflag | (i + 1 < n ? VRING_DESC_F_NEXT : 0));
		d->next = i + 1 < n ? ch->descs[i + 1] : 0;
	}
	return 0;
}

/* Copy @len bytes of @src into the chain's pieces from byte @off on. */
static void chain_write(struct sim_drv *drv, const struct sim_chain *ch, uint32_t off,
			const void *src, uint32_t len)
{
	const uint8_t *s = src;
	unsigned int i;

	for (i = 0; i < ch->npieces && len; i++) {
		uint32_t pl = ch->pieces[i].len, l;

		if (off >= pl) {
			off -= pl;
			continue;
		}
		l = pl - off < len ? pl - off : len;
		memcpy(drv->lin + ch->pieces[i].lin + off, s, l);
		s += l;
		len -= l;
		off = 0;
	}
}

/* Gather up to @max iovecs for bytes [off, off + len) of a chain. */
static int chain_iov(struct sim_drv *drv, const struct sim_chain *ch, uint32_t off, uint32_t len,
		     struct iovec *iov, int max)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < ch->npieces && len && n < max; i++) {
		uint32_t pl = ch->pieces[i].len, l;

		if (off >= pl) {
			off -= pl;
			continue;
		}
		l = pl - off < len ? pl - off : len;
		iov[n].iov_base = drv->lin + ch->pieces[i].lin + off;
		iov[n].iov_len = l;
		n++;
		len -= l;
		off = 0;
	}
	return n;
}

static void chain_read(struct sim_drv *drv, const struct sim_chain *ch, uint32_t off, void *dst,
		       uint32_t len)
{
	struct iovec iov[64];
	uint8_t *d = dst;
	int i, n = chain_iov(drv, ch, off, len, iov, 64);

	for (i = 0; i < n; i++) {
		memcpy(d, iov[i].iov_base, iov[i].iov_len);
		d += iov[i].iov_len;
	}
}

/* ---- TX ---- */

unsigned int sim__tx_descs_needed(struct sim_drv *drv, enum sim_shape shape, uint32_t len)
{
	uint32_t chunk = drv->cfg.tx_chunk;

	switch (shape) {
	case SIM_SHAPE_LINEAR:
	case SIM_SHAPE_INDIRECT:
		return 1;
	case SIM_SHAPE_HDR_SEP:
		return len ? 2 : 1;
	default:
		return 3 + (len + chunk - 1) / chunk;
	}
}

int sim__tx_pkt(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const void *payload,
		uint32_t len, enum sim_shape shape)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_TX];
	uint32_t lens[512];
	unsigned int n;
	uint16_t head;
	int rc;

	if (!drv->attached)
		return -ENOTCONN;
	n = shape_pieces(shape, SIM_HDR_LEN, len, drv->cfg.tx_chunk, lens,
			 vq->num < 512 ? vq->num : 512);
	if (!n)
		return -EINVAL;
	if ((shape == SIM_SHAPE_INDIRECT ? 1 : n) > vq->free_cnt)
		return -ENOSPC;
	rc = vq_alloc_desc(vq, &head);
	if (rc)
		return rc;
	rc = vq_build(drv, vq, head, shape, lens, n, false);
	if (rc) {
		vq_free_desc(vq, head);
		return rc;
	}
	vq->chains[head].kind = SIM_CH_TX;
	chain_write(drv, &vq->chains[head], 0, hdr, SIM_HDR_LEN);
	if (len && payload)
		chain_write(drv, &vq->chains[head], SIM_HDR_LEN, payload, len);
	vq_publish(vq, head);
	drv->stats.tx_pkts++;
	drv->stats.tx_bytes += len;
	return head;
}

void sim__tx_kick(struct sim_drv *drv)
{
	vq_kick(drv, &drv->vq[VSOCK_VQ_TX]);
}

void sim__queue_ctl(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr)
{
	struct sim_ctl *c;

	if (drv->nctl >= SIM_CTL_MAX) {
		sim__proto_error(drv, "control packet queue overflow");
		return;
	}
	c = malloc(sizeof(*c));
	if (!c)
		return;
	c->hdr = *hdr;
	c->next = NULL;
	if (drv->ctl_tail)
		drv->ctl_tail->next = c;
	else
		drv->ctl_head = c;
	drv->ctl_tail = c;
	drv->nctl++;
	sim__flush_ctl(drv);
}

void sim__flush_ctl(struct sim_drv *drv)
{
	bool sent = false;

	while (drv->ctl_head && drv->attached && drv->vq[VSOCK_VQ_TX].free_cnt) {
		struct sim_ctl *c = drv->ctl_head;

		if (sim__tx_pkt(drv, &c->hdr, NULL, 0, drv->cfg.tx_shape) < 0)
			break;
		drv->ctl_head = c->next;
		if (!drv->ctl_head)
			drv->ctl_tail = NULL;
		drv->nctl--;
		free(c);
		sent = true;
	}
	if (sent)
		sim__tx_kick(drv);
}

static void free_ctl(struct sim_drv *drv)
{
	while (drv->ctl_head) {
		struct sim_ctl *c = drv->ctl_head;

		drv->ctl_head = c->next;
		free(c);
	}
	drv->ctl_tail = NULL;
	drv->nctl = 0;
}

void sim_hdr_init(struct sim_drv *drv, struct virtio_vsock_hdr *hdr, uint32_t src_port,
		  uint32_t dst_port, uint16_t type, uint16_t op)
{
	memset(hdr, 0, sizeof(*hdr));
	hdr->src_cid = drv->cfg.guest_cid;
	hdr->dst_cid = VSOCK_CID_HOST;
	hdr->src_port = src_port;
	hdr->dst_port = dst_port;
	hdr->type = type;
	hdr->op = op;
}

int sim_send_pkt(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr, const void *payload,
		 uint32_t len, enum sim_shape shape, int timeout_ms)
{
	struct timespec dl;
	int rc;

	if (len > SIM_MAX_RAW_PAYLOAD || shape >= SIM_SHAPE_NUM)
		return -EINVAL;
	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	for (;;) {
		rc = sim__tx_pkt(drv, hdr, payload, len, shape);
		if (rc != -ENOSPC)
			break;
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	if (rc >= 0)
		sim__tx_kick(drv);
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_wait_tx_idle(struct sim_drv *drv, int timeout_ms)
{
	struct timespec dl;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (drv->vq[VSOCK_VQ_TX].inflight || drv->ctl_head) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

void sim_drv_set_tx_shape(struct sim_drv *drv, enum sim_shape shape)
{
	if (shape >= SIM_SHAPE_NUM)
		return;
	pthread_mutex_lock(&drv->lock);
	drv->cfg.tx_shape = shape;
	pthread_mutex_unlock(&drv->lock);
}

/* ---- raw chains ---- */

int sim_raw_chain(struct sim_drv *drv, unsigned int q, const struct sim_raw_desc *d, unsigned int n)
{
	struct sim_vq *vq;
	struct sim_chain *ch;
	uint16_t idx[1024];
	unsigned int i;
	int rc;

	if (q >= VSOCK_VQ_NUM || !n || n > 1024)
		return -EINVAL;
	pthread_mutex_lock(&drv->lock);
	vq = &drv->vq[q];
	rc = -ENOTCONN;
	if (!drv->attached)
		goto out;
	rc = -ENOSPC;
	if (n > vq->free_cnt)
		goto out;
	for (i = 0; i < n; i++)
		vq_alloc_desc(vq, &idx[i]);
	for (i = 0; i < n; i++) {
		struct vring_desc *vd = &vq->desc[idx[i]];
		int32_t nx = d[i].next;

		vd->addr = d[i].gpa;
		vd->len = d[i].len;
		vd->flags = d[i].flags;
		if (nx == SIM_NEXT_AUTO)
			vd->next = i + 1 < n ? idx[i + 1] : 0;
		else if (nx >= 0x10000 && (unsigned int)(nx - 0x10000) < n)
			vd->next = idx[nx - 0x10000];
		else
			vd->next = (uint16_t)nx;
	}
	ch = &vq->chains[idx[0]];
	memcpy(ch->descs, idx, n * sizeof(idx[0]));
	ch->ndesc = (uint16_t)n;
	ch->npieces = 0;
	ch->cap = 0;
	ch->kind = SIM_CH_RAW;
	ch->done = false;
	vq_publish(vq, idx[0]);
	if (q == VSOCK_VQ_TX)
		drv->stats.tx_pkts++;
	vq_kick(drv, vq);
	rc = idx[0];
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

int sim_raw_wait(struct sim_drv *drv, unsigned int q, int head, uint32_t *used_len, int timeout_ms)
{
	struct timespec dl;
	struct sim_vq *vq;
	int rc = 0;

	if (q >= VSOCK_VQ_NUM || head < 0)
		return -EINVAL;
	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	vq = &drv->vq[q];
	if (head >= vq->num || vq->chains[head].kind != SIM_CH_RAW) {
		rc = -EINVAL;
		goto out;
	}
	while (!vq->chains[head].done) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			goto out;
		}
	}
	if (used_len)
		*used_len = vq->chains[head].used_len;
	vq_free_chain(vq, (uint16_t)head);
	broadcast(drv);
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

/* ---- stray packets ---- */

bool sim__pktq_add(struct sim_pktq *q, unsigned int max, const struct virtio_vsock_hdr *hdr,
		   const struct iovec *iov, int iovcnt, uint32_t len)
{
	struct sim_stray *s;
	uint8_t *p;
	int i;

	if (q->n >= max)
		return false;
	s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	s->pkt.hdr = *hdr;
	s->pkt.payload = malloc(len ? len : 1);
	if (!s->pkt.payload) {
		free(s);
		return false;
	}
	p = s->pkt.payload;
	for (i = 0; i < iovcnt; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	s->pkt.num_buffers = 1;
	if (q->tail)
		q->tail->next = s;
	else
		q->head = s;
	q->tail = s;
	q->n++;
	return true;
}

void sim__stray_add(struct sim_drv *drv, const struct virtio_vsock_hdr *hdr,
		    const struct iovec *iov, int iovcnt, uint32_t len)
{
	drv->stats.stray_pkts++;
	sim__pktq_add(&drv->stray, SIM_STRAY_MAX, hdr, iov, iovcnt, len);
}

void sim_pkt_free(struct sim_pkt *pkt)
{
	free(pkt->payload);
	pkt->payload = NULL;
}

int sim__pktq_recv(struct sim_drv *drv, struct sim_pktq *q, struct sim_pkt *pkt, int timeout_ms)
{
	struct timespec dl;
	struct sim_stray *s;
	int rc = 0;

	sim__deadline(&dl, timeout_ms);
	pthread_mutex_lock(&drv->lock);
	while (!q->head) {
		if (sim__wait(drv, &dl)) {
			rc = -ETIMEDOUT;
			goto out;
		}
	}
	s = q->head;
	q->head = s->next;
	if (!q->head)
		q->tail = NULL;
	q->n--;
	*pkt = s->pkt;
	free(s);
out:
	pthread_mutex_unlock(&drv->lock);
	return rc;
}

unsigned int sim__pktq_flush(struct sim_drv *drv, struct sim_pktq *q)
{
	unsigned int n = 0;

	pthread_mutex_lock(&drv->lock);
	while (q->head) {
		struct sim_stray *s = q->head;

		q->head = s->next;
		free(s->pkt.payload);
		free(s);
		n++;
	}
	q->tail = NULL;
	q->n = 0;
	pthread_mutex_unlock(&drv->lock);
	return n;
}

int sim_pkt_recv(struct sim_drv *drv, struct sim_pkt *pkt, int timeout_ms)
{
	return sim__pktq_recv(drv, &drv->stray, pkt, timeout_ms);
}

unsigned int sim_pkt_flush(struct sim_drv *drv)
{
	return sim__pktq_flush(drv, &drv->stray);
}

/* ---- RX ---- */

static int rx_post_one(struct sim_drv *drv)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_RX];
	uint32_t lens[512];
	unsigned int n;
	uint16_t head;
	int rc;

	n = shape_pieces(drv->cfg.rx_shape, drv->rx_hdr_len, drv->cfg.rx_buf_size - drv->rx_hdr_len,
			 drv->cfg.rx_chunk, lens, vq->num < 512 ? vq->num : 512);
	if (!n)
		return -EINVAL;
	if ((drv->cfg.rx_shape == SIM_SHAPE_INDIRECT ? 1 : n) > vq->free_cnt)
		return -ENOSPC;
	rc = vq_alloc_desc(vq, &head);
	if (rc)
		return rc;
	rc = vq_build(drv, vq, head, drv->cfg.rx_shape, lens, n, true);
	if (rc) {
		vq_free_desc(vq, head);
		return rc;
	}
	vq->chains[head].kind = SIM_CH_RX;
	vq_publish(vq, head);
	drv->rx_posted++;
	return 0;
}

static void rx_fill(struct sim_drv *drv, unsigned int max)
{
	while (max-- && drv->rx_posted < drv->rx_target)
		if (rx_post_one(drv))
			break;
}

/* The driver's automatic refill: Linux 6.1's rule unless cfg.rx_refill_eager. */
static bool rx_refill_due(const struct sim_drv *drv)
{
	return drv->refill && (drv->cfg.rx_refill_eager || drv->rx_posted < drv->rx_target / 2);
}

/* Check a used element; return its chain or NULL (counted as an error). */
static struct sim_chain *used_chain(struct sim_drv *drv, struct sim_vq *vq, unsigned int q,
				    uint16_t pos, uint32_t *len)
{
	struct vring_used_elem e = vq->used->ring[pos & (vq->num - 1)];

	*len = e.len;
	if (e.id >= vq->num || vq->chains[e.id].kind == SIM_CH_FREE || vq->chains[e.id].done) {
		sim__proto_error(drv, "queue %u: used id %u is not in flight", q, e.id);
		return NULL;
	}
	return &vq->chains[e.id];
}

static void rx_release(struct sim_drv *drv, struct sim_vq *vq, struct sim_chain *ch)
{
	uint16_t head = ch->descs[0];

	vq_free_chain(vq, head);
	drv->rx_posted--;
	drv->stats.rx_chains++;
}

/*
 * Parse one packet at the used ring's tail. Return: 1 consumed, 0 need more
 * used entries (MRG packet not complete yet).
 */
static int rx_one(struct sim_drv *drv, uint16_t avail)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_RX];
	struct virtio_vsock_mrg_hdr mh;
	struct sim_chain *ch, *more;
	uint32_t len, l2, total;
	unsigned int nb = 1, k;
	int iovcnt;

	ch = used_chain(drv, vq, 0, vq->last_used, &len);
	if (!ch) {
		vq->last_used++;
		return 1;
	}
	if (ch->kind == SIM_CH_RAW) {
		ch->done = true;
		ch->used_len = len;
		vq->last_used++;
		return 1;
	}
	if (len == 0) {
		/* a buffer given back unused (device stop); Linux drops it too */
		drv->stats.rx_empty++;
		rx_release(drv, vq, ch);
		vq->last_used++;
		return 1;
	}
	if (len > ch->cap || len < drv->rx_hdr_len) {
		sim__proto_error(drv, "rx: used len %u outside [%u, %u]", len, drv->rx_hdr_len,
				 ch->cap);
		rx_release(drv, vq, ch);
		vq->last_used++;
		return 1;
	}
	memset(&mh, 0, sizeof(mh));
	chain_read(drv, ch, 0, &mh, drv->rx_hdr_len);
	if (drv->mrg) {
		nb = mh.num_buffers;
		if (nb == 0 || nb > vq->num) {
			sim__proto_error(drv, "rx: num_buffers %u", nb);
			rx_release(drv, vq, ch);
			vq->last_used++;
			return 1;
		}
		if (avail < nb)
			return 0;
	} else {
		mh.num_buffers = 1;
	}
	total = len - drv->rx_hdr_len;
	iovcnt = chain_iov(drv, ch, drv->rx_hdr_len, total, drv->iov, SIM_MAX_IOV);
	for (k = 1; k < nb; k++) {
		more = used_chain(drv, vq, 0, (uint16_t)(vq->last_used + k), &l2);
		if (!more || more->kind != SIM_CH_RX || l2 > more->cap || !l2) {
			sim__proto_error(drv, "rx: buffer %u/%u of a merged packet is bad (len %u)",
					 k + 1, nb, l2);
			break;
		}
		iovcnt += chain_iov(drv, more, 0, l2, drv->iov + iovcnt, SIM_MAX_IOV - iovcnt);
		total += l2;
	}
	if (k == nb) {
		if (mh.hdr.len != total)
			sim__proto_error(drv, "rx: hdr.len %u but %u payload bytes (op %u)",
					 mh.hdr.len, total, mh.hdr.op);
		else if (total > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE)
			sim__proto_error(drv, "rx: payload %u over 64 KiB", total);
		else {
			if (nb > drv->stats.max_num_buffers)
				drv->stats.max_num_buffers = nb;
			if (total > drv->stats.max_rx_payload)
				drv->stats.max_rx_payload = total;
			drv->stats.rx_pkts++;
			drv->stats.rx_bytes += total;
			sim__dispatch(drv, &mh.hdr, drv->iov, iovcnt, total);
		}
	}
	/* release every chain the packet claimed that is really an RX chain */
	for (k = 0; k < nb; k++) {
		more = used_chain(drv, vq, 0, vq->last_used, &l2);
		vq->last_used++;
		if (more && more->kind == SIM_CH_RX)
			rx_release(drv, vq, more);
		else if (more && more->kind == SIM_CH_RAW) {
			more->done = true;
			more->used_len = l2;
		}
	}
	return 1;
}

static unsigned int rx_process(struct sim_drv *drv)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_RX];
	unsigned int done = 0;

	for (;;) {
		uint16_t avail = (uint16_t)(__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) -
					    vq->last_used);

		if (!avail)
			break;
		if (avail > vq->num) {
			sim__proto_error(drv, "rx: used idx ran %u ahead", avail);
			break;
		}
		if (!rx_one(drv, avail))
			break;
		done++;
		/* Linux 6.1 refills only after the whole run (the main loop). */
		if (drv->refill && drv->cfg.rx_refill_eager && !(done & 15)) {
			rx_fill(drv, 16);
			vq_kick(drv, vq);
		}
	}
	if (done)
		sim__sink_read_ends(drv);
	return done;
}

static unsigned int tx_process(struct sim_drv *drv)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_TX];
	unsigned int done = 0;

	while (__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) != vq->last_used) {
		uint32_t len;
		struct sim_chain *ch = used_chain(drv, vq, 1, vq->last_used, &len);

		vq->last_used++;
		done++;
		if (!ch)
			continue;
		if (ch->kind == SIM_CH_RAW) {
			ch->done = true;
			ch->used_len = len;
			continue;
		}
		if (len)
			sim__proto_error(drv, "tx: used len %u for a read-only chain", len);
		vq_free_chain(vq, ch->descs[0]);
	}
	return done;
}

static int evt_post_one(struct sim_drv *drv)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_EVENT];
	uint32_t len = sizeof(struct virtio_vsock_event);
	uint16_t head;
	int rc = vq_alloc_desc(vq, &head);

	if (rc)
		return rc;
	rc = vq_build(drv, vq, head, SIM_SHAPE_LINEAR, &len, 1, true);
	if (rc) {
		vq_free_desc(vq, head);
		return rc;
	}
	vq->chains[head].kind = SIM_CH_EVT;
	vq_publish(vq, head);
	return 0;
}

static unsigned int evt_process(struct sim_drv *drv)
{
	struct sim_vq *vq = &drv->vq[VSOCK_VQ_EVENT];
	unsigned int done = 0;

	while (__atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE) != vq->last_used) {
		struct virtio_vsock_event ev;
		uint32_t len;
		struct sim_chain *ch = used_chain(drv, vq, 2, vq->last_used, &len);

		vq->last_used++;
		done++;
		if (!ch)
			continue;
		if (ch->kind == SIM_CH_RAW) {
			ch->done = true;
			ch->used_len = len;
			continue;
		}
		if (len != sizeof(ev)) {
			sim__proto_error(drv, "event: used len %u", len);
		} else {
			chain_read(drv, ch, 0, &ev, sizeof(ev));
			drv->stats.events++;
			if (ev.id == VIRTIO_VSOCK_EVENT_TRANSPORT_RESET)
				sim__reset_all_conns(drv);
			else
				sim__proto_error(drv, "event: unknown id %u", ev.id);
		}
		vq_free_chain(vq, ch->descs[0]);
		evt_post_one(drv);
	}
	if (done)
		vq_kick(drv, vq);
	return done;
}

void sim_rx_set_refill(struct sim_drv *drv, bool on)
{
	pthread_mutex_lock(&drv->lock);
	drv->refill = on;
	if (on && drv->attached) {
		rx_fill(drv, ~0u);
		vq_kick(drv, &drv->vq[VSOCK_VQ_RX]);
	}
	pthread_mutex_unlock(&drv->lock);
}

int sim_rx_refill(struct sim_drv *drv, unsigned int n)
{
	unsigned int i;
	int rc = 0;

	pthread_mutex_lock(&drv->lock);
	for (i = 0; i < n && drv->attached; i++) {
		rc = rx_post_one(drv);
		if (rc)
			break;
	}
	if (drv->attached)
		vq_kick(drv, &drv->vq[VSOCK_VQ_RX]);
	pthread_mutex_unlock(&drv->lock);
	return i ? (int)i : rc;
}

unsigned int sim_rx_posted(struct sim_drv *drv)
{
	unsigned int n;

	pthread_mutex_lock(&drv->lock);
	n = drv->rx_posted;
	pthread_mutex_unlock(&drv->lock);
	return n;
}

void sim_vq_suppress_irq(struct sim_drv *drv, unsigned int q, bool suppress)
{
	if (q >= VSOCK_VQ_NUM)
		return;
	pthread_mutex_lock(&drv->lock);
	drv->vq[q].suppress = suppress;
	if (drv->attached)
		vq_enable_cb(drv, &drv->vq[q]);
	pthread_mutex_unlock(&drv->lock);
	uint64_t one = 1;

	if (write(drv->wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* ---- service thread ---- */

void sim_drv_notify(void *opaque, unsigned int queue)
{
	struct sim_drv *drv = opaque;
	uint64_t one = 1;

	if (queue < VSOCK_VQ_NUM && write(drv->vq[queue].irq_fd, &one, sizeof(one)) < 0)
		return;
}

static void *service_thread(void *arg)
{
	struct sim_drv *drv = arg;
	struct pollfd p[VSOCK_VQ_NUM + 1];
	unsigned int q;

	pthread_setname_np(pthread_self(), "sim-drv");
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		p[q] = (struct pollfd){ .fd = drv->vq[q].irq_fd, .events = POLLIN };
	p[VSOCK_VQ_NUM] = (struct pollfd){ .fd = drv->wake_fd, .events = POLLIN };

	pthread_mutex_lock(&drv->lock);
	while (!drv->stop) {
		bool again, polling = false;
		uint64_t v;

		for (q = 0; q < VSOCK_VQ_NUM; q++)
			polling |= drv->vq[q].suppress;
		pthread_mutex_unlock(&drv->lock);
		poll(p, VSOCK_VQ_NUM + 1, polling ? 10 : -1);
		pthread_mutex_lock(&drv->lock);
		for (q = 0; q <= VSOCK_VQ_NUM; q++) {
			if (!(p[q].revents & POLLIN) || read(p[q].fd, &v, sizeof(v)) != sizeof(v))
				continue;
			if (q < VSOCK_VQ_NUM) {
				drv->stats.irqs += v;
				drv->stats.irqs_per_q[q] += v;
			}
		}
		if (drv->stop)
			break;
		do {
			tx_process(drv);
			rx_process(drv);
			evt_process(drv);
			if (rx_refill_due(drv))
				rx_fill(drv, ~0u);
			vq_kick(drv, &drv->vq[VSOCK_VQ_RX]);
			sim__flush_ctl(drv);
			broadcast(drv);
			again = false;
			for (q = 0; q < VSOCK_VQ_NUM; q++)
				again |= vq_enable_cb(drv, &drv->vq[q]);
		} while (again && !drv->stop);
	}
	pthread_mutex_unlock(&drv->lock);
	return NULL;
}

static void stop_thread(struct sim_drv *drv)
{
	uint64_t one = 1;

	if (!drv->thread_running)
		return;
	pthread_mutex_lock(&drv->lock);
	drv->stop = true;
	pthread_mutex_unlock(&drv->lock);
	if (write(drv->wake_fd, &one, sizeof(one)) < 0)
		perror("sim_driver: wake");
	pthread_join(drv->thread, NULL);
	drv->thread_running = false;
	drv->stop = false;
}

/* ---- life cycle ---- */

#define SIM_ALL_FEATURES                                                           \
	((1ull << VIRTIO_F_VERSION_1) | (1ull << VIRTIO_RING_F_EVENT_IDX) |        \
	 (1ull << VIRTIO_RING_F_INDIRECT_DESC) | (1ull << VIRTIO_VSOCK_F_STREAM) | \
	 (1ull << VIRTIO_VSOCK_F_SEQPACKET) | (1ull << VIRTIO_VSOCK_F_MRG_RXBUF) | \
	 (1ull << VIRTIO_VSOCK_F_DGRAM))

/* Driver-side state of @vq; its ring offsets were laid out by sim_drv_create(). */
static int alloc_vq(struct sim_vq *vq, uint16_t num, uint64_t slot_lin, uint32_t slot_size)
{
	unsigned int i;

	vq->num = num;
	vq->slot_lin = slot_lin;
	vq->slot_size = slot_size;
	vq->free_ring = calloc(num, sizeof(uint16_t));
	vq->chains = calloc(num, sizeof(struct sim_chain));
	if (!vq->free_ring || !vq->chains)
		return -ENOMEM;
	for (i = 0; i < num; i++) {
		vq->chains[i].descs = calloc(num, sizeof(uint16_t));
		vq->chains[i].pieces = calloc(num, sizeof(struct sim_piece));
		if (!vq->chains[i].descs || !vq->chains[i].pieces)
			return -ENOMEM;
	}
	vq->kick_fd = eventfd(0, EFD_CLOEXEC);
	vq->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vq->kick_fd < 0 || vq->irq_fd < 0)
		return -errno;
	return 0;
}

static void free_vq(struct sim_vq *vq)
{
	unsigned int i;

	if (vq->chains)
		for (i = 0; i < vq->num; i++) {
			free(vq->chains[i].descs);
			free(vq->chains[i].pieces);
		}
	free(vq->chains);
	free(vq->free_ring);
	if (vq->kick_fd > 0)
		close(vq->kick_fd);
	if (vq->irq_fd > 0)
		close(vq->irq_fd);
}

int sim_drv_create(const struct sim_drv_config *cfg, struct sim_drv **out)
{
	struct sim_drv *drv;
	pthread_condattr_t ca;
	uint64_t off = 0, tx_slot, rx_slot, evt_slot, tx_lin, rx_lin, evt_lin;
	uint16_t num;
	unsigned int q;
	int rc;

	drv = calloc(1, sizeof(*drv));
	if (!drv)
		return -ENOMEM;
	drv->cfg = *cfg;
	drv->memfd = drv->wake_fd = -1;
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		drv->vq[q].kick_fd = drv->vq[q].irq_fd = -1;
	if (!drv->cfg.guest_cid)
		drv->cfg.guest_cid = 3;
	if (!drv->cfg.queue_size)
		drv->cfg.queue_size = SIM_DEFAULT_QSIZE;
	if (!drv->cfg.features)
		drv->cfg.features = SIM_ALL_FEATURES;
	if (!drv->cfg.nregions)
		drv->cfg.nregions = 1;
	if (!drv->cfg.buf_alloc)
		drv->cfg.buf_alloc = 256u * 1024u;
	if (!drv->cfg.tx_chunk)
		drv->cfg.tx_chunk = 1024;
	if (!drv->cfg.rx_chunk)
		drv->cfg.rx_chunk = 1024;
	if (!drv->cfg.tx_pkt_max || drv->cfg.tx_pkt_max > VIRTIO_VSOCK_MAX_PKT_BUF_SIZE)
		drv->cfg.tx_pkt_max = VIRTIO_VSOCK_MAX_PKT_BUF_SIZE;
	num = drv->cfg.queue_size;
	rc = -EINVAL;
	if ((num & (num - 1)) || num > 1024 || num < 8 || drv->cfg.nregions > 2 ||
	    drv->cfg.tx_shape >= SIM_SHAPE_NUM || drv->cfg.rx_shape >= SIM_SHAPE_NUM ||
	    drv->cfg.rx_buf_size > SIM_MAX_RAW_PAYLOAD ||
	    (drv->cfg.rx_buf_size && drv->cfg.rx_buf_size <= SIM_MRG_HDR_LEN + 1))
		goto err;
	drv->nregions = drv->cfg.nregions;
	drv->iov = calloc(SIM_MAX_IOV, sizeof(struct iovec));
	rc = -ENOMEM;
	if (!drv->iov)
		goto err;

	tx_slot = align_up(SIM_MAX_RAW_PAYLOAD + SIM_MRG_HDR_LEN + (num + 4ull) * SIM_PIECE_GAP +
				   16ull * num,
			   SIM_PAGE);
	rx_slot = align_up((drv->cfg.rx_buf_size ? drv->cfg.rx_buf_size : 4096 + SIM_HDR_LEN) +
				   (num + 4ull) * SIM_PIECE_GAP + 16ull * num,
			   SIM_PAGE);
	evt_slot = align_up(64 + 16ull * num, 64);
	for (q = 0; q < VSOCK_VQ_NUM; q++) {
		drv->vq[q].num = num;
		drv->vq[q].desc_lin = align_up(off, SIM_PAGE);
		drv->vq[q].avail_lin = drv->vq[q].desc_lin + 16ull * num;
		drv->vq[q].used_lin = align_up(drv->vq[q].avail_lin + 6 + 2ull * num, SIM_PAGE);
		off = align_up(drv->vq[q].used_lin + 6 + 8ull * num, SIM_PAGE);
	}
	tx_lin = off;
	rx_lin = tx_lin + tx_slot * num;
	evt_lin = rx_lin + rx_slot * num;
	drv->misc_lin = align_up(evt_lin + evt_slot * num, SIM_PAGE);
	drv->misc_next = drv->misc_lin;
	drv->misc_end = drv->misc_lin + SIM_MISC_SIZE;
	drv->lin_size = drv->misc_end;
	drv->r0_size = drv->lin_size;
	if (drv->nregions == 2) {
		drv->gap = drv->cfg.region_gap;
		drv->r0_size = drv->gap ? rx_lin : tx_lin + tx_slot * (num / 2) + SIM_PAGE;
	}

	drv->memfd = memfd_create("skiff-sim-guest", MFD_CLOEXEC);
	if (drv->memfd < 0 || ftruncate(drv->memfd, (off_t)drv->lin_size) < 0) {
		rc = -errno;
		goto err;
	}
	rc = map_regions(drv);
	if (rc)
		goto err;
	for (q = 0; q < VSOCK_VQ_NUM; q++) {
		uint64_t sl = q == VSOCK_VQ_TX ? tx_lin : q == VSOCK_VQ_RX ? rx_lin : evt_lin;
		uint64_t ss = q == VSOCK_VQ_TX ? tx_slot : q == VSOCK_VQ_RX ? rx_slot : evt_slot;
		struct sim_vq *vq = &drv->vq[q];

		rc = alloc_vq(vq, num, sl, (uint32_t)ss);
		if (rc)
			goto err;
		vq->lifo = drv->cfg.lifo_descs;
		vq->desc = (struct vring_desc *)(drv->lin + vq->desc_lin);
		vq->avail = (struct vring_avail *)(drv->lin + vq->avail_lin);
		vq->used = (struct vring_used *)(drv->lin + vq->used_lin);
	}
	drv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (drv->wake_fd < 0) {
		rc = -errno;
		goto err;
	}
	pthread_mutex_init(&drv->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&drv->cond, &ca);
	pthread_condattr_destroy(&ca);
	drv->next_port = 49152;
	drv->refill = !drv->cfg.no_rx_refill;
	*out = drv;
	return 0;
err:
	sim_drv_destroy(drv);
	return rc;
}

void sim_drv_destroy(struct sim_drv *drv)
{
	unsigned int q;

	if (!drv)
		return;
	stop_thread(drv);
	if (drv->lin) {
		pthread_mutex_lock(&drv->lock);
		sim__free_all_conns(drv);
		free_ctl(drv);
		pthread_mutex_unlock(&drv->lock);
		sim_pkt_flush(drv);
		sim_dgram_flush(drv);
		pthread_mutex_destroy(&drv->lock);
		pthread_cond_destroy(&drv->cond);
	}
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		free_vq(&drv->vq[q]);
	for (q = 0; q < drv->nregions; q++)
		if (drv->regions[q].hva)
			munmap(drv->regions[q].hva, drv->regions[q].size);
	if (drv->lin && drv->lin != MAP_FAILED)
		munmap(drv->lin, drv->lin_size);
	if (drv->memfd >= 0)
		close(drv->memfd);
	if (drv->wake_fd >= 0)
		close(drv->wake_fd);
	free(drv->iov);
	free(drv);
}

int sim_drv_attach(struct sim_drv *drv, struct vsock_dev *dev)
{
	struct vsock_vring_config vr;
	unsigned int q, per_chain;
	uint32_t lens[512];
	int rc;

	if (drv->attached)
		return -EALREADY;
	drv->dev = dev;
	drv->features = vsock_dev_features(dev) & drv->cfg.features;
	drv->mrg = drv->features & (1ull << VIRTIO_VSOCK_F_MRG_RXBUF);
	drv->rx_hdr_len = drv->mrg ? SIM_MRG_HDR_LEN : SIM_HDR_LEN;
	if (!drv->cfg.rx_buf_size)
		drv->cfg.rx_buf_size = drv->mrg ? 4096 : 4096 + SIM_HDR_LEN;
	if (!(drv->features & (1ull << VIRTIO_F_VERSION_1)))
		return -ENOTSUP;
	rc = vsock_dev_set_features(dev, drv->features);
	if (rc)
		return rc;
	rc = vsock_dev_set_mem(dev, drv->regions, drv->nregions);
	if (rc)
		return rc;
	pthread_mutex_lock(&drv->lock);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		vq_init_rings(drv, &drv->vq[q]);
	drv->rx_posted = 0;
	per_chain = drv->cfg.rx_shape == SIM_SHAPE_INDIRECT ?
			    1 :
			    shape_pieces(drv->cfg.rx_shape, drv->rx_hdr_len,
					 drv->cfg.rx_buf_size - drv->rx_hdr_len, drv->cfg.rx_chunk,
					 lens, 512);
	if (!per_chain) {
		pthread_mutex_unlock(&drv->lock);
		return -EINVAL;
	}
	drv->rx_target = drv->vq[VSOCK_VQ_RX].num / per_chain;
	if (drv->cfg.rx_bufs && drv->cfg.rx_bufs < drv->rx_target)
		drv->rx_target = drv->cfg.rx_bufs;
	if (!drv->cfg.rx_start_empty)
		rx_fill(drv, ~0u);
	for (q = 0; q < SIM_EVT_BUFS; q++)
		evt_post_one(drv);
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		vq_enable_cb(drv, &drv->vq[q]);
	pthread_mutex_unlock(&drv->lock);

	for (q = 0; q < VSOCK_VQ_NUM; q++) {
		struct sim_vq *vq = &drv->vq[q];

		vr = (struct vsock_vring_config){
			.num = vq->num,
			.desc_gpa = lin2gpa(drv, vq->desc_lin),
			.avail_gpa = lin2gpa(drv, vq->avail_lin),
			.used_gpa = lin2gpa(drv, vq->used_lin),
			.last_avail_idx = 0,
			.kick_fd = vq->kick_fd,
			.call_fd = drv->cfg.notify_cb ? -1 : vq->irq_fd,
		};
		rc = vsock_dev_set_vring(dev, q, &vr);
		if (rc)
			return rc;
	}
	rc = vsock_dev_start(dev);
	if (rc)
		return rc;
	pthread_mutex_lock(&drv->lock);
	drv->attached = true;
	for (q = 0; q < VSOCK_VQ_NUM; q++)
		vq_kick(drv, &drv->vq[q]);
	pthread_mutex_unlock(&drv->lock);
	drv->stop = false;
	rc = pthread_create(&drv->thread, NULL, service_thread, drv);
	if (rc)
		return -rc;
	drv->thread_running = true;
	return 0;
}

int sim_drv_reset(struct sim_drv *drv)
{
	int rc = 0;

	stop_thread(drv);
	if (drv->dev)
		rc = vsock_dev_reset(drv->dev);
	pthread_mutex_lock(&drv->lock);
	drv->attached = false;
	sim__reset_all_conns(drv);
	free_ctl(drv);
	broadcast(drv);
	pthread_mutex_unlock(&drv->lock);
	sim_pkt_flush(drv);
	sim_dgram_flush(drv);
	return rc;
}

uint64_t sim_drv_features(const struct sim_drv *drv)
{
	return drv->features;
}

uint64_t sim_drv_guest_cid(const struct sim_drv *drv)
{
	return drv->cfg.guest_cid;
}

void sim_drv_get_stats(struct sim_drv *drv, struct sim_drv_stats *out)
{
	pthread_mutex_lock(&drv->lock);
	*out = drv->stats;
	pthread_mutex_unlock(&drv->lock);
}
