/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtn_xsk_prog.c
 * @brief The XDP program of an AF_XDP socket: load, maps, attach and detach.
 *
 * xdp_rtnet.bpf.o steers the real-time EtherTypes (rt_ethertypes) to the
 * socket entered in xsks_map and counts what it steers and passes
 * (rt_counters).  Only our own program is ever detached.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/sockios.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "rtn_core.h"
#include "rtn_xsk_priv.h"
#include "rtn_xsk_stamp_priv.h"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

#define ETHERTYPE_RTMAC 0x9021
#define ETHERTYPE_RTCFG 0x9022

/* Keep libbpf's last warning so an error message can name the kernel's cause. */
static __thread char libbpf_last[200];

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN) {
		vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
		libbpf_last[strcspn(libbpf_last, "\n")] = '\0';
	}
	return 0;
}

/*
 * Set the 32-bit constant @p name in the object's read-only data before it
 * is loaded (where BTF says it lies), so the verifier sees its value.
 * -ENOEXEC: the object has no such constant (not ours, or built before it).
 */
static int set_rodata_u32(struct bpf_object *obj, const char *name, uint32_t value)
{
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	const void *now;
	uint8_t buf[256];
	size_t size = 0;
	int id, i;

	id = map && btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	now = id > 0 ? bpf_map__initial_value(map, &size) : NULL;
	if (!now || size > sizeof(buf))
		return -ENOEXEC;
	sec = btf__type_by_id(btf, id);
	for (i = 0, v = btf_var_secinfos(sec); i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), name) ||
		    v->size != sizeof(value) || v->offset + sizeof(value) > size)
			continue;
		memcpy(buf, now, size);
		memcpy(buf + v->offset, &value, sizeof(value));
		return bpf_map__set_initial_value(map, buf, size);
	}
	return -ENOEXEC;
}

/* Open the XDP object and load it, its program's rtn_stamp_rx set to @p stamp. */
static struct bpf_object *open_and_load(const char *path, uint32_t stamp, int *err)
{
	struct bpf_object *obj;

	libbpf_last[0] = '\0';
	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		*err = -errno;
		return NULL;
	}
	*err = set_rodata_u32(obj, "rtn_stamp_rx", stamp);
	if (!*err)
		*err = bpf_object__load(obj);
	return obj;
}

struct bpf_object *rtn_xdp_obj_load(const char *path, int *stamps, int *err)
{
	static const int modes[] = { RTN_XSK_STAMP_META, RTN_XSK_STAMP_HEAD, RTN_XSK_STAMP_NONE };
	const size_t n = sizeof(modes) / sizeof(modes[0]);
	struct bpf_object *obj;
	size_t i;

	for (i = 0;; i++) {
		*stamps = modes[i];
		obj = open_and_load(path, (uint32_t)modes[i], err);
		/* the verifier's refusal is EINVAL: try the next place for the stamp */
		if (!obj || *err != -EINVAL || i + 1 == n)
			return obj;
		bpf_object__close(obj);
	}
}

int rtn_xsk_prog_load(struct rtn_xsk *x, const struct rtn_xsk_opts *o)
{
	struct bpf_program *prog;
	struct bpf_map *types;
	struct statfs sfs;
	int err;

	if (!o->bpf_obj_path || access(o->bpf_obj_path, R_OK))
		return rtn_set_error(-ENOENT,
				     "XDP object %s not found (build with setup.py build_ext)",
				     o->bpf_obj_path ? o->bpf_obj_path : "(none)");
	if (o->pin_dir && (statfs(o->pin_dir, &sfs) || sfs.f_type != BPF_FS_MAGIC))
		return rtn_set_error(-ENOENT,
				     "bpffs is not mounted at %s "
				     "(mount -t bpf bpf /sys/fs/bpf)",
				     o->pin_dir);

	libbpf_set_print(libbpf_quiet);
	x->obj = rtn_xdp_obj_load(o->bpf_obj_path, &x->xdp_stamps, &err);
	if (!x->obj)
		return rtn_set_error(err, "cannot open XDP object %s: %s", o->bpf_obj_path,
				     strerror(-err));
	if (err) {
		if (err == -EPERM)
			return rtn_set_error(err, "loading the XDP program needs CAP_BPF and "
						  "CAP_NET_ADMIN (run as root)");
		if (err == -ENOEXEC)
			return rtn_set_error(err, "%s is not an rtnet XDP object (no rtn_stamp_rx)",
					     o->bpf_obj_path);
		return rtn_set_error(err, "loading XDP object %s failed: %s%s%s", o->bpf_obj_path,
				     strerror(-err), libbpf_last[0] ? "; " : "", libbpf_last);
	}
	prog = bpf_object__find_program_by_name(x->obj, "xdp_rtnet");
	types = bpf_object__find_map_by_name(x->obj, "rt_ethertypes");
	if (!prog || !types || !bpf_object__find_map_by_name(x->obj, "xsks_map"))
		return rtn_set_error(-EINVAL, "%s is not an rtnet XDP object", o->bpf_obj_path);
	x->prog_fd = bpf_program__fd(prog);
	x->counters_fd = bpf_object__find_map_fd_by_name(x->obj, "rt_counters");
	x->unbound_fd = bpf_object__find_map_fd_by_name(x->obj, "rt_unbound");
	return 0;
}

