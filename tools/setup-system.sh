#!/usr/bin/env bash
# Idempotent set-up of everything rtnet-xdp needs on Debian 12, as root:
# system packages (libxdp/libbpf, clang with the libFuzzer and sanitizer runtimes
# for the fuzz targets, clang-format for the C style check, rt-tests, iperf3,
# stress-ng, tshark, nftables for the redundant lab's wire faults, valgrind for the cost
# benchmark's instruction counts, sockperf and socat as unmodified programs under
# rtnet-run, perf for the tools that trace the scheduler or profile the VNIC), bpffs,
# and the Python package itself (editable, so the C core is built in place).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

APT_PACKAGES=(
  libxdp-dev libbpf-dev libelf-dev zlib1g-dev clang llvm libclang-rt-14-dev clang-format gcc make
  pkg-config iproute2 iputils-ping ethtool rt-tests iperf3 stress-ng tshark procps nftables
  valgrind sockperf socat zstd linux-perf
)

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-system: must run as root (installs packages, mounts bpffs)" >&2
  exit 1
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-system: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; answer once, non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libxdp and our loader want the BPF filesystem.
if ! mountpoint -q /sys/fs/bpf; then
  mount -t bpf bpf /sys/fs/bpf
fi

py=${PYTHON:-python3}
if ! "$py" -c "import rtnet._core, rtnet._bench" 2>/dev/null || [ "${RTNET_REBUILD:-0}" = 1 ] \
   || [ -n "$(find "$here/csrc" "$here/pyproject.toml" "$here/setup.py" -newer "$here/.build-stamp" 2>/dev/null | head -1)" ] \
   || [ ! -e "$here/.build-stamp" ]; then
  echo "setup-system: building and installing rtnet-xdp (pip install -e)"
  "$py" -m pip install -q --disable-pip-version-check -e "$here[test]"
  touch "$here/.build-stamp"
fi

# The guest tier's QEMU (tests/vm): qemu-system-x86 from bookworm-backports (the igb model),
# installed through tools/vmtier.py's private apt configuration, so backports is never enabled
# on the machine.  The tier fetches its kernel into build/vm-cache/ itself.  Not fatal here:
# without QEMU the tier says why (and fails under CI=true).
(cd "$here" && "$py" -m tools.vmtier qemu) >/dev/null \
  || echo "setup-system: no QEMU for the guest tier (tests/vm will say why)" >&2
