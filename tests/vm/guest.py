"""What a guest of the VM tier runs (python3 tests/vm/guest.py <role> <json>): one Python
process per guest, since every import costs about 15 times the host's under TCG.  Results go
to /tmp/out/result.json (the run's output directory on the host, over 9p).

``nics``: for each NIC given by MAC, the tier's queue step (``ethtool -L <dev> combined 1``
when the NIC has more than one queue, recorded before and after), then the stack's AF_XDP
socket with native XDP and zero-copy where offered (SKB mode and copy mode where not),
frames both ways between the NICs of each pair over the host bridge, the driver's per-queue
receive counters, the XDP program's count of the stack's frames on unbound queues and
``rtnetctl check``.

``tdma``: one station of a TDMA segment across two guests (``rtnetctl up`` with a long
cycle and a VNIC), synchronised against the other guest's clock; the slave pings the master
over the real-time path, counts the Syncs it received against the cycles that passed and
pings it through the VNIC; then the host unplugs the slave's NIC through QEMU's monitor
(rtnetd stops by itself), and the master's rtnetd is killed with SIGKILL before ``rtnetctl
down`` puts its NIC's queues back.
"""

import json
import os
import re
import subprocess
import sys
import time

OUT = "/tmp/out"
RESULT = {}


def save():
    with open(os.path.join(OUT, "result.json.tmp"), "w") as f:
        json.dump(RESULT, f, indent=1, default=str)
    os.replace(os.path.join(OUT, "result.json.tmp"), os.path.join(OUT, "result.json"))


