// SPDX-License-Identifier: MIT
/*
 * arm64 Image header checks and placement of kernel, initrd and DTB in RAM
 * (see arm64_image.h; the rules are booting.rst's).
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "arm64_image.h"
#include "arm64_msg.h"

#define MIB (1ull << 20)

static uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/* Formats people pass by mistake, recognised so the message can say what to do. */
static const char *other_format(const uint8_t *img, size_t len)
{
	static const struct {
		const char *magic;
		size_t len;
		const char *what;
	} fmt[] = {
		{ "\x1f\x8b", 2, "gzip-compressed" },
		{ "\xfd"
		  "7zXZ",
		  5, "xz-compressed" },
		{ "\x28\xb5\x2f\xfd", 4, "zstd-compressed" },
		{ "BZh", 3, "bzip2-compressed" },
	};
	size_t i;

	for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++)
		if (len >= fmt[i].len && !memcmp(img, fmt[i].magic, fmt[i].len))
			return fmt[i].what;
	return NULL;
}

int arm64_image_parse(const uint8_t *img, size_t len, struct arm64_image *out, char *msg,
		      size_t msg_len)
{
	static const unsigned int page_sizes[4] = { 0, 4096, 16384, 65536 };
	const char *what = other_format(img, len);
	uint64_t text_offset, image_size, flags;

	if (what)
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the kernel is %s (some distributions gzip the arm64 vmlinuz); "
				 "skiff has no decompressor: decompress it first (e.g. zcat "
				 "vmlinuz > Image) or pass arch/arm64/boot/Image",
				 what);
	if (len >= 8 && !memcmp(img, "MZ", 2) && !memcmp(img + 4, "zimg", 4))
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the kernel is an EFI zboot image (CONFIG_EFI_ZBOOT), which "
				 "needs EFI firmware; pass arch/arm64/boot/Image instead");
	if (len >= 4 && !memcmp(img,
				"\x7f"
				"ELF",
				4))
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the kernel is an ELF file (vmlinux?); arm64 skiff boots the "
				 "Image format: pass arch/arm64/boot/Image");
	if (len < ARM64_IMAGE_HDR_SIZE)
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the kernel has %zu bytes, fewer than an arm64 Image header "
				 "(%u); pass arch/arm64/boot/Image",
				 len, ARM64_IMAGE_HDR_SIZE);
	if (memcmp(img + ARM64_IMAGE_MAGIC_OFF, "ARM\x64", 4)) {
		if (len >= 0x206 && !memcmp(img + 0x202, "HdrS", 4))
			return arm64_err(msg, msg_len, -ENOEXEC,
					 "the kernel is an x86 bzImage; pass an arm64 kernel "
					 "(arch/arm64/boot/Image)");
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the kernel has no arm64 Image magic (\"ARM\\x64\" at byte 56, "
				 "found 0x%08" PRIx32 "); pass arch/arm64/boot/Image",
				 get_le32(img + ARM64_IMAGE_MAGIC_OFF));
	}
	text_offset = get_le64(img + 8);
	image_size = get_le64(img + 16);
	flags = get_le64(img + 24);
	if (!image_size)
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the Image's image_size is 0, the mark of a kernel older than "
				 "Linux 3.17 whose memory needs are not in its header; use Linux "
				 "3.17 or later");
	if (flags & ARM64_IMAGE_FLAG_BE)
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the Image is a big-endian kernel (flags bit 0); skiff boots "
				 "little-endian arm64 kernels: build with "
				 "CONFIG_CPU_LITTLE_ENDIAN=y");
	if (text_offset % 4096 || text_offset >= ARM64_KERNEL_ALIGN)
		return arm64_err(msg, msg_len, -ENOEXEC,
				 "the Image's text_offset 0x%" PRIx64
				 " is not a 4 KiB multiple below 2 MiB; the header is damaged "
				 "or not from Linux 3.17 or later",
				 text_offset);
	out->text_offset = text_offset;
	out->image_size = image_size;
	out->flags = flags;
	out->page_size =
		page_sizes[(flags & ARM64_IMAGE_FLAG_PAGE_MASK) >> ARM64_IMAGE_FLAG_PAGE_SHIFT];
	return 0;
}

/* *@v = @a rounded up to @align (a power of two); false on overflow. */
static bool align_up(uint64_t a, uint64_t align, uint64_t *v)
{
	if (a > UINT64_MAX - (align - 1))
		return false;
	*v = (a + align - 1) & ~(align - 1);
	return true;
}

/* *@end = @a + @len; false on overflow. */
static bool add(uint64_t a, uint64_t len, uint64_t *end)
{
	if (len > UINT64_MAX - a)
		return false;
	*end = a + len;
	return true;
}

