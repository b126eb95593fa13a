/* SPDX-License-Identifier: MIT */
/*
 * A small AML encoder (ACPI 6.0 chapter 20, "ACPI Machine Language
 * Specification") for the DSDT of acpi.c: named objects, integers, strings,
 * packages, devices and scopes, and resource templates (chapter 6.4) with the
 * two descriptors skiff needs. Only what a static device description uses:
 * no methods, no operation regions.
 *
 * The encoder appends to a caller's buffer. Objects with a PkgLength
 * (Scope, Device, Package, Buffer) are opened with aml_open_*() and closed
 * with aml_close(), which inserts the PkgLength of the right size in front
 * of the body. A write past the end sets a sticky overflow flag instead of
 * writing; aml_finish() reports it.
 */
#ifndef SKIFF_X86_AML_H
#define SKIFF_X86_AML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct aml {
	uint8_t *buf;
	size_t cap;
	size_t len;
	bool overflow;
};

/* An open object: aml_open_*() returns it, aml_close() takes it. */
typedef struct {
	size_t body; /* offset of the body, where the PkgLength will be inserted */
	bool buffer; /* a Buffer: BufferSize and the End Tag too */
} aml_mark;

void aml_init(struct aml *a, uint8_t *buf, size_t cap);

/* aml_finish() - bytes written (@len), or -ENOSPC when the buffer was too small. */
int aml_finish(const struct aml *a, size_t *len);

/*
 * aml_name() - Name (@seg, ...): DefName with a one-segment NameString. @seg
 * is a NameSeg of 1-4 characters (padded with '_'), prefixed with '\' for
 * the root. The value follows: aml_integer(), aml_string(), an open package
 * or buffer.
 */
void aml_name(struct aml *a, const char *seg);

/* aml_integer() - the shortest integer encoding: Zero, One, Byte/Word/DWord/QWord const. */
void aml_integer(struct aml *a, uint64_t v);

/* aml_string() - a String constant (printable ASCII, NUL-terminated in AML). */
void aml_string(struct aml *a, const char *s);

/* aml_open_scope() - Scope (@path) { ...: @path one NameSeg, optionally '\'-prefixed. */
aml_mark aml_open_scope(struct aml *a, const char *path);

/* aml_open_device() - Device (@seg) { ... */
aml_mark aml_open_device(struct aml *a, const char *seg);

/* aml_open_package() - Package (@n) { ...: @n elements follow before aml_close(). */
aml_mark aml_open_package(struct aml *a, uint8_t n);

/*
 * aml_open_resources() - ResourceTemplate () { ...: a Buffer whose size is
 * filled in by aml_close(), which also appends the End Tag (checksum 0:
 * "treat as correctly summed", 6.4.2.9).
 */
aml_mark aml_open_resources(struct aml *a);

/* aml_close() - end the object opened at @m: PkgLength (and buffer size, End Tag). */
void aml_close(struct aml *a, aml_mark m);

/* aml_memory32_fixed() - Memory32Fixed (ReadWrite, @base, @len) (6.4.3.4). */
void aml_memory32_fixed(struct aml *a, uint32_t base, uint32_t len);

/*
 * aml_interrupt() - Interrupt (ResourceConsumer, @level ? Level : Edge,
 * @active_low ? ActiveLow : ActiveHigh, Exclusive) { @gsi }: the Extended
 * Interrupt Descriptor (6.4.3.6) with one interrupt number, a GSI on x86.
 */
void aml_interrupt(struct aml *a, uint32_t gsi, bool level, bool active_low);

#endif /* SKIFF_X86_AML_H */
