// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A plain POSIX program (libc and <rtnet.h> only) that the preload tests run
 * under rtnet-run: real-time and kernel sockets mixed in poll, select and
 * epoll, blocking calls with timeouts and signals, dup, fork, exec, threads,
 * the errors of a missing neighbour, an oversize datagram, a bound port and
 * bad pointers, RTnet's ioctls, receive stamps, and a packet socket on a
 * real-time EtherType.  Each check prints "ok NAME" or "FAIL NAME: why".
 *
 *   posix_mix server IP PORT            echo UDP on IP:PORT and EtherType
 * 0x88b5 posix_mix client IP PEER PORT MAC   the checks, against such a server
 *   posix_mix closed FD                 exits 0 if FD is not open (after exec)
 */
#define _GNU_SOURCE /* sendmmsg, recvmmsg */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rtnet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ET 0x88b5

static int failures;

static void check(int ok, const char *name, const char *fmt, ...) {
  if (ok) {
    printf("ok %s\n", name);
  } else {
    va_list ap;

    failures++;
    printf("FAIL %s: ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf(" (errno %d %s)\n", errno, strerror(errno));
  }
  fflush(stdout);
}

static struct sockaddr_in addr(const char *ip, int port) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};

  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

/* What the descriptor is to the kernel: "socket", "anon_inode:[eventfd]" ... */
static int is_eventfd(int fd) {
  char path[64], link[128];
  ssize_t n;

  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  n = readlink(path, link, sizeof(link) - 1);
  if (n < 0)
    return 0;
  link[n] = 0;
  return strstr(link, "eventfd") != NULL;
}

static int64_t now_ms(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- server
 * ---------------------------------------------------------------------- */

static int server(const char *ip, int port) {
  struct sockaddr_in me = addr(ip, port);
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  int p = socket(AF_PACKET, SOCK_RAW, htons(ET));
  static char buf[65536]; /* a datagram in fragments comes back whole */

  if (u < 0 || bind(u, (struct sockaddr *)&me, sizeof(me)) < 0) {
    perror("server udp");
    return 1;
  }
  if (p < 0)
    perror("server packet");
  printf("server ready udp=%s packet=%s\n", is_eventfd(u) ? "rt" : "kernel",
         p >= 0 && is_eventfd(p) ? "rt" : "kernel");
  fflush(stdout);
  for (;;) {
    struct pollfd pf[2] = {{.fd = u, .events = POLLIN},
                           {.fd = p, .events = POLLIN}};
    int n = poll(pf, p >= 0 ? 2 : 1, 60000);

    if (n <= 0)
      return n < 0 ? 1 : 2;
    if (pf[0].revents & POLLIN) {
      struct sockaddr_in from;
      socklen_t fl = sizeof(from);
      ssize_t len = recvfrom(u, buf, sizeof(buf), MSG_DONTWAIT,
                             (struct sockaddr *)&from, &fl);

      if (len == 4 && !memcmp(buf, "quit", 4))
        return 0;
      if (len >= 0)
        sendto(u, buf, len, 0, (struct sockaddr *)&from, fl);
    }
    if (p >= 0 && (pf[1].revents & POLLIN)) {
      ssize_t len = recv(p, buf, sizeof(buf), MSG_DONTWAIT);
      unsigned char mac[6];

      if (len >= 14) { /* back to whoever sent it */
        memcpy(mac, buf, 6);
        memcpy(buf, buf + 6, 6);
        memcpy(buf + 6, mac, 6);
        send(p, buf, len, 0);
      }
    }
  }
}

/* ---- client
 * ---------------------------------------------------------------------- */

static struct sockaddr_in peer;

static int echo(int fd, const char *msg, char *out, size_t cap) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  ssize_t n;

  if (sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&peer, sizeof(peer)) <
      0)
    return -1;
  if (poll(&pf, 1, 3000) != 1)
    return -2;
  n = recv(fd, out, cap - 1, 0);
  if (n < 0)
    return -3;
  out[n] = 0;
  return strcmp(out, msg) ? -4 : 0;
}

static void on_alarm(int sig) { (void)sig; }

static void *blocking_reader(void *arg) {
  static char buf[64];
  int fd = *(int *)arg;
  ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

  if (n >= 0)
    buf[n] = 0;
  return n > 0 ? buf : NULL;
}

