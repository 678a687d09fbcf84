// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * /init of the guest tier's initramfs (tools/vmtier.py builds it statically).
 *
 * Loads the modules listed in /modules/order (finit_module, in order), mounts
 * the host's root read-only over 9p (tag hostroot) at /root with tmpfs on
 * /tmp and /run, devtmpfs, proc, sysfs and bpffs, mounts the run's output
 * directory (tag rtnout, writable) at /tmp/out, chroots and runs
 * /bin/sh /tmp/out/guest.sh.  When the script ends it powers the guest off
 * (QEMU runs with -no-reboot, so QEMU exits).  Every failure is one line on
 * the console beginning "rtnvm-init:".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, const char *arg)
{
	fprintf(stderr, "rtnvm-init: %s %s: %s\n", what, arg, strerror(errno));
}

static int mnt(const char *src, const char *dst, const char *type, unsigned long flags,
	       const char *data)
{
	mkdir(dst, 0755);
	if (mount(src, dst, type, flags, data) == 0)
		return 0;
	say("mount", dst);
	return -1;
}

static void load_modules(void)
{
	char line[256], path[300];
	FILE *f = fopen("/modules/order", "r");

	if (!f) {
		say("open", "/modules/order");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		int fd;

		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		snprintf(path, sizeof(path), "/modules/%s", line);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			say("open", path);
			continue;
		}
		if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST)
			say("finit_module", path);
		close(fd);
	}
	fclose(f);
}

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

int main(void)
{
	const char *opts9p = "trans=virtio,version=9p2000.L,cache=loose,msize=524288";
	pid_t pid;
	int status = 0;

	mnt("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mnt("proc", "/proc", "proc", 0, NULL);
	mnt("sysfs", "/sys", "sysfs", 0, NULL);
	load_modules();
	if (mnt("hostroot", "/root", "9p", MS_RDONLY, opts9p))
		power_off();
	mnt("tmpfs", "/root/tmp", "tmpfs", 0, "mode=1777");
	mnt("tmpfs", "/root/run", "tmpfs", 0, "mode=755");
	mnt("devtmpfs", "/root/dev", "devtmpfs", 0, NULL);
	mnt("tmpfs", "/root/dev/shm", "tmpfs", 0, "mode=1777");
	mnt("proc", "/root/proc", "proc", 0, NULL);
	mnt("sysfs", "/root/sys", "sysfs", 0, NULL);
	mnt("bpf", "/root/sys/fs/bpf", "bpf", 0, NULL);
	if (mnt("rtnout", "/root/tmp/out", "9p", 0, opts9p))
		power_off();
	if (chroot("/root") || chdir("/")) {
		say("chroot", "/root");
		power_off();
	}
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"/bin/sh", "/tmp/out/guest.sh", NULL};
		char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"HOME=/tmp", "PYTHONDONTWRITEBYTECODE=1", "TERM=dumb", NULL};

		execve(argv[0], argv, envp);
		say("exec", argv[1]);
		_exit(127);
	}
	/* PID 1 reaps every orphan until the script itself ends. */
	for (;;) {
		pid_t got = wait(&status);

		if (got == pid || (got < 0 && errno == ECHILD))
			break;
	}
	power_off();
	return 0;
}