int rtn_xsk_prog_steer(struct rtn_xsk *x, const struct rtn_xsk_opts *o)
{
	struct bpf_map *types = bpf_object__find_map_by_name(x->obj, "rt_ethertypes"), *pinned;
	uint16_t key;
	uint8_t one = 1;
	uint32_t i;
	int err, fd;

	fd = bpf_map__fd(types);
	key = ETHERTYPE_RTMAC;
	err = bpf_map_update_elem(fd, &key, &one, BPF_ANY);
	key = ETHERTYPE_RTCFG;
	err = err ? err : bpf_map_update_elem(fd, &key, &one, BPF_ANY);
	for (i = 0; !err && i < o->n_ethertypes; i++)
		err = bpf_map_update_elem(fd, &o->ethertypes[i], &one, BPF_ANY);
	if (err)
		return rtn_set_error(-errno, "filling rt_ethertypes failed: %s", strerror(errno));

	if (o->pin_dir) {
		snprintf(x->pin_path, sizeof(x->pin_path), "%s/rtn_ethertypes_%s", o->pin_dir,
			 x->ifname);
		pinned = types;
		err = bpf_map__pin(pinned, x->pin_path);
		if (err) {
			rtn_set_error(err, "pinning rt_ethertypes at %s failed: %s", x->pin_path,
				      strerror(-err));
			x->pin_path[0] = '\0';
			return err;
		}
	}
	return 0;
}

static int describe_attached(struct rtn_xsk *x, char *buf, size_t len)
{
	struct bpf_prog_info info;
	uint32_t info_len = sizeof(info);
	uint32_t id = 0;
	int fd;

	if (bpf_xdp_query_id(x->ifindex, 0, &id) || !id)
		return 0;
	memset(&info, 0, sizeof(info));
	fd = bpf_prog_get_fd_by_id(id);
	if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &info_len))
		snprintf(buf, len, "'%s' (id %u)", info.name, id);
	else
		snprintf(buf, len, "id %u", id);
	if (fd >= 0)
		close(fd);
	return 1;
}

static int attached_error(struct rtn_xsk *x)
{
	char who[64] = "";

	describe_attached(x, who, sizeof(who));
	return rtn_set_error(-EBUSY,
			     "%s: XDP program %s is already attached "
			     "(another rtnet socket or XDP tool owns the interface)",
			     x->ifname, who[0] ? who : "(unknown)");
}

static int try_attach(struct rtn_xsk *x, uint32_t mode_flag)
{
	int err;

	libbpf_last[0] = '\0';
	err = bpf_xdp_attach(x->ifindex, x->prog_fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode_flag, NULL);
	if (!err) {
		x->xdp_flags = mode_flag;
		x->attached = 1;
		x->mode = mode_flag == XDP_FLAGS_DRV_MODE ? RTN_XDP_MODE_NATIVE : RTN_XDP_MODE_SKB;
	}
	return err;
}

/*
 * Whether @p ifname is a veth with one receive queue (the lab's ports), where
 * auto means SKB-mode XDP.  A veth hands its peer's frames over as skbs.
 * Native XDP on veth first copies each skb into a page of its own unless the
 * skb already suits XDP (a head that is a page fragment, unshared, with XDP's
 * 256 bytes of headroom), which neither the skbs AF_XDP's copy mode builds
 * nor TCP's are; SKB-mode XDP runs the program on the skb itself.  veth has
 * no zero-copy either way.  Measured on the lab's path (station -> veth ->
 * bridge -> veth -> station, copy mode; tools.bench_xdp_flood, batch 8,
 * interleaved 2 s runs): 1518-byte frames 377k/s in SKB mode against 313k
 * native (4 runs each), 64-byte 414k against 336k (3 each); the sender's CPU
 * does both ends' kernel work.  A veth with several receive queues stays
 * native: SKB-mode XDP sees a frame from the peer's transmit queue N on
 * queue N - 1 (the queue the peer recorded, read back as a receive queue),
 * so it would steer frames of queue 1 to a socket bound to queue 0.  The
 * ioctl's socket is made in the calling thread's namespace, where
 * if_nametoindex() looked the name up.
 */
static int is_single_queue_veth(const char *ifname)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	int fd, veth;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&info;
	veth = !ioctl(fd, SIOCETHTOOL, &ifr) && !strcmp(info.driver, "veth");
	ifr.ifr_data = (void *)&ch;
	veth = veth && !ioctl(fd, SIOCETHTOOL, &ifr) && ch.rx_count + ch.combined_count <= 1;
	close(fd);
	return veth;
}