def sh(*argv) -> tuple[int, str]:
    p = subprocess.run(argv, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def dev_by_mac(mac: str) -> str:
    for dev in os.listdir("/sys/class/net"):
        try:
            if open(f"/sys/class/net/{dev}/address").read().strip() == mac.lower():
                return dev
        except OSError:
            pass
    raise SystemExit(f"no interface with MAC {mac}")


def mac_of(dev: str) -> bytes:
    return bytes.fromhex(open(f"/sys/class/net/{dev}/address").read().strip().replace(":", ""))


def channels(dev: str) -> dict:
    """ethtool -l: the maximum and current combined/RX queue counts (None if not reported)."""
    rc, text = sh("ethtool", "-l", dev)
    if rc:
        return {"error": text.strip().splitlines()[-1:]}
    maxi, _, cur = text.partition("Current hardware settings:")

    def get(part, key):
        m = re.search(rf"^{key}:\s+(\d+)", part, re.M)
        return int(m.group(1)) if m else None

    return {
        "max_combined": get(maxi, "Combined"),
        "combined": get(cur, "Combined"),
        "rx": get(cur, "RX"),
    }


def spread_queues(dev: str, spread: int, out: dict) -> None:
    """Give the NIC ``spread`` queues where it has as many (a guest has one vCPU, so the
    drivers start with one; a host NIC starts with one per CPU)."""
    out["initial"] = channels(dev)
    mx = out["initial"].get("max_combined") or 1
    if spread > 1 and mx > 1:
        rc, text = sh("ethtool", "-L", dev, "combined", str(min(spread, mx)))
        out["spread"] = {"rc": rc, "text": text.strip()[-200:], "now": channels(dev)}


def single_queue(dev: str, spread: int) -> dict:
    """The tier's queue step for its raw sockets (rtnetd takes its NIC to one queue itself):
    spread_queues(), then one combined queue."""
    out = {}
    spread_queues(dev, spread, out)
    before = channels(dev)
    if (before.get("combined") or 1) > 1:
        rc, text = sh("ethtool", "-L", dev, "combined", "1")
        out["changed"] = f"ethtool -L {dev} combined 1 (was {before['combined']})"
        out["change_rc"] = rc
        out["change_text"] = text.strip()[-200:]
    else:
        out["changed"] = None
    out["final"] = channels(dev)
    return out


def rx_per_queue(dev: str) -> dict:
    """The driver's receive counters per queue (ethtool -S): igb's rx_queue_N_packets,
    virtio_net's rxN_xdp_packets (what XDP saw on queue N; it has no other per-queue count)."""
    rc, text = sh("ethtool", "-S", dev)
    RESULT.setdefault("ethtool_S", {})[dev] = [
        ln.strip() for ln in text.splitlines() if "rx" in ln and "packets" in ln
    ][:24]
    q = {}
    for m in re.finditer(r"^\s*rx_?(?:queue_)?(\d+)_(?:xdp_)?packets:\s+(\d+)", text, re.M):
        q[int(m.group(1))] = int(m.group(2))
    return q


def xdp_features(dev: str) -> str:
    from rtnet import xdpfeatures

    ifindex = int(open(f"/sys/class/net/{dev}/ifindex").read())
    try:
        return xdpfeatures.describe(xdpfeatures.xdp_features(ifindex))
    except Exception as exc:  # noqa: BLE001 - reported, not fatal
        return f"unknown ({exc})"


def check_json(dev: str) -> list:
    rc, text = sh(sys.executable, "-m", "rtnet.cli", "-j", "check", dev)
    try:
        return [{k: r[k] for k in ("name", "status", "current")} for r in json.loads(text)]
    except ValueError:
        return [{"error": text[-400:]}]


def role_nics(args):
    from rtnet.xsk import RawSocket

    et = 0x88B5
    devs = [dev_by_mac(n["mac"]) for n in args["nics"]]
    RESULT["nics"] = {}
    socks = {}
    for n, dev in zip(args["nics"], devs):
        sh("ip", "link", "set", dev, "up")
        info = {
            "model": n["model"],
            "dev": dev,
            "driver": sh("ethtool", "-i", dev)[1].split()[1],
            "xdp_features": xdp_features(dev),
            "queues": single_queue(dev, n.get("spread", 1)),
        }
        RESULT["nics"][n["model"]] = info
        save()
        try:
            s = RawSocket(dev, ethertypes=[et], mode="auto", zerocopy="auto")
            socks[n["model"]] = s
            info.update(mode=s.mode, zerocopy=s.zerocopy, fallback=s.fallback_reason)
        except Exception as exc:  # noqa: BLE001 - the result says so
            info["open_error"] = str(exc)
        save()
    # wait for the links (igb negotiates) before sending
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(
        open(f"/sys/class/net/{d}/operstate").read().strip() == "up" for d in devs
    ):
        time.sleep(0.2)
    before = {m: rx_per_queue(i["dev"]) for m, i in RESULT["nics"].items()}
    count = args.get("count", 100)
    directions = [(a, b) for a, b in args["pairs"] if a in socks and b in socks]
    directions += [(b, a) for a, b in directions]
    for a, b in directions:
        src, dst = socks[a], socks[b]
        head = mac_of(RESULT["nics"][b]["dev"]) + mac_of(RESULT["nics"][a]["dev"])
        got, sent = set(), 0
        for i in range(count):
            frame = head + et.to_bytes(2, "big") + i.to_bytes(4, "big") + bytes(56)
            while True:
                try:
                    src.send(frame)
                    break
                except Exception:  # noqa: BLE001 - TX ring full: let it drain
                    time.sleep(0.001)
            sent += 1
            r = dst.recv(timeout=0)
            while r is not None:
                got.add(int.from_bytes(r[0][14:18], "big"))
                r = dst.recv(timeout=0)
        deadline = time.monotonic() + 5
        while len(got) < count and time.monotonic() < deadline:
            r = dst.recv(timeout=0.2)
            if r is not None and r[0][12:14] == et.to_bytes(2, "big"):
                got.add(int.from_bytes(r[0][14:18], "big"))
        RESULT.setdefault("traffic", {})[f"{a}->{b}"] = {"sent": sent, "received": len(got)}
        save()
    for m, i in RESULT["nics"].items():
        after = rx_per_queue(i["dev"])
        i["rx_per_queue"] = {q: after[q] - before[m].get(q, 0) for q in after}
        if m in socks:
            st = socks[m].stats()
            i["xsk"] = {
                k: st[k]
                for k in (
                    "rx_frames",
                    "tx_frames",
                    "xdp_redirected",
                    "xdp_passed",
                    "rx_kernel_ts",
                    "xdp_unbound",
                    "xdp_unbound_queue",
                    "zerocopy",
                    "mode",
                )
            }
        i["channels_with_xdp"] = channels(i["dev"])
        from rtnet import nicqueues

        i["notes_with_xdp"] = nicqueues.more_than_one([i["dev"]])  # what rtnetd would say
        i["check"] = check_json(i["dev"])
        save()
    for s in socks.values():
        s.close()


TOML = """
[station]
name = "{name}"
ip = "{ip}"
xdp_mode = "native"
zerocopy = "on"
[rt]
allow_fallback = true
[link]
link_rate_mbps = 0
[tdma]
role = "{role}"
{cycle}cal_rounds = 10
guard_ns = 10000000
[[tdma.slot]]
id = 0
offset_us = {offset}
[[tdma.slot]]
id = 1
offset_us = {vnic_offset}
[vnic]
enabled = true
mode = "batched"
address = "{vnic_ip}/24"
slot = 1
"""


def status() -> dict:
    from rtnet.stationctl import request

    return request("rteth0", {"cmd": "status"}, timeout=30)["status"]


def role_tdma(args):
    from rtnet import cli, rtroute
    from rtnet.tdma_stats import TdmaState

    dev = dev_by_mac(args["mac"])
    if dev != "rteth0":
        sh("ip", "link", "set", dev, "name", "rteth0")
    sh("ip", "addr", "add", f"{args['ip']}/24", "dev", "rteth0")
    sh("ip", "link", "set", "rteth0", "up")
    # several queues, as on a host, where the driver has them: rtnetd takes them to one
    RESULT["queues"] = {}
    spread_queues("rteth0", 4, RESULT["queues"])
    RESULT["driver"] = sh("ethtool", "-i", "rteth0")[1].split()[1]
    conf = os.path.join(OUT, "station.toml")
    with open(conf, "w") as f:
        f.write(
            TOML.format(
                name=args["name"],
                ip=args["ip"],
                role=args["role"],
                offset=args["offset_us"],
                vnic_offset=args["vnic_offset_us"],
                vnic_ip=args["vnic_ip"],
                cycle=f"cycle_us = {args['cycle_us']}\n" if args["role"] == "master" else "",
            )
        )
    t0 = time.monotonic()
    rc = cli.main(["up", "-c", conf, "--timeout", "60"])
    RESULT["up_rc"] = rc
    RESULT["up_s"] = round(time.monotonic() - t0, 1)
    save()
    if rc != 0:
        return
    RESULT["queues"]["running"] = channels("rteth0")
    RESULT["queues"]["changed"] = status()["daemon"]["queues_changed"]
    assert rtroute.main(["add", args["peer_ip"], args["peer_mac"], "dev", "rteth0"]) == 0
    deadline = time.monotonic() + args["duration_s"]
    if args["role"] == "slave":
        while time.monotonic() < deadline and status()["tdma"]["state"] != TdmaState.SYNCED:
            time.sleep(0.5)
        st = status()
        RESULT["synced_after_s"] = round(time.monotonic() - t0, 1)
        RESULT["state"] = str(st["tdma"]["state"])
        RESULT["calibration"] = st["tdma"]["calibration"]
        save()
        if st["tdma"]["state"] != TdmaState.SYNCED:
            RESULT["status"] = {
                "tdma": st["tdma"],
                "xsk": st.get("xsk"),
                "xdp_mode": st.get("xdp_mode"),
            }
            RESULT["rx_per_queue"] = rx_per_queue("rteth0")
            save()
            return
        ping = os.path.join(OUT, "ping.txt")
        with open(ping, "w") as f:
            saved, sys.stdout = sys.stdout, f
            try:
                RESULT["ping_rc"] = cli.main(
                    ["ping", args["peer_ip"], "-c", "5", "-i", "200", "-t", "1000"]
                )
            finally:
                sys.stdout = saved
        RESULT["ping"] = open(ping).read()
        save()
        # Every Sync accounted for: over a window of cycles, the Syncs received plus those
        # the slave counted as missing equal the cycles that passed.
        a = status()["tdma"]
        end = time.monotonic() + args["window_s"]
        while time.monotonic() < end:
            time.sleep(0.5)
        b = status()["tdma"]
        RESULT["window"] = {
            k: b[k] - a[k]
            for k in (
                "cycles",
                "sync_rx",
                "sync_lost_events",
                "sync_relocks",
                "sync_implausible",
                "sync_learning",
                "missed_slots",
                "cycles_skipped",
            )
        }
        RESULT["window"]["cycle_no"] = b["cycle_no"] - a["cycle_no"]
        RESULT["window"]["cycle_from"], RESULT["window"]["cycle_to"] = a["cycle_no"], b["cycle_no"]
        RESULT["state_end"] = str(b["state"])
        RESULT["vnic_ping"] = vnic_ping(args["peer_vnic_ip"])
        save()
    else:
        # The master serves until the slave has pinged it over the real-time path and,
        # after its window of cycles, over the VNIC (or the time is up).
        while time.monotonic() < deadline:
            st = status()
            if st.get("ipv4", {}).get("rx_echo_request", 0) >= 5:
                break
            time.sleep(0.5)
        while time.monotonic() < deadline and vnic_rx_packets() < 4:  # ARP and 3 echoes
            time.sleep(0.5)
        RESULT["vnic_rx_packets"] = vnic_rx_packets()
    st = status()
    RESULT["status"] = {
        "tdma": st["tdma"],
        "ipv4": st.get("ipv4"),
        "xsk": st.get("xsk"),
        "xdp_mode": st.get("xdp_mode"),
    }
    RESULT["rx_per_queue"] = rx_per_queue("rteth0")
    RESULT["check"] = check_json("rteth0")
    save()
    if args["role"] == "slave":
        RESULT["unplug"] = unplugged()
    else:
        RESULT["killed"] = killed_then_down()
    save()


def vnic_rx_packets() -> int:
    try:
        return int(open("/sys/class/net/vnic0/statistics/rx_packets").read())
    except (OSError, ValueError):
        return 0


def vnic_ping(peer: str) -> dict:
    """Linux's own ping through vnic0: ordinary traffic in the VNIC's slot."""
    rc, text = sh("ping", "-n", "-c", "3", "-i", "0.5", "-W", "10", peer)
    return {"rc": rc, "out": text.strip().splitlines()[-3:]}


def _daemon_pid() -> int:
    from rtnet import paths

    return int(open(paths.pid_file("rteth0")).read())


def _wait(cond, timeout: float) -> float | None:
    """Seconds until cond() held, or None after ``timeout``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return round(time.monotonic() - t0, 1)
        time.sleep(0.2)
    return None


def _down() -> dict:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        from rtnet import cli

        rc = cli.main(["down"])
    return {"rc": rc, "out": out.getvalue().strip(), "err": err.getvalue().strip()}


def unplugged() -> dict:
    """The host takes this guest's NIC out through QEMU's monitor (device_del) once the file
    unplug-ready appears; rtnetd must notice, say so and stop, leaving nothing behind."""
    from rtnet import paths
    from rtnet.procs import running

    pid = _daemon_pid()
    out = {"pid": pid}
    open(os.path.join(OUT, "unplug-ready"), "w").close()
    out["gone_after_s"] = _wait(lambda: not os.path.exists("/sys/class/net/rteth0"), 120)
    out["daemon_stopped_after_s"] = _wait(lambda: not running(pid), 30)
    log = open(os.path.join(paths.station_dir(), "rteth0.log"), errors="replace").read()
    out["log_went_away"] = [ln for ln in log.splitlines() if "went away" in ln]
    out["log_traceback"] = "Traceback" in log
    out["left"] = [
        p for p in (paths.pid_file("rteth0"), paths.control_socket("rteth0")) if os.path.exists(p)
    ]
    out["down"] = _down()
    return out


def killed_then_down() -> dict:
    """rtnetd killed with SIGKILL cannot put the NIC's queues back: ``rtnetctl down`` does,
    from the record the daemon left."""
    import signal

    from rtnet import paths
    from rtnet.procs import running

    pid = _daemon_pid()
    out = {"before": channels("rteth0")}
    os.kill(pid, signal.SIGKILL)
    out["dead_after_s"] = _wait(lambda: not running(pid), 30)
    out["after_kill"] = channels("rteth0")
    out["record_left"] = os.path.exists(paths.queue_record("rteth0"))
    out["down"] = _down()
    out["after_down"] = channels("rteth0")
    out["record_after_down"] = os.path.exists(paths.queue_record("rteth0"))
    return out


def main():
    role, args = sys.argv[1], json.loads(sys.argv[2])
    RESULT["role"] = role
    try:
        {"nics": role_nics, "tdma": role_tdma}[role](args)
    except BaseException as exc:  # noqa: BLE001 - the host reads the result
        import traceback

        RESULT["error"] = f"{type(exc).__name__}: {exc}"
        RESULT["traceback"] = traceback.format_exc()[-2000:]
    save()


if __name__ == "__main__":
    main()
