"""rtnet-run's rules and settings, read by librtnet_preload.so before the program's main:
a malformed rule stops the program with one line naming where it is; good rules and
everything the library is not asked about leave the program as it is (no daemon needed)."""

import os
import subprocess
import sys

import pytest
from conftest import skip_or_fail

from rtnet import run


@pytest.fixture(scope="module")
def lib():
    try:
        return run.library_path()
    except FileNotFoundError as exc:
        skip_or_fail(str(exc))


def preloaded(lib, env_extra, argv=("true",)):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RTNET_")}
    env.update(env_extra, LD_PRELOAD=lib)
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    "rules, line, word",
    [
        ("rt udp * *\nrtt udp * *", 2, "rtt"),
        ("rt udp 198.18.0.1:99999 *", 1, "99999"),
        ("os udp 198.18.0.300 *", 1, "198.18.0.300"),
        ("rt udp 198.18.0.0/33 *", 1, "prefix"),
        ("rt packet 0x0800x", 1, "0x0800x"),
        ("rt packet 0x88b5 prio 32", 1, "32"),
        ("rt udp * * slot", 1, "slot"),
        ("rt tcp * *", 1, "tcp"),
        ("rt udp *", 1, "REMOTE"),
        ("# fine ; still a comment\n\nos packet * ; rt udp * * sloth 2", 3, "sloth"),
        ("rt udp * * lifetime 0", 1, "lifetime '0'"),
        ("rt udp * * prio 1\nrt packet 0x88b5 lifetime 10000001", 2, "10000001"),
        ("rt udp * * lifetime -5", 1, "'-5'"),
        ("rt udp * * lifetime", 1, "'lifetime' without its number"),
    ],
)
def test_a_malformed_rule_is_one_line_naming_its_line_and_the_program_never_runs(
    lib, tmp_path, rules, line, word
):
    marker = tmp_path / "ran"
    res = preloaded(lib, {"RTNET_RULES": rules}, ("touch", str(marker)))
    assert res.returncode == 2
    err = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(err) == 1, res.stderr
    assert err[0].startswith("rtnet-run: RTNET_RULES line ") and f"line {line}:" in err[0]
    assert word in err[0]
    assert not marker.exists()


def test_a_rules_file_error_names_the_file(lib, tmp_path):
    f = tmp_path / "my.rules"
    f.write_text("rt udp * *\nrt udp * * prio 99\n")
    res = preloaded(lib, {"RTNET_RULES_FILE": str(f)})
    assert res.returncode == 2 and f"{f} line 2:" in res.stderr and "99" in res.stderr
    res = preloaded(lib, {"RTNET_RULES_FILE": str(tmp_path / "missing")})
    assert res.returncode == 2 and "No such file" in res.stderr


@pytest.mark.parametrize(
    "env, word",
    [
        ({"RTNET_FALLBACK": "sometimes"}, "RTNET_FALLBACK"),
        ({"RTNET_RT_ADDR": "198.18.0"}, "RTNET_RT_ADDR"),
        ({"RTNET_RT_SUBNET": "198.18.0.0/99"}, "prefix"),
        ({"RTNET_ETHERTYPES": "0x88b5,ip"}, "'ip'"),
    ],
)
def test_bad_settings_are_one_line(lib, env, word):
    res = preloaded(lib, env)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and word in res.stderr, res.stderr


def test_good_rules_leave_a_program_alone_and_its_kernel_sockets_work(lib):
    # loopback UDP in a preloaded Python: no rule takes 127.0.0.1, so it is the kernel's
    prog = (
        "import socket; a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "a.bind(('127.0.0.1', 0)); b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "b.sendto(b'kernel', a.getsockname()); a.settimeout(5); print(a.recv(10).decode())"
    )
    res = preloaded(
        lib,
        {
            "RTNET_RULES": "rt udp 198.18.0.1 * ; os udp * *",
            "RTNET_RT_ADDR": "198.18.0.1",
            "RTNET_RT_SUBNET": "198.18.0.0/24",
            "RTNET_ETHERTYPES": "0x88b5",
        },
        (sys.executable, "-c", prog),
    )
    assert res.returncode == 0 and res.stdout == "kernel\n" and res.stderr == "", res