int rtn_xsk_prog_attach(struct rtn_xsk *x, int mode)
{
	char native_why[120];
	int err, err2;
	uint32_t id = 0;

	/* Name an existing program before trying: the kernel only says EBUSY. */
	if (!bpf_xdp_query_id(x->ifindex, 0, &id) && id)
		return attached_error(x);

	if (mode == RTN_XDP_MODE_AUTO && is_single_queue_veth(x->ifname))
		mode = RTN_XDP_MODE_SKB;
	if (mode == RTN_XDP_MODE_SKB) {
		err = try_attach(x, XDP_FLAGS_SKB_MODE);
		if (err == -EBUSY || err == -EEXIST)
			return attached_error(x);
		if (err == -EPERM)
			return rtn_set_error(err,
					     "%s: attaching XDP needs CAP_NET_ADMIN (run as root)",
					     x->ifname);
		if (err)
			return rtn_set_error(err, "%s: SKB-mode XDP attach failed: %s", x->ifname,
					     strerror(-err));
		return 0;
	}

	err = try_attach(x, XDP_FLAGS_DRV_MODE);
	if (!err)
		return 0;
	if (err == -EBUSY || err == -EEXIST)
		return attached_error(x);
	if (err == -EPERM)
		return rtn_set_error(err, "%s: attaching XDP needs CAP_NET_ADMIN (run as root)",
				     x->ifname);
	snprintf(native_why, sizeof(native_why), "native XDP attach failed: %s%s%s", strerror(-err),
		 libbpf_last[0] ? "; " : "", libbpf_last);
	if (mode == RTN_XDP_MODE_NATIVE)
		return rtn_set_error(err, "%s: driver has no native XDP support (%s)", x->ifname,
				     native_why);

	err2 = try_attach(x, XDP_FLAGS_SKB_MODE);
	if (err2 == -EBUSY || err2 == -EEXIST)
		return attached_error(x);
	if (err2)
		return rtn_set_error(err2, "%s: no XDP support: %s; SKB-mode attach failed: %s",
				     x->ifname, native_why, strerror(-err2));
	snprintf(x->fallback_reason, sizeof(x->fallback_reason), "%s", native_why);
	return 0;
}

int rtn_xsk_prog_add_socket(struct rtn_xsk *x)
{
	int map_fd = bpf_object__find_map_fd_by_name(x->obj, "xsks_map");

	if (bpf_map_update_elem(map_fd, &x->queue, &x->fd, BPF_ANY))
		return rtn_set_error(-errno, "%s: xsks_map[%u]: %s", x->ifname, x->queue,
				     strerror(errno));
	return 0;
}

static void detach_prog(struct rtn_xsk *x)
{
	struct bpf_xdp_attach_opts opts = { .sz = sizeof(opts) };
	int home = -1;

	if (!x->attached)
		return;
	/*
	 * ifindex only means something in the socket's namespace, and close()
	 * may run on a thread that lives elsewhere: go there and come back.
	 */
	if (x->netns_fd >= 0) {
		home = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		if (home >= 0 && setns(x->netns_fd, CLONE_NEWNET)) {
			close(home);
			home = -1;
		}
	}
	/* Only remove our own program, never one attached after us. */
	opts.old_prog_fd = x->prog_fd;
	bpf_xdp_detach(x->ifindex, x->xdp_flags, &opts);
	if (home >= 0) {
		setns(home, CLONE_NEWNET);
		close(home);
	}
	x->attached = 0;
}

void rtn_xsk_prog_release(struct rtn_xsk *x)
{
	detach_prog(x);
	if (x->pin_path[0])
		unlink(x->pin_path);
	x->pin_path[0] = '\0';
	if (x->obj)
		bpf_object__close(x->obj);
	x->obj = NULL;
	x->prog_fd = -1;
	x->counters_fd = -1;
	x->unbound_fd = -1;
}

/* The sum over CPUs of entry @p key of a per-CPU array of counters (0 if unreadable). */
static uint64_t percpu_sum(int fd, uint32_t key, uint64_t *vals, int ncpu)
{
	uint64_t sum = 0;
	int i;

	if (fd < 0 || bpf_map_lookup_elem(fd, &key, vals))
		return 0;
	for (i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

void rtn_xsk_prog_counters(const struct rtn_xsk *x, struct rtn_xsk_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1];
	const uint32_t nq = sizeof(out->xdp_unbound_queue) / sizeof(out->xdp_unbound_queue[0]);
	uint32_t q;

	if (ncpu <= 0)
		return;
	out->xdp_redirected = percpu_sum(x->counters_fd, 0, vals, ncpu);
	out->xdp_passed = percpu_sum(x->counters_fd, 1, vals, ncpu);
	out->xdp_unbound = 0;
	for (q = 0; x->unbound_fd >= 0 && q < RTN_XSK_QUEUES; q++) {
		uint64_t n = percpu_sum(x->unbound_fd, q, vals, ncpu);

		out->xdp_unbound += n;
		if (q < nq)
			out->xdp_unbound_queue[q] = n;
	}
}
