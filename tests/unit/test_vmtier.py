"""tools/vmtier.py's pure parts: the initramfs's cpio, module dependencies from .modinfo,
QEMU's NIC arguments and the device names it may create (the guests themselves are
tests/vm's)."""

import pytest

from tools import vmtier


def test_a_cpio_entry_is_newc_and_four_byte_aligned():
    e = vmtier._cpio_entry("init", 0o100755, b"abcde", ino=6)
    assert e.startswith(b"070701") and len(e) % 4 == 0
    assert int(e[54:62], 16) == 5  # c_filesize
    assert b"init\0" in e and b"abcde" in e


def test_a_whole_cpio_ends_with_the_trailer(tmp_path):
    p = tmp_path / "x.cpio"
    p.write_bytes(
        vmtier._cpio_entry("init", 0o100755, b"x") + vmtier._cpio_entry("TRAILER!!!", 0, ino=0)
    )
    assert vmtier._cpio_whole(str(p))
    p.write_bytes(p.read_bytes()[:-130])
    assert not vmtier._cpio_whole(str(p))


def test_module_dependencies_come_from_modinfo():
    data = b"\0license=GPL\0depends=dca,i2c-algo-bit\0name=igb\0"
    assert vmtier._modinfo_depends(data) == ["dca", "i2c-algo-bit"]
    assert vmtier._modinfo_depends(b"\0depends=\0name=x\0") == []
    assert vmtier._modinfo_depends(b"no modinfo") == []


def test_virtio_gets_the_modern_iommu_device_with_its_queues():
    args = vmtier.nic_args("virtio", "rtnvm-a1", "02:52:54:00:01:02", 1, queues=4)
    assert args[1] == "tap,id=n1,ifname=rtnvm-a1,script=no,downscript=no,queues=4"
    assert "disable-legacy=on,iommu_platform=on,mq=on,vectors=10" in args[3]
    assert (
        vmtier.nic_args("igb", "rtnvm-a0", "02:00:00:00:00:01", 0)[3]
        == "igb,netdev=n0,mac=02:00:00:00:00:01,id=nic0"  # the id QEMU's device_del takes
    )
    assert args[3].endswith(",id=nic1")
    with pytest.raises(ValueError):
        vmtier.nic_args("rtl8139", "rtnvm-a0", "02:00:00:00:00:01", 0)


def test_only_rtnvm_devices_of_at_most_15_characters():
    for bad in ("eth0", "rtnvm-much-too-long0"):
        with pytest.raises(ValueError):
            vmtier.add_tap(bad)