def test_no_daemon_falls_back_to_the_kernel_with_one_warning_or_fails(lib, tmp_path):
    # a socket the rules send real-time, with no station daemon anywhere (an empty run dir)
    prog = (
        "import socket, errno\n"
        "for port in (0, 0, 0):\n"
        "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "    try:\n"
        "        s.bind(('127.0.0.1', port)); print('bound')\n"
        "    except OSError as e:\n"
        "        print(errno.errorcode[e.errno])\n"
    )
    base = {
        "RTNET_RULES": "rt udp 127.0.0.1 *",
        "RTNET_RUN_DIR": str(tmp_path),
        "RTNET_NETNS": "nowhere",
    }
    res = preloaded(lib, base, (sys.executable, "-c", prog))
    assert res.returncode == 0 and res.stdout.split() == ["bound"] * 3, res
    warnings = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(warnings) == 1 and "no station daemon" in warnings[0], res.stderr
    res = preloaded(lib, {**base, "RTNET_FALLBACK": "fail"}, (sys.executable, "-c", prog))
    assert res.stdout.split() == ["ENETDOWN"] * 3, res


RTNET_EXAMPLE_SHAPE = r"""
/* what RTnet's POSIX examples (rtt-requester, raw-ethernet) use, with their includes:
 * libc's and <rtnet.h>, which must bring what RTnet's own header brought through RTDM */
#include <errno.h>
#include <mqueue.h>
#include <pthread.h>
#include <stdio.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <rtnet.h>
int main(void)
{
    struct mq_attr a = { 0 };
    pthread_attr_t t;
    long long min = LONG_MAX;                          /* <limits.h> */
    unsigned int add = 30, params = SOCK_XMIT_PARAMS(SOCK_DEF_PRIO, SOCK_USER_CHANNEL);
    int64_t timeout = RTDM_TIMEOUT_INFINITE;
    int sock = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    mqd_t mq = mq_open("/rtt", O_RDWR | O_CREAT | O_EXCL, 0600, &a);   /* <fcntl.h> */

    pthread_attr_init(&t);
    pthread_attr_setstacksize(&t, PTHREAD_STACK_MIN);
    return ioctl(sock, RTNET_RTIOC_EXTPOOL, &add) + ioctl(sock, RTNET_RTIOC_SHRPOOL, &add) +
           ioctl(sock, RTNET_RTIOC_XMITPARAMS, &params) + ioctl(sock, RTNET_RTIOC_TIMEOUT, &timeout) +
           (int)min + (int)mq;
}
"""


def test_rtnet_h_compiles_with_plain_gcc_as_rtnets_examples_include_it(tmp_path):
    from conftest import require_tool

    gcc = require_tool("gcc")
    src = tmp_path / "shape.c"
    src.write_text(RTNET_EXAMPLE_SHAPE)
    res = subprocess.run(
        [
            gcc,
            "-Wall",
            "-Werror",
            "-c",
            "-I",
            run.include_dir(),
            str(src),
            "-o",
            str(tmp_path / "shape.o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def test_rtnet_h_numbers_are_rtnets():
    """RTnet's ioctl numbers (RTNET_REFERENCE.md 2.12): _IOW(4, 0x10.., size)."""
    import re

    text = open(os.path.join(run.include_dir(), "rtnet.h")).read()
    for name, nr, kind in (
        ("RTNET_RTIOC_XMITPARAMS", "0x10", "unsigned int"),
        ("RTNET_RTIOC_TIMEOUT", "0x11", "int64_t"),
        ("RTNET_RTIOC_EXTPOOL", "0x14", "unsigned int"),
        ("RTNET_RTIOC_SHRPOOL", "0x15", "unsigned int"),
    ):
        assert re.search(rf"#define {name}\s+_IOW\(RTIOC_TYPE_NETWORK, {nr}, {kind}\)", text), name
    assert re.search(r"#define RTDM_CLASS_NETWORK\s+4\b", text)
    assert re.search(
        r"#define SOCK_XMIT_PARAMS\(priority, channel\)\s+\(\(priority\) \| \(\(channel\) << 16\)\)",
        text,
    )
