// SPDX-License-Identifier: MIT
/*
 * vsock_dev_*() calls on the relay handle become vhost-user requests; see
 * relay_dev.h. Every "set" request asks for REPLY_ACK, so a call returns
 * after the backend has applied it. Addresses are sent as a QEMU frontend
 * sends them: user addresses are this process's HVAs of guest memory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "relay_dev.h"
#include "vu_frontend.h"
#include "vu_proto.h"

/* Real functions (-Wl,--wrap). */
uint64_t __real_vsock_dev_features(const struct vsock_dev *dev);
int __real_vsock_dev_set_features(struct vsock_dev *dev, uint64_t features);
int __real_vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *r,
			     unsigned int n);
int __real_vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			       const struct vsock_vring_config *v);
int __real_vsock_dev_start(struct vsock_dev *dev);
int __real_vsock_dev_reset(struct vsock_dev *dev);
uint64_t __wrap_vsock_dev_features(const struct vsock_dev *dev);
int __wrap_vsock_dev_set_features(struct vsock_dev *dev, uint64_t features);
int __wrap_vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *r,
			     unsigned int n);
int __wrap_vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			       const struct vsock_vring_config *v);
int __wrap_vsock_dev_start(struct vsock_dev *dev);
int __wrap_vsock_dev_reset(struct vsock_dev *dev);

static struct relay {
	int sock;
	unsigned int nacks;
	unsigned int nregions;
	struct vsock_mem_region regions[VSOCK_MAX_MEM_REGIONS];
	int call_fd[VSOCK_VQ_NUM]; /* last sent, owned by the driver */
} relay = { .sock = -1 };

struct vsock_dev *relay_dev(void)
{
	return (struct vsock_dev *)(void *)&relay;
}

static int is_relay(const struct vsock_dev *dev)
{
	return (const void *)dev == (const void *)&relay;
}

unsigned int relay_nacks(void)
{
	return relay.nacks;
}

static int call(uint32_t req, const void *p, uint32_t size, const int *fds, unsigned int nfds)
{
	uint64_t ack;
	int ret;

	ret = fe_send(relay.sock, req, VU_FLAG_NEED_REPLY, p, size, fds, nfds);
	if (ret)
		return ret;
	ret = fe_recv_u64(relay.sock, req, &ack);
	if (ret)
		return ret;
	if (ack) {
		relay.nacks++;
		return -(int)ack;
	}
	return 0;
}

static int get_u64(uint32_t req, uint64_t *v)
{
	int ret = fe_send(relay.sock, req, 0, NULL, 0, NULL, 0);

	return ret ? ret : fe_recv_u64(relay.sock, req, v);
}

int relay_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t pf;
	int ret;

	relay.sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (relay.sock < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(relay.sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		relay_disconnect();
		return ret;
	}
	ret = fe_send(relay.sock, VU_REQ_SET_OWNER, 0, NULL, 0, NULL, 0);
	if (!ret)
		ret = get_u64(VU_REQ_GET_PROTOCOL_FEATURES, &pf);
	if (!ret)
		ret = call(VU_REQ_SET_PROTOCOL_FEATURES, &pf, sizeof(pf), NULL, 0);
	return ret;
}

void relay_disconnect(void)
{
	if (relay.sock >= 0)
		close(relay.sock);
	relay.sock = -1;
}

uint64_t __wrap_vsock_dev_features(const struct vsock_dev *dev)
{
	uint64_t v = 0;

	if (!is_relay(dev))
		return __real_vsock_dev_features(dev);
	if (get_u64(VU_REQ_GET_FEATURES, &v))
		return 0;
	return v & ~(1ull << VU_F_PROTOCOL_FEATURES);
}

int __wrap_vsock_dev_set_features(struct vsock_dev *dev, uint64_t features)
{
	uint64_t v = features | (1ull << VU_F_PROTOCOL_FEATURES);

	if (!is_relay(dev))
		return __real_vsock_dev_set_features(dev, features);
	return call(VU_REQ_SET_FEATURES, &v, sizeof(v), NULL, 0);
}

/* The fd and file offset that back @hva, from /proc/self/maps. */
static int backing_fd(const void *hva, uint64_t *offset)
{
	unsigned long long start, end, off, ino;
	uintptr_t a = (uintptr_t)hva;
	char line[512], path[64];
	struct dirent *de;
	FILE *f;
	DIR *d;
	int fd = -ENOENT;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %*s %llx %*s %llu", &start, &end, &off, &ino) != 4)
			continue;
		if (a >= start && a < end)
			break;
		ino = 0;
	}
	fclose(f);
	if (!ino)
		return -ENOENT;
	*offset = off + (a - start);
	d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;
		int n = atoi(de->d_name);

		if (de->d_name[0] == '.' || n == dirfd(d))
			continue;
		if (fstat(n, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
			fd = open(path, O_RDWR | O_CLOEXEC);
			break;
		}
	}
	closedir(d);
	return fd;
}

