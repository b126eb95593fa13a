/* SPDX-License-Identifier: MIT */
/*
 * The arm64 guest physical memory map (issue 19; proposed, used by the DTB
 * builder's tests and, later, by vmm/arch/aarch64/):
 *
 *   0x0000_0000 - 0x07ff_ffff  unused (no flash or boot ROM: skiff enters the
 *                              kernel directly)
 *   0x0800_0000   64 KiB       GICv3 distributor (GICD)
 *   0x0808_0000  512 KiB       reserved for a GICv3 ITS (later, for MSIs)
 *   0x0900_0000    4 KiB       16550A UART (ns16550a), SPI 1
 *   0x0a00_0000  512 B each    virtio-mmio slots, 32 of them, SPI 16 + slot
 *   0x1000_0000   64 MiB       GICv3 redistributors, 128 KiB per vCPU
 *                              (RD_base + SGI_base frames), room for 512
 *   0x4000_0000 - 0x7fff_ffff  reserved for a 32-bit PCI MMIO window (later)
 *   0x8000_0000 -              RAM, up to ARM64_RAM_MAX_SIZE
 *
 * Which and why: the distributor, UART and virtio-mmio transports sit where
 * QEMU's "virt" machine puts them, all below 1 GiB, so addresses people know
 * from QEMU (earlycon, dumps) mean the same thing. The redistributors do not
 * (QEMU's first region, 0x080a_0000-0x08ff_ffff, holds 123 vCPUs): they get
 * 64 MiB at 256 MiB, room for KVM's 512 vCPUs. RAM starts at 2 GiB as in
 * Firecracker rather than at QEMU virt's 1 GiB, which keeps 1-2 GiB free for a
 * 32-bit PCI window and makes RAM 1 GiB aligned (block mappings at stage 2,
 * and booting.rst's 1 GiB initrd window starts at RAM's base). The top is
 * KVM's default 40-bit IPA space (KVM_CREATE_VM with type 0), so RAM can be
 * 1 TiB - 2 GiB.
 */
#ifndef SKIFF_ARM64_LAYOUT_H
#define SKIFF_ARM64_LAYOUT_H

#define ARM64_GICD_BASE 0x08000000ull
#define ARM64_GICD_SIZE 0x00010000ull
#define ARM64_GIC_ITS_BASE 0x08080000ull /* reserved, not used yet */
#define ARM64_GIC_ITS_SIZE 0x00080000ull
#define ARM64_GICR_BASE 0x10000000ull
#define ARM64_GICR_STRIDE 0x00020000ull /* one vCPU's redistributor (2 x 64 KiB) */
#define ARM64_MAX_VCPUS 512u /* KVM_MAX_VCPUS on arm64 (Linux 6.1) */
#define ARM64_GICR_SIZE (ARM64_MAX_VCPUS * ARM64_GICR_STRIDE)

#define ARM64_UART_BASE 0x09000000ull
#define ARM64_UART_SIZE 0x00001000ull
#define ARM64_UART_SPI 1u
#define ARM64_UART_CLOCK_HZ 1843200u /* the 16550's classic crystal; sets the divisor base */

#define ARM64_VIRTIO_MMIO_BASE 0x0a000000ull
#define ARM64_VIRTIO_MMIO_SIZE 0x200ull
#define ARM64_VIRTIO_MMIO_SLOTS 32u
#define ARM64_VIRTIO_MMIO_SPI0 16u /* slot n raises SPI 16 + n */

#define ARM64_RAM_BASE 0x80000000ull
#define ARM64_IPA_BITS 40u /* KVM's default stage-2 input size */
#define ARM64_RAM_MAX_SIZE ((1ull << ARM64_IPA_BITS) - ARM64_RAM_BASE)

/* booting.rst: "The dtb ... must not exceed 2 megabytes in size." */
#define ARM64_DTB_MAX_SIZE (2ull << 20)

/*
 * The architected timer's PPIs as numbers within the PPI range (INTID - 16),
 * in the order the arm,armv8-timer binding lists them: secure physical,
 * non-secure physical, virtual, hypervisor (Linux arch/arm64 and KVM's
 * defaults: INTIDs 29, 30, 27, 26).
 */
#define ARM64_TIMER_PPI_SEC_PHYS 13u
#define ARM64_TIMER_PPI_PHYS 14u
#define ARM64_TIMER_PPI_VIRT 11u
#define ARM64_TIMER_PPI_HYP 10u

#endif /* SKIFF_ARM64_LAYOUT_H */