static int client(const char *ip, const char *peer_ip, int port,
                  const char *self, const char *mac) {
  struct sockaddr_in me = addr(ip, port + 1), lo = addr("127.0.0.1", 0), k2a;
  unsigned int pool = 8, params = SOCK_XMIT_PARAMS(3, 0);
  int rt, k1, k2, d, fl, n, ep;
  socklen_t sl = sizeof(k2a);
  char buf[2048];

  peer = addr(peer_ip, port);
  /* RTnet's order of calls (rtt-sender): extend the pool, set the slot, bind */
  rt = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
  n = ioctl(rt, RTNET_RTIOC_EXTPOOL, &pool);
  check(n == (int)pool, "rtnet_extpool_before_bind", "returned %d", n);
  n = ioctl(rt, RTNET_RTIOC_SHRPOOL, &pool);
  check(n == (int)pool, "rtnet_shrpool", "returned %d", n);
  check(ioctl(rt, RTNET_RTIOC_XMITPARAMS, &params) == 0, "rtnet_xmitparams",
        "refused");
  check(bind(rt, (struct sockaddr *)&me, sizeof(me)) == 0, "bind_rt", "bind");
  check(is_eventfd(rt), "rt_socket_is_on_the_rt_path",
        "fd %d is not the channel's", rt);
  /* after bind, as RTnet's rtt-sender: the 256-message ring holds 200 more than
   * 16 */
  pool = 200;
  n = ioctl(rt, RTNET_RTIOC_EXTPOOL, &pool);
  check(n == 200, "rtnet_extpool_after_bind", "returned %d", n);
  pool = 100;
  n = ioctl(rt, RTNET_RTIOC_EXTPOOL, &pool);
  check(n == 256 - 16 - 200, "rtnet_extpool_what_fits", "returned %d", n);

  /* the program's other UDP sockets stay the kernel's */
  k1 = socket(AF_INET, SOCK_DGRAM, 0);
  k2 = socket(AF_INET, SOCK_DGRAM, 0);
  bind(k2, (struct sockaddr *)&lo, sizeof(lo));
  getsockname(k2, (struct sockaddr *)&k2a, &sl);
  check(!is_eventfd(k1) && !is_eventfd(k2), "kernel_sockets_stay_kernel",
        "k1 %d k2 %d", k1, k2);
  n = sendto(k1, "kern", 4, 0, (struct sockaddr *)&k2a, sizeof(k2a));
  check(n == 4 && recv(k2, buf, sizeof(buf), 0) == 4 && !memcmp(buf, "kern", 4),
        "kernel_udp_works", "loopback exchange");

  check(echo(rt, "hello", buf, sizeof(buf)) == 0, "rt_echo", "got '%s'", buf);
  {
    /* no room for the name: the kernel still tells its full length */
    struct pollfd pf = {.fd = rt, .events = POLLIN};
    struct sockaddr_in from;
    socklen_t fl = 0;

    sendto(rt, "name", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
    n = poll(&pf, 1, 3000) == 1 ? (int)recvfrom(rt, buf, sizeof(buf), 0,
                                                (struct sockaddr *)&from, &fl)
                                : -1;
    check(n == 4 && fl == sizeof(from), "recvfrom_zero_namelen_told_full",
          "n %d fl %u", n, (unsigned)fl);
  }

  /* poll with both: the echo on the real-time socket, a datagram on the kernel
   * one */
  {
    struct pollfd pf[2] = {{.fd = rt, .events = POLLIN},
                           {.fd = k2, .events = POLLIN}};
    int64_t until = now_ms() + 3000;
    int seen = 0;

    sendto(rt, "poll", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
    sendto(k1, "poll", 4, 0, (struct sockaddr *)&k2a, sizeof(k2a));
    while (seen != 3 && now_ms() < until && poll(pf, 2, 500) >= 0) {
      if ((pf[0].revents & POLLIN) && recv(rt, buf, sizeof(buf), 0) == 4)
        seen |= 1;
      if ((pf[1].revents & POLLIN) && recv(k2, buf, sizeof(buf), 0) == 4)
        seen |= 2;
    }
    check(seen == 3, "poll_mixes_rt_and_kernel", "saw %d", seen);
  }
  /* the same with select */
  {
    int64_t until = now_ms() + 3000;
    int seen = 0;

    sendto(rt, "sele", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
    sendto(k1, "sele", 4, 0, (struct sockaddr *)&k2a, sizeof(k2a));
    while (seen != 3 && now_ms() < until) {
      struct timeval tv = {0, 500000};
      fd_set r;

      FD_ZERO(&r);
      FD_SET(rt, &r);
      FD_SET(k2, &r);
      if (select((rt > k2 ? rt : k2) + 1, &r, NULL, NULL, &tv) < 0)
        break;
      if (FD_ISSET(rt, &r) && recv(rt, buf, sizeof(buf), 0) == 4)
        seen |= 1;
      if (FD_ISSET(k2, &r) && recv(k2, buf, sizeof(buf), 0) == 4)
        seen |= 2;
    }
    check(seen == 3, "select_mixes_rt_and_kernel", "saw %d", seen);
  }
  /* and epoll */
  ep = epoll_create1(EPOLL_CLOEXEC);
  {
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 1}, got[4];
    int64_t until = now_ms() + 3000;
    int seen = 0, i;

    epoll_ctl(ep, EPOLL_CTL_ADD, rt, &ev);
    ev.data.u32 = 2;
    epoll_ctl(ep, EPOLL_CTL_ADD, k2, &ev);
    sendto(rt, "epol", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
    sendto(k1, "epol", 4, 0, (struct sockaddr *)&k2a, sizeof(k2a));
    while (seen != 3 && now_ms() < until &&
           (n = epoll_wait(ep, got, 4, 500)) >= 0)
      for (i = 0; i < n; i++)
        if (recv(got[i].data.u32 == 1 ? rt : k2, buf, sizeof(buf),
                 MSG_DONTWAIT) == 4)
          seen |= got[i].data.u32;
    check(seen == 3, "epoll_mixes_rt_and_kernel", "saw %d", seen);
    /* nothing left: the real-time socket is quiet in epoll again */
    n = epoll_wait(ep, got, 4, 100);
    {
      /* an event: say what came, and from where (taken, so one stray is one
       * FAIL) */
      struct sockaddr_in from = {0};
      socklen_t flen = sizeof(from);
      ssize_t m =
          n > 0 ? recvfrom(got[0].data.u32 == 1 ? rt : k2, buf, sizeof(buf) - 1,
                           MSG_DONTWAIT, (struct sockaddr *)&from, &flen)
                : -1;

      buf[m > 0 ? m : 0] = 0;
      check(n == 0, "epoll_quiet_when_drained",
            "spurious event: %d, socket %u events 0x%x, %zd bytes '%.16s' from "
            "%s:%u",
            n, n > 0 ? got[0].data.u32 : 0, n > 0 ? got[0].events : 0, m, buf,
            inet_ntoa(from.sin_addr), ntohs(from.sin_port));
    }
    /* epoll_pwait2 as well; writable is the library's word: room in the TX ring
     */
    {
      struct timespec ts = {0, 100000000};

      ev.events = EPOLLIN | EPOLLOUT;
      ev.data.u32 = 1;
      epoll_ctl(ep, EPOLL_CTL_MOD, rt, &ev);
      n = epoll_pwait2(ep, got, 4, &ts, NULL);
      check(n == 1 && got[0].data.u32 == 1 && got[0].events == EPOLLOUT,
            "epoll_pwait2_writable", "n %d events 0x%x", n,
            n > 0 ? got[0].events : 0);
    }
    /*
     * One-shot with an echo waiting: readable and writable in one
     * event, as Linux gives both, and then nothing until re-armed.
     */
    {
      struct pollfd pf = {.fd = rt, .events = POLLIN};

      sendto(rt, "once", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
      poll(&pf, 1, 3000); /* the echo is there; left unread */
      ev.events = EPOLLIN | EPOLLOUT | EPOLLONESHOT;
      epoll_ctl(ep, EPOLL_CTL_MOD, rt, &ev);
      n = epoll_wait(ep, got, 4, 1000);
      check(n == 1 && got[0].events == (EPOLLIN | EPOLLOUT),
            "epoll_oneshot_both", "n %d events 0x%x", n,
            n > 0 ? got[0].events : 0);
      n = epoll_wait(ep, got, 4, 100);
      check(n == 0, "epoll_oneshot_fired", "n %d after the one shot", n);
      check(recv(rt, buf, sizeof(buf), MSG_DONTWAIT) == 4, "epoll_oneshot_echo",
            "the echo was not kept");
    }
  }
  /* timeouts, non-blocking, signals */
  {
    struct timeval tv = {0, 200000};
    int64_t t0;
    struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART */
    struct itimerval it = {.it_value = {0, 100000}};
    int on = 1;

    setsockopt(rt, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    t0 = now_ms();
    n = recv(rt, buf, sizeof(buf), 0);
    check(n < 0 && errno == EAGAIN && now_ms() - t0 >= 150, "so_rcvtimeo",
          "n %d after %lld ms", n, (long long)(now_ms() - t0));
    tv.tv_usec = 0;
    setsockopt(rt, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sigaction(SIGALRM, &sa, NULL);
    setitimer(ITIMER_REAL, &it, NULL);
    n = recv(rt, buf, sizeof(buf), 0);
    check(n < 0 && errno == EINTR, "blocking_recv_eintr", "n %d", n);
    fl = fcntl(rt, F_GETFL);
    fcntl(rt, F_SETFL, fl | O_NONBLOCK);
    n = recv(rt, buf, sizeof(buf), 0);
    check(n < 0 && errno == EAGAIN && (fcntl(rt, F_GETFL) & O_NONBLOCK),
          "o_nonblock", "n %d", n);
    fcntl(rt, F_SETFL, fl);
    ioctl(rt, FIONBIO, &on);
    n = recv(rt, buf, sizeof(buf), 0);
    check(n < 0 && errno == EAGAIN, "fionbio", "n %d", n);
    on = 0;
    ioctl(rt, FIONBIO, &on);
  }
  /* the errors of the kernel's UDP */
  {
    struct sockaddr_in nobody = addr("198.18.0.99", port),
                       same = addr(ip, port + 1);
    int again = socket(AF_INET, SOCK_DGRAM, 0);

    n = sendto(rt, "x", 1, 0, (struct sockaddr *)&nobody, sizeof(nobody));
    check(n < 0 && errno == EHOSTUNREACH, "missing_neighbour_ehostunreach",
          "n %d", n);
    {
      /* beyond IPv4's 65,507 bytes: refused; below it, in fragments, whole */
      static char big[65508], back[65536];
      struct pollfd pf = {.fd = rt, .events = POLLIN};

      n = sendto(rt, big, sizeof(big), 0, (struct sockaddr *)&peer,
                 sizeof(peer));
      check(n < 0 && errno == EMSGSIZE, "oversize_emsgsize", "n %d", n);
      for (n = 0; n < 5000; n++)
        big[n] = (char)(n * 7);
      n = sendto(rt, big, 5000, 0, (struct sockaddr *)&peer, sizeof(peer));
      n = n == 5000 && poll(&pf, 1, 3000) == 1
              ? (int)recv(rt, back, sizeof(back), 0)
              : -1;
      check(n == 5000 && !memcmp(big, back, 5000), "fragmented_echo_whole",
            "n %d", n);
    }
    n = bind(again, (struct sockaddr *)&same, sizeof(same));
    check(n < 0 && errno == EADDRINUSE, "bound_port_eaddrinuse", "n %d", n);
    close(again);
    n = sendto(rt, (void *)8, 10, 0, (struct sockaddr *)&peer, sizeof(peer));
    check(n < 0 && errno == EFAULT, "bad_pointer_efault", "n %d", n);
    n = send(rt, "x", 1, MSG_OOB);
    check(n < 0 && errno == EOPNOTSUPP, "msg_oob_eopnotsupp", "n %d", n);
    n = send(rt, "x", 1, 0);
    check(n < 0 && errno == EDESTADDRREQ, "unconnected_send_edestaddrreq",
          "n %d", n);
    /* bad lengths and flags: the kernel's answers for a UDP socket */
    n = sendto(rt, buf, (size_t)-1, 0, (struct sockaddr *)&peer, sizeof(peer));
    check(n < 0 && errno == EMSGSIZE, "huge_length_emsgsize", "n %d", n);
    n = sendto(rt, "x", 1, 0x800000, (struct sockaddr *)&nobody,
               sizeof(nobody));
    check(n < 0 && errno == EHOSTUNREACH, "unknown_send_flag_ignored", "n %d",
          n);
    n = recv(rt, buf, sizeof(buf), MSG_ERRQUEUE);
    check(n < 0 && errno == EAGAIN, "msg_errqueue_eagain", "n %d", n);
    {
      struct iovec many[2048];
      struct msghdr mh = {.msg_iov = many, .msg_iovlen = 2048};
      struct timeval tv = {0, 0};
      int v;

      for (n = 0; n < 2048; n++)
        many[n] = (struct iovec){buf, 1};
      n = recvmsg(rt, &mh, MSG_DONTWAIT);
      check(n < 0 && errno == EMSGSIZE, "too_many_iovecs_emsgsize", "n %d", n);
      n = setsockopt(rt, SOL_SOCKET, SO_RCVTIMEO, &tv, 3);
      check(n < 0 && errno == EINVAL, "short_optlen_einval", "n %d", n);
      n = getsockopt(rt, SOL_SOCKET, SO_TYPE, &v, NULL);
      check(n < 0 && errno == EFAULT, "null_optlen_efault", "n %d", n);
    }
  }
  /* dup and close-on-exec as the program sees them */
  d = dup(rt);
  check(d >= 0 && is_eventfd(d) && fcntl(d, F_GETFD) == 0, "dup", "d %d", d);
  fcntl(d, F_SETFD, FD_CLOEXEC);
  check(fcntl(d, F_GETFD) == FD_CLOEXEC, "fd_cloexec", "F_GETFD %d",
        fcntl(d, F_GETFD));
  check(echo(d, "dup", buf, sizeof(buf)) == 0, "dup_shares_the_socket",
        "got '%s'", buf);
  /* options */
  {
    int tos = 0xb8, prio = 5, v;
    socklen_t vl = sizeof(v);

    check(setsockopt(rt, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) == 0 &&
              setsockopt(rt, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)) ==
                  0 &&
              getsockopt(rt, SOL_SOCKET, SO_PRIORITY, &v, &vl) == 0 && v == 5,
          "tos_and_priority", "v %d", v);
    vl = sizeof(v);
    check(getsockopt(rt, SOL_SOCKET, SO_TYPE, &v, &vl) == 0 && v == SOCK_DGRAM,
          "so_type", "v %d", v);
  }
  /* receive stamps */
  {
    int on = 1;
    char ctl[256];
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = ctl,
                        .msg_controllen = sizeof(ctl)};
    struct cmsghdr *c;
    struct timespec ts = {0, 0}, now;
    struct pollfd pf = {.fd = rt, .events = POLLIN};

    setsockopt(rt, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
    sendto(rt, "stamp", 5, 0, (struct sockaddr *)&peer, sizeof(peer));
    poll(&pf, 1, 3000);
    n = recvmsg(rt, &mh, 0);
    for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS)
        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
    clock_gettime(CLOCK_REALTIME, &now);
    check(n == 5 && ts.tv_sec && labs(now.tv_sec - ts.tv_sec) <= 2,
          "so_timestampns", "n %d stamp %lld now %lld", n, (long long)ts.tv_sec,
          (long long)now.tv_sec);
  }
  /* a thread blocked in recv, woken by the echo another thread asked for */
  {
    pthread_t t;
    void *got = NULL;

    pthread_create(&t, NULL, blocking_reader, &rt);
    usleep(
        50000); /* not synchronisation: the reader may block before or after */
    sendto(rt, "thread", 6, 0, (struct sockaddr *)&peer, sizeof(peer));
    pthread_join(t, &got);
    check(got && !strcmp(got, "thread"), "threads", "got %s",
          got ? (char *)got : "null");
  }
  /* fork: the child shares the socket (one of them uses it at a time) */
  {
    pid_t pid = fork();
    int st = 0;

    if (pid == 0) {
      char b[64];

      _exit(echo(rt, "child", b, sizeof(b)) == 0 ? 0 : 3);
    }
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork_child_uses_the_socket",
          "status %d", st);
    check(echo(rt, "parent", buf, sizeof(buf)) == 0, "fork_parent_still_has_it",
          "got '%s'", buf);
  }
  /* exec: a real-time socket never survives it, even without close-on-exec */
  {
    char fdtext[16];
    pid_t pid;
    int st = 0;

    fcntl(d, F_SETFD, 0);
    snprintf(fdtext, sizeof(fdtext), "%d", d);
    pid = fork();
    if (pid == 0) {
      execl(self, self, "closed", fdtext, (char *)NULL);
      _exit(4);
    }
    waitpid(pid, &st, 0);
    check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec_closes_rt_socket",
          "status %d", st);
  }
  /* connected: write/read, getpeername, sendmmsg/recvmmsg, readv/writev */
  {
    struct sockaddr_in got;
    socklen_t gl = sizeof(got);
    struct mmsghdr mm[3];
    struct iovec iv[3], two[2] = {{"ab", 2}, {"cd", 2}};
    char bufs[3][64];
    int i, total = 0;

    check(connect(rt, (struct sockaddr *)&peer, sizeof(peer)) == 0 &&
              getpeername(rt, (struct sockaddr *)&got, &gl) == 0 &&
              got.sin_port == peer.sin_port,
          "connect_getpeername", "port %d", ntohs(got.sin_port));
    n = write(rt, "wr", 2);
    n = n == 2 ? (int)read(rt, buf, sizeof(buf)) : -1;
    check(n == 2 && !memcmp(buf, "wr", 2), "write_read_connected", "n %d", n);
    n = writev(rt, two, 2);
    n = n == 4 ? (int)read(rt, buf, sizeof(buf)) : -1;
    check(n == 4 && !memcmp(buf, "abcd", 4), "writev", "n %d", n);
    memset(mm, 0, sizeof(mm));
    for (i = 0; i < 3; i++) {
      iv[i] = (struct iovec){bufs[i], 64};
      snprintf(bufs[i], 64, "mm%d", i);
      iv[i].iov_len = 3;
      mm[i].msg_hdr.msg_iov = &iv[i];
      mm[i].msg_hdr.msg_iovlen = 1;
    }
    n = sendmmsg(rt, mm, 3, 0);
    for (i = 0; i < 3; i++)
      iv[i].iov_len = 64;
    {
      int64_t until = now_ms() + 3000;

      while (total < 3 && now_ms() < until) {
        struct pollfd pf = {.fd = rt, .events = POLLIN};

        poll(&pf, 1, 500);
        i = recvmmsg(rt, mm + total, 3 - total, MSG_DONTWAIT, NULL);
        if (i > 0)
          total += i;
      }
    }
    check(n == 3 && total == 3, "sendmmsg_recvmmsg", "sent %d got %d", n,
          total);
  }
  /* a packet socket on a real-time EtherType */
  {
    int p = socket(AF_PACKET, SOCK_DGRAM, htons(ET));
    struct sockaddr_ll to = {.sll_family = AF_PACKET,
                             .sll_protocol = htons(ET),
                             .sll_halen = 6},
                       from;
    socklen_t fl2 = sizeof(from);
    struct pollfd pf = {.fd = p, .events = POLLIN};
    unsigned m[6];

    sscanf(mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
    for (n = 0; n < 6; n++)
      to.sll_addr[n] = (unsigned char)m[n];
    check(p >= 0 && is_eventfd(p), "packet_socket_on_rt_path", "p %d", p);
    n = sendto(p, "packet payload", 14, 0, (struct sockaddr *)&to, sizeof(to));
    check(n == 14, "packet_sendto", "n %d", n);
    n = poll(&pf, 1, 3000) == 1 ? (int)recvfrom(p, buf, sizeof(buf), 0,
                                                (struct sockaddr *)&from, &fl2)
                                : -1;
    check(n >= 14 && !memcmp(buf, "packet payload", 14) &&
              !memcmp(from.sll_addr, to.sll_addr, 6) &&
              from.sll_protocol == htons(ET),
          "packet_echo", "n %d", n);
    close(p);
  }
  sendto(k1, "done", 4, 0, (struct sockaddr *)&k2a, sizeof(k2a));
  check(recv(k2, buf, sizeof(buf), 0) == 4, "kernel_udp_still_works",
        "at the end");
  close(d);
  close(rt);
  close(ep);
  { /* the server's loop ends; a new socket, as a program reopening */
    int q = socket(AF_INET, SOCK_DGRAM, 0);

    sendto(q, "quit", 4, 0, (struct sockaddr *)&peer, sizeof(peer));
    close(q);
  }
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "server"))
    return server(argv[2], atoi(argv[3]));
  if (argc == 6 && !strcmp(argv[1], "client"))
    return client(argv[2], argv[3], atoi(argv[4]), argv[0], argv[5]);
  if (argc == 3 && !strcmp(argv[1], "closed"))
    return fcntl(atoi(argv[2]), F_GETFD) < 0 && errno == EBADF ? 0 : 1;
  fprintf(stderr,
          "usage: %s server IP PORT | client IP PEER PORT MAC | closed FD\n",
          argv[0]);
  return 2;
}