int __wrap_vsock_dev_set_mem(struct vsock_dev *dev, const struct vsock_mem_region *r,
			     unsigned int n)
{
	struct vu_mem_table t = { .nregions = n };
	int fds[VU_MAX_REGIONS];
	unsigned int i;
	int ret = 0;

	if (!is_relay(dev))
		return __real_vsock_dev_set_mem(dev, r, n);
	if (n == 0 || n > VU_MAX_REGIONS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uint64_t off = 0;

		fds[i] = backing_fd(r[i].hva, &off);
		t.regions[i].mmap_offset = off;
		if (fds[i] < 0) {
			ret = fds[i];
			while (i--)
				close(fds[i]);
			return ret;
		}
		t.regions[i].guest_phys_addr = r[i].gpa;
		t.regions[i].memory_size = r[i].size;
		t.regions[i].userspace_addr = (uint64_t)(uintptr_t)r[i].hva;
	}
	ret = call(VU_REQ_SET_MEM_TABLE, &t, (uint32_t)(8 + n * sizeof(t.regions[0])), fds, n);
	for (i = 0; i < n; i++)
		close(fds[i]);
	if (!ret) {
		memcpy(relay.regions, r, n * sizeof(*r));
		relay.nregions = n;
	}
	return ret;
}

static uint64_t gpa_to_ua(uint64_t gpa)
{
	unsigned int i;

	for (i = 0; i < relay.nregions; i++)
		if (gpa >= relay.regions[i].gpa &&
		    gpa - relay.regions[i].gpa < relay.regions[i].size)
			return (uint64_t)(uintptr_t)relay.regions[i].hva +
			       (gpa - relay.regions[i].gpa);
	return ~0ull;
}

static int set_fd(uint32_t req, unsigned int q, int fd)
{
	uint64_t v = q | (fd < 0 ? VU_VRING_NOFD_MASK : 0);

	return call(req, &v, sizeof(v), fd < 0 ? NULL : &fd, fd < 0 ? 0 : 1);
}

int __wrap_vsock_dev_set_vring(struct vsock_dev *dev, unsigned int q,
			       const struct vsock_vring_config *v)
{
	struct vu_vring_state st = { .index = q };
	struct vu_vring_addr a = {
		.index = q,
		.desc_user_addr = gpa_to_ua(v->desc_gpa),
		.used_user_addr = gpa_to_ua(v->used_gpa),
		.avail_user_addr = gpa_to_ua(v->avail_gpa),
		.log_guest_addr = ~0ull,
	};
	int ret;

	if (!is_relay(dev))
		return __real_vsock_dev_set_vring(dev, q, v);
	ret = set_fd(VU_REQ_SET_VRING_CALL, q, v->call_fd);
	relay.call_fd[q] = v->call_fd;
	st.num = v->num;
	if (!ret)
		ret = call(VU_REQ_SET_VRING_NUM, &st, sizeof(st), NULL, 0);
	st.num = v->last_avail_idx;
	if (!ret)
		ret = call(VU_REQ_SET_VRING_BASE, &st, sizeof(st), NULL, 0);
	if (!ret)
		ret = call(VU_REQ_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	if (!ret)
		ret = set_fd(VU_REQ_SET_VRING_KICK, q, v->kick_fd);
	return ret;
}

int relay_resend_call(unsigned int q)
{
	return set_fd(VU_REQ_SET_VRING_CALL, q, relay.call_fd[q]);
}

int __wrap_vsock_dev_start(struct vsock_dev *dev)
{
	struct vu_vring_state st = { .num = 1 };
	int ret = 0;

	if (!is_relay(dev))
		return __real_vsock_dev_start(dev);
	for (st.index = 0; st.index < VSOCK_VQ_NUM && !ret; st.index++)
		ret = call(VU_REQ_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0);
	return ret;
}

int __wrap_vsock_dev_reset(struct vsock_dev *dev)
{
	if (!is_relay(dev))
		return __real_vsock_dev_reset(dev);
	/* A frontend's driver reset: the vrings go away (UML: ENABLE 0 each). */
	if (relay.sock >= 0) {
		struct vu_vring_state st = { .num = 0 };

		for (st.index = VSOCK_VQ_NUM; st.index-- > 0;)
			call(VU_REQ_SET_VRING_ENABLE, &st, sizeof(st), NULL, 0);
	}
	return 0;
}
