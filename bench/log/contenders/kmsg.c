/* SPDX-License-Identifier: MIT */
/*
 * /dev/kmsg: the kernel's own log ring, one write(2) per record. It is the
 * nearest thing today's kernels have to the Android logger of the 2012 RFC.
 *
 * Writes from user space are rate-limited unless kernel.printk_devkmsg is
 * "on"; we set it for the run and put the old value back at teardown (and
 * from an atexit handler, should the benchmark stop early). Records are
 * written at level 7 (debug) so that no console prints them: a serial
 * console would measure itself, not the ring. The records do land in the
 * machine's dmesg.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"

#define DEVKMSG_SYSCTL "/proc/sys/kernel/printk_devkmsg"

static char saved_mode[32];

static int sysctl_read(char *buf, size_t len)
{
	FILE *f = fopen(DEVKMSG_SYSCTL, "r");
	if (!f)
		return -1;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int sysctl_write(const char *v)
{
	FILE *f = fopen(DEVKMSG_SYSCTL, "w");
	if (!f)
		return -1;
	/* The kernel parses the value with its newline: "on" alone is
	 * rejected with EINVAL. */
	int ok = fprintf(f, "%s\n", v) >= 0;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

static void restore_mode(void)
{
	if (saved_mode[0]) {
		sysctl_write(saved_mode);
		saved_mode[0] = '\0';
	}
}

/* Interrupted runs put the sysctl back too, then die of the signal. */
static void restore_on_signal(int sig)
{
	restore_mode();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm_restore(void)
{
	static bool armed;
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	if (armed)
		return;
	armed = true;
	atexit(restore_mode);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], restore_on_signal);
}

static int kmsg_setup(struct lb_ctx *c)
{
	char mode[32];
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(c->why, sizeof(c->why),
			 "cannot open /dev/kmsg for writing: %s",
			 strerror(errno));
		return -1;
	}
	close(fd);
	if (sysctl_read(mode, sizeof(mode)) < 0) {
		snprintf(c->why, sizeof(c->why), "cannot read " DEVKMSG_SYSCTL);
		return -1;
	}
	if (strcmp(mode, "on") != 0) {
		if (sysctl_write("on") < 0) {
			snprintf(c->why, sizeof(c->why),
				 "kernel.printk_devkmsg is '%s' and setting it "
				 "to 'on' "
				 "failed (%s): writes would be rate-limited; "
				 "run as root",
				 mode, strerror(errno));
			return -1;
		}
		snprintf(saved_mode, sizeof(saved_mode), "%s", mode);
		arm_restore();
		snprintf(c->note, sizeof(c->note),
			 "kernel.printk_devkmsg set to on for the run (was %s)",
			 mode);
	}
	snprintf(c->arg, sizeof(c->arg), "/dev/kmsg");
	return 0;
}

static void kmsg_teardown(struct lb_ctx *c)
{
	(void)c;
	restore_mode();
}

static void *kmsg_open(const char *arg, char *err, size_t errlen)
{
	int fd = open(arg, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "open(%s): %s", arg, strerror(errno));
		return NULL;
	}
	return (void *)(intptr_t)(fd + 1);
}

static long kmsg_write(void *w, const struct lb_msg *m)
{
	int fd = (int)(intptr_t)w - 1;
	/* <15>: facility user (1), level debug (7). */
	struct iovec v[4] = {
	    {(void *)"<15>", 4},
	    {(void *)m->tag, m->tag_len},
	    {(void *)": ", 2},
	    {(void *)m->msg, m->len},
	};
	ssize_t n = writev(fd, v, 4);
	return n < 0 ? -errno : n;
}

static void kmsg_close(void *w)
{
	close((int)(intptr_t)w - 1);
}

const struct lb_contender lb_kmsg = {
    .name = "kmsg",
    .what = "/dev/kmsg: the kernel log ring, one writev(2) per record",
    /* The kernel refuses records over 1 KiB (PRINTKRB_RECORD_MAX). */
    .max_msg = 960,
    .setup = kmsg_setup,
    .teardown = kmsg_teardown,
    .open = kmsg_open,
    .write = kmsg_write,
    .close = kmsg_close,
};
