// SPDX-License-Identifier: MIT
/*
 * Device tests, the RW payload cap (vsock_dev_config.rx_pkt_max, skiff-vsock
 * --rx-pkt-max): with a cap of C, every host-to-guest RW packet the simulated
 * driver parses carries at most C bytes, whatever the host's write sizes, with
 * and without mergeable RX buffers, and the data still arrives intact. The RX
 * batching benchmark (guest-kernel-patches/series/README-rx-batch.md) relies
 * on it to give the guest packets of the payload size.
 */
#include <stdint.h>
#include <unistd.h>

#include "fixture.h"

#define PORT 5100

/* _i: bit 0 mergeable RX buffers, bits 1..2 pick the cap. */
START_TEST(t_cap)
{
	static const uint32_t caps[] = { 1, 256, 1000, 4096 };
	uint32_t cap = caps[(_i >> 1) & 3];
	struct fx_opts o = { .mrg = _i & 1, .rx_pkt_max = cap };
	size_t len = cap == 1 ? 8192 : (size_t)64 * cap + 17;
	struct sim_drv_stats s0, s1;
	struct sim_conn *c;
	struct fx fx;
	int lfd, fd;

	fx_setup(&fx, &o);
	fd = fx_guest_connect(&fx, PORT, VIRTIO_VSOCK_TYPE_STREAM, &c, &lfd);
	sim_drv_get_stats(fx.drv, &s0);
	/* One big host write: without the cap it would come as a few 64 KiB packets. */
	fx_xfer_h2g(fd, c, len, 7 + _i);
	sim_drv_get_stats(fx.drv, &s1);
	ck_assert_uint_le(s1.max_rx_payload, cap);
	ck_assert_uint_eq(s1.rx_bytes - s0.rx_bytes, len);
	ck_assert_uint_ge(s1.rx_pkts - s0.rx_pkts, (len + cap - 1) / cap);
	close(fd);
	sim_close(c, FX_T);
	close(lfd);
	fx_teardown(&fx);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("device_rx_pkt_max");

	FX_ADD_LOOP(s, t_cap, 8, 60);
	return s;
}

int main(void)
{
	return fx_run_suite(suite());
}
