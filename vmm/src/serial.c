// SPDX-License-Identifier: MIT
/*
 * 8250/16550A UART (register set as in the National Semiconductor PC16550D
 * data sheet; what Linux drivers/tty/serial/8250/8250_port.c expects).
 * Transmission is instant: THR writes go straight to the console, so LSR
 * always says THRE|TEMT and a transmitter-empty interrupt is pending after
 * every write while IER.ETBEI is set, until IIR is read or THR written.
 */
#include "serial.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bus.h"
#include "skiff/sandbox.h"
#include "vm.h"

#define UART_RX 0 /* RBR / THR; DLL with DLAB */
#define UART_IER 1 /* DLM with DLAB */
#define UART_IIR 2 /* FCR on write */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define IER_RDI 0x01
#define IER_THRI 0x02
#define IIR_NO_INT 0x01
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_FIFO 0xc0
#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define LCR_DLAB 0x80
#define MCR_LOOP 0x10
#define LSR_DR 0x01
#define LSR_THRE 0x20
#define LSR_TEMT 0x40
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_DCD 0x80

#define RX_FIFO 64

/* Matched against the console output to notice a Linux panic. */
static const char panic_marker[] = "Kernel panic - not syncing";

struct serial {
	struct vm *vm;
	unsigned int irq;
	int in_fd;
	int stop_fd; /* eventfd: tells the input thread to leave */
	pthread_t in_thread;
	bool in_thread_started;

	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t space; /* RX FIFO has room */
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thri_pending;
	bool irq_level;
	uint8_t rx[RX_FIFO];
	unsigned int rx_head, rx_count;
	unsigned int panic_match; /* bytes of panic_marker matched so far */
	bool stopping;
};

/* Called with s->lock held. */
static void __serial_update_irq(struct serial *s)
{
	bool level =
		((s->ier & IER_RDI) && s->rx_count) || ((s->ier & IER_THRI) && s->thri_pending);

	if (level != s->irq_level) {
		s->irq_level = level;
		vm_irq_line(s->vm, s->irq, level);
	}
}

/* Called with s->lock held. */
static void __serial_rx_push(struct serial *s, uint8_t c)
{
	if (s->rx_count == RX_FIFO)
		return; /* overrun: the byte is lost, as on hardware */
	s->rx[(s->rx_head + s->rx_count) % RX_FIFO] = c;
	s->rx_count++;
}

static void __serial_scan_panic(struct serial *s, uint8_t c)
{
	if (c == (uint8_t)panic_marker[s->panic_match])
		s->panic_match++;
	else
		s->panic_match = c == (uint8_t)panic_marker[0];
	if (s->panic_match == sizeof(panic_marker) - 1) {
		s->panic_match = 0;
		vm_end(s->vm, SKIFF_EXIT_PANIC, 0, -1, 0,
		       "guest kernel panic (seen on the console)");
	}
}

static uint8_t __serial_read(struct serial *s, unsigned int reg)
{
	uint8_t v = 0;

	switch (reg) {
	case UART_RX:
		if (s->lcr & LCR_DLAB)
			return s->dll;
		if (s->rx_count) {
			v = s->rx[s->rx_head];
			s->rx_head = (s->rx_head + 1) % RX_FIFO;
			s->rx_count--;
			pthread_cond_signal(&s->space);
		}
		return v;
	case UART_IER:
		return (s->lcr & LCR_DLAB) ? s->dlm : s->ier;
	case UART_IIR:
		v = (s->fcr & FCR_ENABLE) ? IIR_FIFO : 0;
		if ((s->ier & IER_RDI) && s->rx_count)
			return v | IIR_RDI;
		if ((s->ier & IER_THRI) && s->thri_pending) {
			s->thri_pending = false; /* reading IIR clears THRI */
			return v | IIR_THRI;
		}
		return v | IIR_NO_INT;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		return LSR_THRE | LSR_TEMT | (s->rx_count ? LSR_DR : 0);
	case UART_MSR:
		if (s->mcr & MCR_LOOP) /* DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD */
			return (uint8_t)(((s->mcr & 0x01) << 5) | ((s->mcr & 0x02) << 3) |
					 ((s->mcr & 0x04) << 4) | ((s->mcr & 0x08) << 4));
		return MSR_DCD | MSR_DSR | MSR_CTS;
	case UART_SCR:
		return s->scr;
	}
	return 0;
}

