// SPDX-License-Identifier: MIT
/*
 * Harness: the virtio-mmio register interface (vmm/src/virtio_mmio.c) in
 * front of a real vsock device, driven through the MMIO bus
 * (vmm/src/bus.c bus_dispatch()) as the vCPU loop does on KVM_EXIT_MMIO.
 * No KVM: the VM here has no KVM fd (vm_fd = -1), so
 * virtio_mmio_vsock_create() leaves the kick and interrupt eventfds plain
 * instead of registering them as ioeventfd and irqfd. Guest RAM is
 * 64 KiB from guest_mem_create(). DRIVER_OK starts the device's threads on
 * rings the input wrote into RAM; every input ends with a device reset.
 *
 * Input: a sequence of 7-byte operations: u8 op, u16 offset, u32 value.
 *   op bits 0-1: 0 read, 1 write, 2 write to a register picked from the
 *   register list by offset % list size (so writes hit registers often),
 *   3 store value (4 bytes) into guest RAM at offset;
 *   op bits 2-3 (read/write): access width 4, 1, 2 or 8 bytes.
 * Offsets are within the 4 KiB window (offset % 0x1000).
 *
 * Checked besides ASan/UBSan/LSan: the identification registers read what
 * virtio 1.2 4.2.2 requires (magic, version 2, device ID 19) whatever came
 * before, and status reads 0 after a reset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "fuzz_input.h"
#include "skiff/tiny_guest_abi.h"
#include "skiff/vsock_abi.h"
#include "virtio_mmio.h"
#include "vm.h"

#define RAM_SIZE 0x10000u
#define MMIO_BASE 0xd0000000ull

static struct vm g_vm;
static struct virtio_mmio *g_d;

static const uint16_t regs[] = {
	VMMIO_DEV_FEATURES_SEL, VMMIO_DRV_FEATURES,    VMMIO_DRV_FEATURES_SEL,
	VMMIO_QUEUE_SEL,	VMMIO_QUEUE_NUM,       VMMIO_QUEUE_READY,
	VMMIO_QUEUE_NOTIFY,	VMMIO_INT_ACK,	       VMMIO_STATUS,
	VMMIO_QUEUE_DESC_LO,	VMMIO_QUEUE_DESC_HI,   VMMIO_QUEUE_DRIVER_LO,
	VMMIO_QUEUE_DRIVER_HI,	VMMIO_QUEUE_DEVICE_LO, VMMIO_QUEUE_DEVICE_HI,
	VMMIO_SHM_SEL,		VMMIO_CONFIG,	       VMMIO_CONFIG + 4,
};

static void setup_once(void)
{
	static char path[108];

	snprintf(path, sizeof(path), "%s/mmio.sock", fz_scratch_dir());
	g_vm.kvm_fd = -1;
	g_vm.vm_fd = -1;
	g_vm.irqchip_fd = -1;
	g_vm.cfg.vsock_cid = 3;
	g_vm.cfg.vsock_uds = path;
	g_vm.cfg.vsock_rx_threads = 1;
	if (guest_mem_create(&g_vm.mem, RAM_SIZE))
		abort();
	if (virtio_mmio_vsock_create(&g_vm, MMIO_BASE, 5, &g_d))
		abort();
}

static uint64_t mmio(uint64_t off, uint32_t len, bool is_write, uint64_t v)
{
	uint8_t data[8] = { 0 };

	if (is_write)
		bus_put_le(data, len, v);
	FZ_CHECK(bus_dispatch(&g_vm.mmio_bus, MMIO_BASE + off, data, len, is_write) ==
		 (off + len <= SKIFF_VIRTIO_MMIO_SIZE));
	return bus_get_le(data, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t widths[4] = { 4, 1, 2, 8 };
	struct fz f;

	if (!g_d)
		setup_once();
	memset(g_vm.mem.hva, 0, RAM_SIZE);
	fz_init(&f, data, size);
	while (fz_left(&f) >= 7) {
		uint8_t op = fz_u8(&f);
		uint16_t off = fz_u16(&f);
		uint32_t v = fz_u32(&f), len = widths[(op >> 2) & 3];

		switch (op & 3) {
		case 0:
			off %= SKIFF_VIRTIO_MMIO_SIZE;
			(void)mmio(off, len, false, 0);
			break;
		case 1:
			off %= SKIFF_VIRTIO_MMIO_SIZE;
			(void)mmio(off, len, true, v);
			break;
		case 2:
			(void)mmio(regs[off % (sizeof(regs) / sizeof(regs[0]))], 4, true, v);
			break;
		case 3:
			if (off <= RAM_SIZE - 4)
				memcpy(g_vm.mem.hva + off, &v, 4);
			break;
		}
		FZ_CHECK(mmio(VMMIO_MAGIC, 4, false, 0) == VMMIO_MAGIC_VALUE);
		FZ_CHECK(mmio(VMMIO_VERSION, 4, false, 0) == 2);
		FZ_CHECK(mmio(VMMIO_DEVICE_ID, 4, false, 0) == VIRTIO_ID_VSOCK);
	}
	(void)mmio(VMMIO_STATUS, 4, true, 0);
	FZ_CHECK(mmio(VMMIO_STATUS, 4, false, 0) == 0);
	FZ_CHECK(!virtio_mmio_started(g_d));
	return 0;
}