/* "the %s ends at GPA 0x..., RAM at 0x...: give at least N MiB of RAM". */
static int no_room(const char *what, bool ok, uint64_t end, uint64_t ram_base, uint64_t ram_end,
		   char *msg, size_t msg_len)
{
	uint64_t need = end - ram_base;

	if (!ok)
		return arm64_err(msg, msg_len, -E2BIG,
				 "the %s would end past the top of the address space; RAM at "
				 "0x%" PRIx64 " cannot hold it",
				 what, ram_base);
	return arm64_err(msg, msg_len, -E2BIG,
			 "the %s would end at 0x%" PRIx64 " but RAM ends at 0x%" PRIx64
			 "; give at least %" PRIu64 " MiB of memory",
			 what, end, ram_end, (uint64_t)(need / MIB + !!(need % MIB)));
}

int arm64_boot_plan(const struct arm64_image *hdr, uint64_t file_len, uint64_t ram_base,
		    uint64_t ram_size, uint64_t initrd_len, uint64_t dtb_max,
		    struct arm64_boot_layout *out, char *msg, size_t msg_len)
{
	uint64_t ram_end, base = 0, kernel = 0, kend = 0, next, initrd = 0, iend = 0, dtb = 0,
			  dend = 0;
	uint64_t size = hdr->image_size > file_len ? hdr->image_size : file_len;
	bool ok;

	if (!ram_size || !add(ram_base, ram_size, &ram_end))
		return arm64_err(msg, msg_len, -EINVAL,
				 "RAM at 0x%" PRIx64 " of 0x%" PRIx64
				 " bytes is empty or ends at or past 2^64",
				 ram_base, ram_size);
	if (!dtb_max || dtb_max > ARM64_DTB_MAX_SIZE)
		return arm64_err(msg, msg_len, -EINVAL,
				 "a DTB slot of %" PRIu64 " bytes: give 1 to %llu (booting.rst's "
				 "limit)",
				 dtb_max, ARM64_DTB_MAX_SIZE);

	ok = align_up(ram_base, ARM64_KERNEL_ALIGN, &base) &&
	     add(base, hdr->text_offset, &kernel) && add(kernel, size, &kend);
	if (!ok || kend > ram_end)
		return no_room("kernel (image_size plus its 2 MiB aligned load offset)", ok, kend,
			       ram_base, ram_end, msg, msg_len);
	next = kend;

	if (initrd_len) {
		ok = align_up(kend, ARM64_INITRD_ALIGN, &initrd) && add(initrd, initrd_len, &iend);
		if (!ok || iend > ram_end)
			return no_room("initrd, placed after the kernel,", ok, iend, ram_base,
				       ram_end, msg, msg_len);
		if (iend - (kernel & ~((1ull << 30) - 1)) > ARM64_INITRD_WINDOW)
			return arm64_err(msg, msg_len, -E2BIG,
					 "kernel and initrd span 0x%" PRIx64 "-0x%" PRIx64
					 ", more than the 32 GiB window from a 1 GiB boundary "
					 "that booting.rst allows; use a smaller initrd",
					 kernel, iend);
		next = iend;
	}

	ok = align_up(next, ARM64_DTB_ALIGN, &dtb) && add(dtb, dtb_max, &dend);
	if (!ok || dend > ram_end)
		return no_room("device tree, placed after kernel and initrd,", ok, dend, ram_base,
			       ram_end, msg, msg_len);

	out->kernel_gpa = kernel;
	out->kernel_end = kend;
	out->initrd_gpa = initrd;
	out->initrd_end = iend;
	out->dtb_gpa = dtb;
	out->dtb_max = dtb_max;
	return 0;
}

int arm64_boot_load(const struct arm64_ram *ram, const uint8_t *kernel, size_t kernel_len,
		    const uint8_t *initrd, size_t initrd_len, uint64_t dtb_max,
		    struct arm64_boot_layout *out, char *msg, size_t msg_len)
{
	struct arm64_image hdr;
	int err;

	err = arm64_image_parse(kernel, kernel_len, &hdr, msg, msg_len);
	if (err)
		return err;
	err = arm64_boot_plan(&hdr, kernel_len, ram->base, ram->size, initrd_len, dtb_max, out, msg,
			      msg_len);
	if (err)
		return err;
	/* The plan keeps every region inside [ram->base, ram->base + ram->size). */
	memcpy(ram->hva + (out->kernel_gpa - ram->base), kernel, kernel_len);
	if (initrd_len)
		memcpy(ram->hva + (out->initrd_gpa - ram->base), initrd, initrd_len);
	return 0;
}
