/* SPDX-License-Identifier: MIT */
/*
 * The debug device of tiny guests (MMIO, skiff/tiny_guest_abi.h) and the
 * debug-exit I/O port for CPL0 guests.
 */
#ifndef SKIFF_DEBUG_DEV_H
#define SKIFF_DEBUG_DEV_H

struct vm;

/* debug_dev_add() - put the debug MMIO window and the debug-exit port on the buses. */
int debug_dev_add(struct vm *vm);

#endif /* SKIFF_DEBUG_DEV_H */
