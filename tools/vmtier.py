#!/usr/bin/env python3
"""The guest tier's helper: QEMU guests under TCG with real NIC drivers (issue 26).

Everything fetched lives in a cache under build/vm-cache/ (gitignored) and is
reused between runs:

- QEMU: Debian's qemu-system-x86 from bookworm-backports (10.x; bookworm's 7.2
  has no igb model), installed with ``apt-get install -t bookworm-backports``
  under a PRIVATE apt configuration: its own sources list, lists and archive
  directories under the cache (``-o Dir::Etc::SourceList=...
  -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=... -o Dir::Cache=...``).
  No file of the machine's apt configuration is written: backports is never
  enabled system-wide.  The mirror's URI is taken from the machine's own apt
  sources at run time.
- The kernel: Debian's newest trixie-backports kernel (the version is
  resolved at run time from ``linux-image-amd64``'s dependencies), its
  ``linux-binary-<abi>`` and ``linux-modules-<abi>`` fetched with
  ``apt-get download`` under a second private configuration, unpacked with
  ``dpkg-deb -x``; the uncompressed vmlinux is cut out of the vmlinuz (zstd)
  and booted with ``-kernel`` (PVH entry).
- The initramfs, made at run time: a newc cpio with a static /init
  (tools/vmtier_init.c) and the uncompressed modules the 9p root and the NICs
  need, in dependency order (from modules.dep).

A guest mounts the host's root read-only over 9p (so it has Python and the
built project) and a per-guest output directory read-write, runs
``guest.sh`` from that directory and powers off.  Networking is one host
bridge (``rtnvm-br0``) and tap devices (``rtnvm-*``) that the helper creates
and removes; no user-mode networking, no address on the host side, guests use
198.18.0.0/15 only.

    python3 -m tools.vmtier qemu        # only QEMU (tools/setup-system.sh calls this)
    python3 -m tools.vmtier fetch       # QEMU, kernel and initramfs into the cache
    python3 -m tools.vmtier info        # what the cache holds
    python3 -m tools.vmtier shell-test  # boot one guest, print uname and the NICs

A failure to fetch, or a corrupt cache, raises :class:`VmTierError` with one
line (the tests skip locally with it and fail under CI=true).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import lzma
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.environ.get("RTNET_VM_CACHE", os.path.join(ROOT, "build", "vm-cache"))
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
QEMU = "qemu-system-x86_64"
PREFIX = "rtnvm-"
BRIDGE = "rtnvm-br0"
# Modules the guest loads: the 9p root first, then the NIC drivers and tun (VNIC).
GUEST_MODULES = ("9p", "9pnet_virtio", "virtio_net", "igb", "e1000e", "vmxnet3", "tun")
KERNEL_CMDLINE = (
    "console=ttyS0 panic=-1 mitigations=off nokaslr tsc=reliable no_timer_check quiet loglevel=4"
)


class VmTierError(RuntimeError):
    """One line that says what of the tier is unavailable and why."""


def log(msg: str) -> None:
    print(f"vmtier: {msg}", file=sys.stderr, flush=True)


def _run(argv, *, what: str, timeout: float = 600, env=None) -> str:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise VmTierError(f"{what}: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise VmTierError(f"{what}: timed out after {timeout:.0f} s") from None
    if p.returncode != 0:
        lines = [ln for ln in (p.stderr + p.stdout).strip().splitlines() if ln.strip()]
        errs = [ln for ln in lines if ln.startswith(("E:", "W:", "dpkg-deb", "error"))]
        last = (errs or lines or ["no output"])[-1].strip()
        raise VmTierError(f"{what} failed: {last[:200]}")
    return p.stdout


# -- the private apt configuration ---------------------------------------------------------


def _machine_sources() -> list[tuple[str, list[str]]]:
    """(URI, suites) of the machine's own Debian sources (deb822 and one-line)."""
    out = []
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        for stanza in open(path, encoding="utf-8", errors="replace").read().split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                m = re.match(r"^([A-Za-z-]+):\s*(.*)$", line)
                if m:
                    fields[m.group(1).lower()] = m.group(2)
            if "deb" not in fields.get("types", "").split() or fields.get("enabled") == "no":
                continue
            for uri in fields.get("uris", "").split():
                out.append((uri.rstrip("/"), fields.get("suites", "").split()))
    lists = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list"))
    for path in lists:
        if not os.path.exists(path):
            continue
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.match(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m:
                out.append((m.group(1).rstrip("/"), [m.group(2)]))
    return out


def mirror_uris() -> tuple[str, str | None]:
    """The Debian archive and security URIs the machine already uses."""
    main = security = None
    for uri, suites in _machine_sources():
        if any(s.endswith("-security") for s in suites):
            security = security or uri
        elif any(re.fullmatch(r"[a-z]+(-updates)?", s) for s in suites):
            main = main or uri
    if main is None:
        raise VmTierError(
            "no Debian mirror in the machine's apt sources "
            "(/etc/apt/sources.list*) to fetch QEMU and the kernel from"
        )
    return main, security


class PrivateApt:
    """apt-get with its own sources list, lists and cache under ``base``."""

    def __init__(self, base: str, lines: list[str]):
        self.base = base
        self.lines = lines
        self.sources = os.path.join(base, "sources.list")
        self.lists = os.path.join(base, "lists")
        self.cache = os.path.join(base, "cache")

    def opts(self) -> list[str]:
        return [
            "-o",
            f"Dir::Etc::SourceList={self.sources}",
            "-o",
            "Dir::Etc::SourceParts=/dev/null",
            "-o",
            f"Dir::State::Lists={self.lists}",
            "-o",
            f"Dir::Cache={self.cache}",
            "-o",
            "APT::Sandbox::User=root",
            "-q",
        ]

    def update(self, max_age_s: float = 6 * 3600) -> None:
        for d in (
            os.path.join(self.lists, "partial"),
            os.path.join(self.cache, "archives", "partial"),
        ):
            os.makedirs(d, exist_ok=True)
        text = "".join(f"{line}\n" for line in self.lines)
        stamp = os.path.join(self.base, "updated")
        fresh = (
            os.path.exists(stamp)
            and os.path.exists(self.sources)
            and time.time() - os.path.getmtime(stamp) < max_age_s
            and open(self.sources).read() == text
        )
        if fresh:
            return
        with open(self.sources, "w") as f:
            f.write(text)
        p = subprocess.run(
            ["apt-get", *self.opts(), "update"], capture_output=True, text=True, timeout=600
        )
        have = [f for f in os.listdir(self.lists) if "_Packages" in f]
        if p.returncode != 0 or not have:
            lines = [
                ln.strip()
                for ln in (p.stderr + p.stdout).splitlines()
                if ln.startswith(("E:", "W:", "Err"))
            ] or ["no package list fetched"]
            raise VmTierError(
                f"apt-get update (private sources {self.sources}) fetched no "
                f"package list: {lines[0][:200]}"
            )
        with open(stamp, "w") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))

    def show(self, pkg: str) -> str:
        return _run(["apt-cache", *self.opts(), "show", pkg], what=f"apt-cache show {pkg}")

    def download(self, pkgs: list[str], dest: str) -> None:
        os.makedirs(dest, exist_ok=True)
        p = subprocess.run(
            ["apt-get", *self.opts(), "download", *pkgs],
            cwd=dest,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if p.returncode != 0:
            lines = [ln for ln in (p.stderr + p.stdout).splitlines() if ln.strip()]
            raise VmTierError(
                f"apt-get download {' '.join(pkgs)} failed: "
                f"{(lines or ['no output'])[-1].strip()[:200]}"
            )


def _line(uri: str, suite: str) -> str:
    return f"deb [signed-by={KEYRING}] {uri} {suite} main"


# -- QEMU ----------------------------------------------------------------------------------


def qemu_version() -> tuple[int, ...] | None:
    exe = shutil.which(QEMU)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def ensure_qemu() -> str:
    """qemu-system-x86_64 with the igb model (>= 8.0); installs backports' if needed."""
    ver = qemu_version()
    if ver and ver >= (8, 0):
        return shutil.which(QEMU)
    if os.geteuid() != 0:
        raise VmTierError("QEMU >= 8.0 (igb) is not installed and installing it needs root")
    main, security = mirror_uris()
    lines = [
        _line(main, "bookworm"),
        _line(main, "bookworm-updates"),
        _line(main, "bookworm-backports"),
    ]
    if security:
        lines.append(_line(security, "bookworm-security"))
    apt = PrivateApt(os.path.join(CACHE, "apt-qemu"), lines)
    log("installing qemu-system-x86 from bookworm-backports (private apt configuration)")
    apt.update()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    _run(
        [
            "apt-get",
            *apt.opts(),
            "install",
            "-y",
            "--no-install-recommends",
            "-t",
            "bookworm-backports",
            "qemu-system-x86",
        ],
        what="installing qemu-system-x86",
        env=env,
        timeout=900,
    )
    ver = qemu_version()
    if not ver or ver < (8, 0):
        raise VmTierError(f"qemu-system-x86 installed but {QEMU} reports {ver}: igb needs 8.0")
    return shutil.which(QEMU)


# -- the kernel ----------------------------------------------------------------------------


def _kernel_apt() -> PrivateApt:
    main, _ = mirror_uris()
    return PrivateApt(os.path.join(CACHE, "apt-kernel"), [_line(main, "trixie-backports")])


def resolve_kernel_abi(apt: PrivateApt) -> str:
    """The ABI of trixie-backports' current kernel, e.g. 7.3.4+deb13-amd64."""
    text = apt.show("linux-image-amd64")
    m = re.search(r"linux-image-(\d[^\s,]*-amd64)\b", text)
    if not m:
        raise VmTierError("linux-image-amd64 in trixie-backports names no linux-image-<abi>")
    return m.group(1)


def _kernel_dir(abi: str) -> str:
    return os.path.join(CACHE, "kernel", abi)


def _cached_abis() -> list[str]:
    out = []
    for d in glob.glob(os.path.join(CACHE, "kernel", "*", "complete")):
        out.append(os.path.basename(os.path.dirname(d)))
    return sorted(out)


def _extract_vmlinux(vmlinuz: str, dest: str) -> None:
    data = open(vmlinuz, "rb").read()
    at = data.find(b"\x28\xb5\x2f\xfd")
    if at < 0:
        raise VmTierError(f"{vmlinuz}: no zstd stream in the kernel image (corrupt cache?)")
    with open(dest + ".tmp", "wb") as out:
        p = subprocess.run(["zstd", "-dcq"], input=data[at:], stdout=out, stderr=subprocess.PIPE)
    # zstd complains about the trailing bytes after the stream; the ELF is what counts.
    with open(dest + ".tmp", "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise VmTierError(
                f"{vmlinuz}: zstd gave no ELF vmlinux "
                f"({p.stderr.decode(errors='replace').strip()[:120]})"
            )
    os.replace(dest + ".tmp", dest)


def _modinfo_depends(data: bytes) -> list[str]:
    m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", data)
    return [d for d in m.group(1).decode().split(",") if d] if m else []


def _module_closure(moddir: str, names) -> list[tuple[str, bytes]]:
    """(name, uncompressed .ko) of ``names`` and what they depend on, dependencies first
    (read from each module's own .modinfo: the package ships no modules.dep).  A name with
    no .ko in the package is taken as built into the kernel."""
    paths = {}
    for dirpath, _, files in os.walk(moddir):
        for f in files:
            if ".ko" in f:
                paths[f.split(".ko")[0].replace("-", "_")] = os.path.join(dirpath, f)
    order: list[tuple[str, bytes]] = []
    seen: set[str] = set()

    def visit(name):
        name = name.replace("-", "_")
        if name in seen:
            return
        seen.add(name)
        if name not in paths:
            return
        data = _decompress(paths[name])
        for dep in _modinfo_depends(data):
            visit(dep)
        order.append((name, data))

    for n in names:
        visit(n)
    return order


def _decompress(path: str) -> bytes:
    raw = open(path, "rb").read()
    if path.endswith(".xz"):
        return lzma.decompress(raw)
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dcq"], input=raw, capture_output=True, check=True).stdout
    if path.endswith(".gz"):
        import gzip

        return gzip.decompress(raw)
    return raw


def _elf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _kernel_ok(kdir: str) -> bool:
    """Whether the unpacked kernel is whole: an ELF vmlinux and every module of the order."""
    try:
        names = open(os.path.join(kdir, "modules", "order")).read().split()
        sizes = json.loads(open(os.path.join(kdir, "complete")).read())["sizes"]
        if any(os.path.getsize(os.path.join(kdir, f)) != n for f, n in sizes.items()):
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return (
        bool(names)
        and _elf(os.path.join(kdir, "vmlinux"))
        and all(_elf(os.path.join(kdir, "modules", n)) for n in names)
    )


def ensure_kernel() -> str:
    """Download (once) and unpack the kernel; returns its cache directory."""
    apt = _kernel_apt()
    try:
        apt.update()
        abi = resolve_kernel_abi(apt)
    except VmTierError as exc:
        cached = _cached_abis()
        if not cached:
            raise
        log(f"{exc}; using the cached kernel {cached[-1]}")
        abi = cached[-1]
    kdir = _kernel_dir(abi)
    if os.path.exists(os.path.join(kdir, "complete")):
        if _kernel_ok(kdir):
            return kdir
        log(f"cache of {abi} is damaged: unpacking again")
    debs = os.path.join(CACHE, "debs")
    pkgs = [f"linux-binary-{abi}", f"linux-modules-{abi}"]
    for attempt in (1, 2):
        have = {p: glob.glob(os.path.join(debs, f"{p}_*.deb")) for p in pkgs}
        missing = [p for p, g in have.items() if not g]
        if missing:
            log(f"downloading {' '.join(missing)} (apt-get download, private sources)")
            apt.download(missing, debs)
        try:
            _unpack_kernel(
                abi, [glob.glob(os.path.join(debs, f"{p}_*.deb"))[0] for p in pkgs], kdir
            )
            return kdir
        except VmTierError as exc:
            if attempt == 2 or "unpacking" not in str(exc):
                raise VmTierError(f"kernel cache corrupt: {exc}") from None
            for g in have.values():
                for f in g:
                    os.unlink(f)
            if attempt == 2:
                raise VmTierError(f"kernel cache corrupt after a fresh download: {exc}") from None
            log(f"{exc}: downloading again")
    raise AssertionError("unreachable")


def _unpack_kernel(abi: str, deb_files: list[str], kdir: str) -> None:
    tmp = kdir + ".unpack"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        for deb in deb_files:
            _run(["dpkg-deb", "-x", deb, tmp], what=f"unpacking {os.path.basename(deb)}")
        moddir = glob.glob(os.path.join(tmp, "usr", "lib", "modules", abi))
        vmlinuz = glob.glob(os.path.join(tmp, "usr", "lib", "modules", abi, "vmlinuz")) + glob.glob(
            os.path.join(tmp, "boot", f"vmlinuz-{abi}")
        )
        if not vmlinuz or not moddir or not os.path.isdir(os.path.join(moddir[0], "kernel")):
            raise VmTierError(f"{abi}: the packages hold no vmlinuz or no modules")
        moddir = moddir[0]
        shutil.rmtree(kdir, ignore_errors=True)
        os.makedirs(os.path.join(kdir, "modules"))
        _extract_vmlinux(vmlinuz[0], os.path.join(kdir, "vmlinux"))
        order = []
        for name, data in _module_closure(moddir, GUEST_MODULES):
            with open(os.path.join(kdir, "modules", name + ".ko"), "wb") as f:
                f.write(data)
            order.append(name + ".ko")
        if not any(n.startswith("igb") for n in order):
            raise VmTierError(f"{abi}: no igb module in the package")
        with open(os.path.join(kdir, "modules", "order"), "w") as f:
            f.write("".join(f"{n}\n" for n in order))
        sizes = {
            f: os.path.getsize(os.path.join(kdir, f))
            for f in ["vmlinux"] + [f"modules/{n}" for n in order]
        }
        with open(os.path.join(kdir, "complete"), "w") as f:
            json.dump({"abi": abi, "sizes": sizes}, f, indent=1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- the initramfs -------------------------------------------------------------------------


def _cpio_entry(name: str, mode: int, data: bytes = b"", ino: int = 1) -> bytes:
    nb = name.encode() + b"\0"
    hdr = "070701" + "".join(
        f"{v:08x}" for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(nb), 0)
    )
    out = hdr.encode() + nb
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def _cpio_whole(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(6)
        f.seek(max(os.path.getsize(path) - 512, 0))
        tail = f.read()
    return head == b"070701" and b"TRAILER!!!" in tail


def build_init() -> str:
    src = os.path.join(HERE, "vmtier_init.c")
    tag = hashlib.sha256(open(src, "rb").read()).hexdigest()[:16]
    exe = os.path.join(CACHE, f"init-{tag}")
    if not _elf(exe):
        os.makedirs(CACHE, exist_ok=True)
        _run(
            ["gcc", "-static", "-O2", "-Wall", "-o", exe + ".tmp", src],
            what="building the guest's static /init (gcc -static, libc6-dev)",
        )
        os.replace(exe + ".tmp", exe)
    return exe


def build_initramfs(kdir: str) -> str:
    init = build_init()
    out = os.path.join(kdir, f"initramfs-{os.path.basename(init)}.cpio")
    if os.path.exists(out) and _cpio_whole(out):
        return out
    mods = os.path.join(kdir, "modules")
    parts = [
        _cpio_entry("dev", 0o40755, ino=1),
        _cpio_entry("proc", 0o40755, ino=2),
        _cpio_entry("sys", 0o40755, ino=3),
        _cpio_entry("root", 0o40755, ino=4),
        _cpio_entry("modules", 0o40755, ino=5),
        _cpio_entry("init", 0o100755, open(init, "rb").read(), ino=6),
    ]
    for i, name in enumerate(sorted(os.listdir(mods))):
        parts.append(
            _cpio_entry(
                f"modules/{name}", 0o100644, open(os.path.join(mods, name), "rb").read(), ino=10 + i
            )
        )
    parts.append(_cpio_entry("TRAILER!!!", 0, ino=0))
    with open(out + ".tmp", "wb") as f:
        f.write(b"".join(parts))
    os.replace(out + ".tmp", out)
    return out


def fetch() -> dict:
    """Everything a guest needs, from the cache or downloaded into it."""
    qemu = ensure_qemu()
    kdir = ensure_kernel()
    return {
        "qemu": qemu,
        "qemu_version": ".".join(map(str, qemu_version() or ())),
        "kernel": os.path.basename(kdir),
        "vmlinux": os.path.join(kdir, "vmlinux"),
        "initramfs": build_initramfs(kdir),
    }


# -- host network ----------------------------------------------------------------------------


def _ip(*args, check=True):
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise VmTierError(f"ip {' '.join(args)}: {p.stderr.strip()[:160]}")
    return p


def _links() -> list[str]:
    out = _ip("-o", "link", "show", check=False).stdout
    return [m.group(1) for m in re.finditer(r"^\d+:\s+([^:@\s]+)", out, re.M)]


def remove_network() -> None:
    """Remove every rtnvm- device (taps first, then the bridge)."""
    links = [n for n in _links() if n.startswith(PREFIX)]
    for n in sorted(links, key=lambda n: n == BRIDGE):
        _ip("link", "del", n, check=False)


def _sysctl(path: str, value: str) -> None:
    with contextlib.suppress(OSError):
        with open(path, "w") as f:
            f.write(value)


@contextlib.contextmanager
def network():
    """The host bridge: no address, no IPv6, nothing routed; removed on exit."""
    remove_network()
    try:
        _ip("link", "add", BRIDGE, "type", "bridge", "stp_state", "0", "forward_delay", "0")
        _sysctl(f"/proc/sys/net/ipv6/conf/{BRIDGE}/disable_ipv6", "1")
        _ip("link", "set", BRIDGE, "up")
        yield BRIDGE
    finally:
        remove_network()


def add_tap(name: str, queues: int = 1) -> str:
    if not name.startswith(PREFIX) or len(name) > 15:
        raise ValueError(f"tap name {name!r} must start with {PREFIX} and fit 15 characters")
    args = ["tuntap", "add", "dev", name, "mode", "tap"]
    if queues > 1:
        args.append("multi_queue")
    _ip(*args)
    _sysctl(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6", "1")
    _ip("link", "set", name, "master", BRIDGE)
    _ip("link", "set", name, "up")
    return name


# -- guests ----------------------------------------------------------------------------------


def nic_args(model: str, tap: str, mac: str, idx: int, queues: int = 1) -> list[str]:
    """QEMU arguments for one NIC on ``tap`` (igb, virtio, e1000e, vmxnet3), device id
    ``nic<idx>``."""
    nid = f"n{idx}"
    net = f"tap,id={nid},ifname={tap},script=no,downscript=no"
    if model == "virtio":
        if queues > 1:
            net += f",queues={queues}"
        dev = f"virtio-net-pci,netdev={nid},mac={mac},disable-legacy=on,iommu_platform=on" + (
            f",mq=on,vectors={2 * queues + 2}" if queues > 1 else ""
        )
    elif model in ("igb", "e1000e", "vmxnet3"):
        dev = f"{model},netdev={nid},mac={mac}"
    else:
        raise ValueError(f"unknown NIC model {model!r}")
    return ["-netdev", net, "-device", f"{dev},id=nic{idx}"]  # the id: for device_del


class Guest:
    """One QEMU guest under TCG that runs ``script`` (sh) and powers off."""

    def __init__(
        self, name: str, env: dict, rundir: str, script: str, nics=(), memory_mb: int = 384
    ):
        self.name = name
        self.out = os.path.join(rundir, name)
        shutil.rmtree(self.out, ignore_errors=True)
        os.makedirs(self.out)
        with open(os.path.join(self.out, "guest.sh"), "w") as f:
            # the checkout as its own share at its own path: the guest's /tmp and /run are
            # its own tmpfs, which hide a checkout the host keeps there (a CI clone may be)
            f.write(
                "exec >/tmp/out/guest.log 2>&1\n"
                f"mkdir -p {shlex.quote(ROOT)} 2>/dev/null\n"
                "mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,msize=524288,ro "
                f"rtnproj {shlex.quote(ROOT)} || echo 'the checkout share did not mount'\n"
                "cd /tmp/out\n" + script + "\necho $? > /tmp/out/rc\n"
            )
        self.serial = os.path.join(self.out, "serial.log")
        argv = [
            env["qemu"],
            "-accel",
            "tcg",
            "-cpu",
            "max",
            "-smp",
            "1",
            "-m",
            str(memory_mb),
            "-nodefaults",
            "-display",
            "none",
            "-no-reboot",
            "-kernel",
            env["vmlinux"],
            "-initrd",
            env["initramfs"],
            "-append",
            KERNEL_CMDLINE,
            "-serial",
            f"file:{self.serial}",
            "-qmp",
            f"unix:{os.path.join(self.out, 'qmp.sock')},server=on,wait=off",
            "-virtfs",
            "local,path=/,mount_tag=hostroot,security_model=none,readonly=on",
            "-virtfs",
            f"local,path={self.out},mount_tag=rtnout,security_model=none",
            "-virtfs",
            f"local,path={ROOT},mount_tag=rtnproj,security_model=none,readonly=on",
        ]
        for i, nic in enumerate(nics):
            argv += nic_args(nic["model"], nic["tap"], nic["mac"], i, nic.get("queues", 1))
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.out, "qemu.log"), "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.started = time.monotonic()

    def qmp(self, command: str, **arguments) -> dict:
        """One command on the guest's QMP socket; QEMU's reply ({"return": ...} or
        {"error": ...}), events before it skipped."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(os.path.join(self.out, "qmp.sock"))
            f = s.makefile("rwb")

            def call(body: dict) -> dict:
                f.write(json.dumps(body).encode() + b"\n")
                f.flush()
                while True:
                    line = f.readline()
                    if not line:
                        raise VmTierError(f"guest {self.name}: QMP closed during {command}")
                    reply = json.loads(line)
                    if "return" in reply or "error" in reply:
                        return reply

            greeting = json.loads(f.readline() or b"{}")
            if "QMP" not in greeting:
                raise VmTierError(f"guest {self.name}: no QMP greeting")
            call({"execute": "qmp_capabilities"})
            body = {"execute": command}
            if arguments:
                body["arguments"] = arguments
            return call(body)

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise VmTierError(
                f"guest {self.name} still running after {timeout:.0f} s (serial log: {self.serial})"
            ) from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def rc(self) -> int | None:
        try:
            return int(open(os.path.join(self.out, "rc")).read())
        except (OSError, ValueError):
            return None

    def file(self, name: str) -> str:
        try:
            return open(os.path.join(self.out, name), errors="replace").read()
        except OSError:
            return ""

    def results(self) -> dict:
        """The JSON the guest's script wrote to result.json ({} if none)."""
        text = self.file("result.json")
        try:
            return json.loads(text) if text else {}
        except ValueError:
            return {}

    def diagnosis(self) -> str:
        tail = (
            self.file("serial.log")[-1500:],
            self.file("guest.log")[-3000:],
            self.file("qemu.log")[-500:],
        )
        return "--- serial\n{}\n--- guest.log\n{}\n--- qemu\n{}".format(*tail)


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args[0] if args else "info"
    try:
        if cmd == "fetch":
            print(json.dumps(fetch(), indent=1))
        elif cmd == "qemu":
            print(f"{ensure_qemu()} {'.'.join(map(str, qemu_version() or ()))}")
        elif cmd == "info":
            print(
                json.dumps(
                    {"cache": CACHE, "kernels": _cached_abis(), "qemu": qemu_version()}, indent=1
                )
            )
        elif cmd == "shell-test":
            env = fetch()
            rundir = os.path.join(CACHE, "run")
            with network():
                tap = add_tap("rtnvm-t0")
                t0 = time.monotonic()
                g = Guest(
                    "shell",
                    env,
                    rundir,
                    "uname -r; ip -o link; ethtool -i eth0; python3 -c 'import rtnet'",
                    nics=[{"model": "igb", "tap": tap, "mac": "02:52:54:00:01:01"}],
                )
                try:
                    g.wait(120)
                finally:
                    g.kill()
                print(g.file("guest.log"))
                print(f"rc {g.rc()}, {time.monotonic() - t0:.1f} s")
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except VmTierError as exc:
        print(f"vmtier: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
