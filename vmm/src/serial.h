/* SPDX-License-Identifier: MIT */
/*
 * 8250/16550A UART model: the register file of one port, interrupt on
 * "data ready" and "transmitter empty", output to the VM console, input from
 * a host fd (stdin when it is a terminal).
 */
#ifndef SKIFF_SERIAL_H
#define SKIFF_SERIAL_H

#include <stdint.h>

struct vm;
struct serial;

/*
 * serial_create() - a UART raising @irq through vm_irq_line() (its encoding is the arch's). @in_fd: read by
 * an input thread, or -1 for no input. Return: 0; -ENOMEM; -errno from
 * eventfd(2)/pthread_create(3).
 */
int serial_create(struct vm *vm, unsigned int irq, int in_fd, struct serial **out);

/* serial_add_pio() - put the 8 registers at port @base on the VM's port I/O bus. */
int serial_add_pio(struct serial *s, uint16_t base);

/*
 * serial_add_mmio() - put the 8 byte-wide registers at @base on the VM's
 * MMIO bus (reg-shift 0, as the arm64 device tree says). Return: as bus_add().
 */
int serial_add_mmio(struct serial *s, uint64_t base);

/* serial_destroy() - stop the input thread, free. NULL is a no-op. */
void serial_destroy(struct serial *s);

#endif /* SKIFF_SERIAL_H */
