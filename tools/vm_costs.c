// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What this machine charges for the primitives the stack's threads are made
 * of: a system call, arming a timer, a timer wake-up, a switch to a thread
 * on the same CPU and a wake-up of a thread asleep on another.  Run by
 * tools/bench_vm_costs.py, which repeats it and holds cpu_dma_latency as the
 * stations do; prints one "name value" line per figure (us unless named _ns).
 *
 *     vm_costs [--quick]
 *
 * The CPU a figure costs is read from the thread's own CPU clock, so it is
 * what that thread is charged, as the lab's CPU accounting charges it.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int quick;

static double thread_cpu_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double wall_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static void add_ns(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000) {
		t->tv_nsec -= 1000000000;
		t->tv_sec++;
	}
}

/* a system call that does nothing: the floor of every TAP read and write */
static void syscall_cost(void)
{
	int n = quick ? 20000 : 200000;
	double t0 = wall_us();

	for (int i = 0; i < n; i++)
		syscall(SYS_getppid);
	printf("syscall_ns %.1f\n", (wall_us() - t0) * 1e3 / n);
}

/*
 * Arming a timer: one that expires before every other on this CPU makes the
 * kernel program the CPU's timer device (in a VM, a write the hypervisor
 * takes); one behind another does not.
 */
static void timer_arm_cost(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, 0), n = quick ? 2000 : 20000;
	struct itimerspec its;
	double t0;

	memset(&its, 0, sizeof(its));
	t0 = wall_us();
	for (int i = 0; i < n; i++) {
		its.it_value.tv_nsec = i % 2 ? 200000 : 300000; /* earliest: reprogrammed */
		timerfd_settime(fd, 0, &its, NULL);
	}
	printf("timer_arm_earliest %.2f\n", (wall_us() - t0) / n);
	its.it_value.tv_nsec = 0;
	t0 = wall_us();
	for (int i = 0; i < n; i++) {
		its.it_value.tv_sec = 100 + i % 2; /* behind the tick's: not reprogrammed */
		timerfd_settime(fd, 0, &its, NULL);
	}
	printf("timer_arm_behind %.2f\n", (wall_us() - t0) / n);
	close(fd);
}

/* A thread that sleeps to an absolute time and wakes: an RT thread's cycle, a pump's round. */
static void timer_wakeup_cost(long period_ns, const char *name)
{
	int n = (int)((quick ? 200000000L : 1000000000L) / period_ns);
	struct timespec t;
	double c0;

	clock_gettime(CLOCK_MONOTONIC, &t);
	c0 = thread_cpu_us();
	for (int i = 0; i < n; i++) {
		add_ns(&t, period_ns);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	printf("%s %.2f\n", name, (thread_cpu_us() - c0) / n);
}

/* ---- two threads: hand-offs and kicks ---- */

static _Atomic int turn;
static int handoffs, peer_cpu, efd, kicks_sent;
static double peer_cpu_us;

static void futex_wait(_Atomic int *a, int v)
{
	syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void futex_wake(_Atomic int *a)
{
	syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *ping_peer(void *arg)
{
	(void)arg;
	pin(peer_cpu);
	for (int i = 0; i < handoffs; i++) {
		while (turn != 1)
			futex_wait(&turn, 0);
		turn = 0;
		futex_wake(&turn);
	}
	return NULL;
}

/* Two threads passing a token on @p cpu_a and @p cpu_b: the CPU of one hand-off. */
static double handoff_cost(int cpu_a, int cpu_b)
{
	pthread_t t;
	double c0, c1;

	handoffs = quick ? 20000 : 200000;
	peer_cpu = cpu_b;
	turn = 0;
	pin(cpu_a);
	pthread_create(&t, NULL, ping_peer, NULL);
	c0 = thread_cpu_us();
	for (int i = 0; i < handoffs; i++) {
		turn = 1;
		futex_wake(&turn);
		while (turn != 0)
			futex_wait(&turn, 1);
	}
	c1 = thread_cpu_us();
	pthread_join(t, NULL);
	return (c1 - c0) / handoffs;
}

/*
 * The RT thread's way of waking the pump: a 1 ms timer loop on one CPU that
 * writes an eventfd every fourth wake-up, a thread asleep in ppoll() on it on
 * the other.  The waker's cost is the CPU of the write() that wakes it (the
 * wake-up's work is done inside it); the woken thread's, its CPU per wake-up.
 */
static void *kicker(void *arg)
{
	int n = *(int *)arg;
	struct timespec t;
	uint64_t one = 1;
	double c0;

	pin(peer_cpu);
	clock_gettime(CLOCK_MONOTONIC, &t);
	peer_cpu_us = 0;
	kicks_sent = 0;
	for (int i = 0; i < n; i++) {
		add_ns(&t, 1000000);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		if (i % 4 != 3)
			continue;
		c0 = thread_cpu_us();
		if (write(efd, &one, sizeof(one)) < 0)
			break;
		peer_cpu_us += thread_cpu_us() - c0;
		kicks_sent++;
	}
	return NULL;
}

static void kick_cost(int cpu_a, int cpu_b)
{
	int n = quick ? 400 : 2000, kicks = n / 4, woke = 0;
	double woken, c0;
	pthread_t t;
	uint64_t v;

	efd = eventfd(0, EFD_NONBLOCK);
	peer_cpu = cpu_b;
	pin(cpu_a);
	pthread_create(&t, NULL, kicker, &n);
	c0 = thread_cpu_us();
	for (int i = 0; i < kicks; i++) {
		struct pollfd p = { .fd = efd, .events = POLLIN };
		struct timespec ts = { .tv_sec = 1, .tv_nsec = 0 };

		if (ppoll(&p, 1, &ts, NULL) <= 0)
			break;
		if (read(efd, &v, sizeof(v)) < 0)
			break;
		woke++;
	}
	woken = thread_cpu_us() - c0;
	pthread_join(t, NULL);
	/* a figure of no kick at all is left out, not printed as a division by 0 */
	if (kicks_sent)
		printf("kick_waker %.2f\n", peer_cpu_us / kicks_sent);
	if (woke)
		printf("kick_woken %.2f\n", woken / woke);
	close(efd);
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	quick = argc > 1 && !strcmp(argv[1], "--quick");
	setvbuf(stdout, NULL, _IOLBF, 0);
	syscall_cost();
	timer_arm_cost();
	timer_wakeup_cost(1000000, "timer_wakeup_1ms");
	timer_wakeup_cost(4000000, "timer_wakeup_4ms");
	printf("handoff_same_cpu %.2f\n", handoff_cost(0, 0));
	if (ncpu >= 2) {
		printf("handoff_cross_cpu %.2f\n", handoff_cost(0, 1));
		kick_cost(0, 1);
	}
	return 0;
}