static void __serial_write(struct serial *s, unsigned int reg, uint8_t v)
{
	switch (reg) {
	case UART_RX:
		if (s->lcr & LCR_DLAB) {
			s->dll = v;
			break;
		}
		if (s->mcr & MCR_LOOP) {
			__serial_rx_push(s, v);
		} else {
			vm_console_write(s->vm, &v, 1);
			__serial_scan_panic(s, v);
		}
		s->thri_pending = true;
		break;
	case UART_IER:
		if (s->lcr & LCR_DLAB) {
			s->dlm = v;
			break;
		}
		/* Enabling ETBEI with an empty transmitter raises THRI at once. */
		if (!(s->ier & IER_THRI) && (v & IER_THRI))
			s->thri_pending = true;
		s->ier = v & 0x0f;
		break;
	case UART_IIR:
		s->fcr = v & 0xc9;
		if (v & FCR_CLEAR_RX)
			s->rx_count = 0;
		break;
	case UART_LCR:
		s->lcr = v;
		break;
	case UART_MCR:
		s->mcr = v & 0x1f;
		break;
	case UART_SCR:
		s->scr = v;
		break;
	default: /* LSR and MSR are read-only */
		break;
	}
}

static void serial_regs(void *opaque, uint64_t off, uint8_t *data, uint32_t len, bool is_write)
{
	struct serial *s = opaque;
	uint32_t i;

	pthread_mutex_lock(&s->lock);
	for (i = 0; i < len && off + i < 8; i++) {
		if (is_write)
			__serial_write(s, (unsigned int)(off + i), data[i]);
		else
			data[i] = __serial_read(s, (unsigned int)(off + i));
	}
	__serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static void *serial_input_thread(void *arg)
{
	struct serial *s = arg;
	struct pollfd pfd[2] = { { .fd = s->in_fd, .events = POLLIN },
				 { .fd = s->stop_fd, .events = POLLIN } };
	uint8_t buf[RX_FIFO];

	/* Refuse to read input unfiltered; the guest then sees no input. */
	if (s->vm->cfg.seccomp && sandbox_enter(SANDBOX_SERIAL_IN)) {
		fputs("skiff: seccomp: cannot filter the console input thread; no input\n", stderr);
		return NULL;
	}
	for (;;) {
		ssize_t n, i;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & (POLLIN | POLLHUP)))
			continue;
		pthread_mutex_lock(&s->lock);
		while (s->rx_count == RX_FIFO && !s->stopping)
			pthread_cond_wait(&s->space, &s->lock);
		n = s->stopping ? 0 : RX_FIFO - s->rx_count;
		pthread_mutex_unlock(&s->lock);
		if (!n)
			break;
		n = read(s->in_fd, buf, (size_t)n);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break; /* EOF or error: no more input */
		}
		pthread_mutex_lock(&s->lock);
		for (i = 0; i < n; i++)
			__serial_rx_push(s, buf[i] == '\n' ? '\r' : buf[i]);
		__serial_update_irq(s);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

int serial_create(struct vm *vm, unsigned int irq, int in_fd, struct serial **out)
{
	struct serial *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->vm = vm;
	s->irq = irq;
	s->in_fd = in_fd;
	s->stop_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->space, NULL);
	if (in_fd >= 0) {
		s->stop_fd = eventfd(0, EFD_CLOEXEC);
		if (s->stop_fd < 0) {
			err = -errno;
			goto err;
		}
		err = -pthread_create(&s->in_thread, NULL, serial_input_thread, s);
		if (err)
			goto err;
		s->in_thread_started = true;
	}
	*out = s;
	return 0;
err:
	serial_destroy(s);
	return err;
}

int serial_add_pio(struct serial *s, uint16_t base)
{
	return bus_add(&s->vm->pio_bus, base, 8, serial_regs, s);
}

int serial_add_mmio(struct serial *s, uint64_t base)
{
	return bus_add(&s->vm->mmio_bus, base, 8, serial_regs, s);
}

void serial_destroy(struct serial *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (s->in_thread_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->space);
		pthread_mutex_unlock(&s->lock);
		if (write(s->stop_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write of 1 cannot fail short of a bug; join anyway */
		}
		pthread_join(s->in_thread, NULL);
	}
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	pthread_cond_destroy(&s->space);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
