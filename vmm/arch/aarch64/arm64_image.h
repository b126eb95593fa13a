/* SPDX-License-Identifier: MIT */
/*
 * The arm64 Linux kernel loader: the uncompressed `Image` format and where
 * kernel, initrd and DTB go in guest RAM (Linux Documentation/arm64/
 * booting.rst, "Call the kernel image" and "Setup the device tree"). No KVM
 * calls: builds and is tested on any host.
 *
 * Header (64 bytes, little endian): code0/code1 at 0 (instructions, or "MZ"
 * for an EFI stub: not checked), text_offset at 8, image_size at 16, flags
 * at 24, three reserved u64 (ignored, as U-Boot and QEMU do), magic
 * "ARM\x64" at 56, a reserved u32 (the PE header offset).
 *
 * What is supported, and what not:
 * - image_size 0 marks a kernel older than 3.17, whose text_offset has the
 *   kernel's endianness and whose memory need is unknown: rejected (-ENOEXEC,
 *   "use Linux 3.17 or later"), rather than guessing how much room its BSS needs.
 * - flags bit 0 (big-endian kernel) must be 0. The page size bits (1-2) are
 *   reported, not checked (KVM, not the loader, knows the host's granules);
 *   bit 3 (placement) is met either way, since the kernel goes at the first
 *   2 MiB boundary of RAM; bits 4-63 (reserved) are ignored.
 * - text_offset must be 4 KiB aligned and below 2 MiB (every kernel since
 *   3.17: 0x80000, a 4 KiB-aligned random value, or 0 since 5.8).
 * - The DTB goes after the initrd, so booting.rst's rule for kernels before
 *   4.2 (DTB within 512 MB of the kernel) holds only for initrds under
 *   about 500 MB; 4.2 and later have no such limit.
 * - A file longer than image_size (an appended signature, say) is loaded
 *   whole and the kernel's region is the larger of the two.
 * - Compressed kernels are not: skiff links no decompressor (no zlib), so a
 *   gzip, xz, zstd or bzip2 file, or an EFI zboot image, is rejected with a
 *   message to decompress it first (some distributions gzip the arm64 vmlinuz:
 *   `zcat vmlinuz > Image`).
 */
#ifndef SKIFF_ARM64_IMAGE_H
#define SKIFF_ARM64_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arm64_layout.h"

#define ARM64_IMAGE_HDR_SIZE 64u
#define ARM64_IMAGE_MAGIC_OFF 56u
#define ARM64_IMAGE_FLAG_BE (1ull << 0)
#define ARM64_IMAGE_FLAG_PAGE_SHIFT 1
#define ARM64_IMAGE_FLAG_PAGE_MASK (3ull << ARM64_IMAGE_FLAG_PAGE_SHIFT)
#define ARM64_IMAGE_FLAG_ANYWHERE (1ull << 3)

#define ARM64_KERNEL_ALIGN (2ull << 20) /* the Image's base: 2 MiB aligned */
#define ARM64_INITRD_ALIGN (64ull << 10) /* a page of any granule */
#define ARM64_INITRD_WINDOW (32ull << 30) /* kernel + initrd in a 1 GiB aligned 32 GiB window */
#define ARM64_DTB_ALIGN (2ull << 20) /* its own 2 MiB block (booting.rst) */

/* A parsed, checked Image header. */
struct arm64_image {
	uint64_t text_offset; /* bytes from the 2 MiB aligned base */
	uint64_t image_size; /* bytes the kernel needs from its start, BSS included */
	uint64_t flags; /* as in the header */
	unsigned int page_size; /* from flags: 0 (unspecified), 4096, 16384 or 65536 */
};

/* Where everything goes; guest physical addresses, [start, end). */
struct arm64_boot_layout {
	uint64_t kernel_gpa; /* the Image's first byte and the entry point (PC) */
	uint64_t kernel_end; /* kernel_gpa + max(image_size, file length) */
	uint64_t initrd_gpa, initrd_end; /* both 0 without an initrd */
	uint64_t dtb_gpa; /* x0 at entry; 2 MiB aligned */
	uint64_t dtb_max; /* bytes reserved for the DTB at dtb_gpa */
};

/* Guest RAM as the loader sees it: @size bytes at host @hva hold GPAs [@base, @base + @size). */
struct arm64_ram {
	uint8_t *hva;
	uint64_t base;
	uint64_t size;
};

/*
 * arm64_image_parse() - check the header of the @len-byte file @img.
 * Return: 0 and *@out filled; -ENOEXEC when it is not a bootable
 * little-endian arm64 Image (too short, compressed, another format, bad
 * magic, big-endian, image_size 0, text_offset not 4 KiB aligned or not
 * below 2 MiB), with what it is and the remedy in @msg (may be NULL).
 */
int arm64_image_parse(const uint8_t *img, size_t len, struct arm64_image *out, char *msg,
		      size_t msg_len);

/*
 * arm64_boot_plan() - place a kernel (@hdr, a @file_len-byte file), an
 * initrd of @initrd_len bytes (0: none) and a DTB slot of @dtb_max bytes in
 * RAM [@ram_base, @ram_base + @ram_size): the kernel at the first 2 MiB
 * boundary plus text_offset, the initrd at the next 64 KiB boundary after
 * the kernel's region, the DTB at the next 2 MiB boundary after both.
 * Every sum is overflow-checked.
 * Return: 0 and *@out filled; -EINVAL for RAM that is empty or does not
 * end below 2^64 (its end must be a u64), or @dtb_max 0 or above ARM64_DTB_MAX_SIZE; -E2BIG when something
 * does not fit in RAM (@msg says how much RAM would do) or kernel and initrd
 * do not fit one 1 GiB aligned 32 GiB window.
 */
int arm64_boot_plan(const struct arm64_image *hdr, uint64_t file_len, uint64_t ram_base,
		    uint64_t ram_size, uint64_t initrd_len, uint64_t dtb_max,
		    struct arm64_boot_layout *out, char *msg, size_t msg_len);

/*
 * arm64_boot_load() - parse @kernel, plan as arm64_boot_plan() and copy the
 * kernel and the initrd (@initrd may be NULL when @initrd_len is 0) into
 * @ram. The DTB is the caller's to write at out->dtb_gpa (arm64_fdt_build()
 * with buffer length out->dtb_max), once it knows the initrd's addresses.
 * Return: 0; the errors of arm64_image_parse() and arm64_boot_plan().
 */
int arm64_boot_load(const struct arm64_ram *ram, const uint8_t *kernel, size_t kernel_len,
		    const uint8_t *initrd, size_t initrd_len, uint64_t dtb_max,
		    struct arm64_boot_layout *out, char *msg, size_t msg_len);

#endif /* SKIFF_ARM64_IMAGE_H */
