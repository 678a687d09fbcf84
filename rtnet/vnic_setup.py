"""The TAP rtnetd opens for the VNIC: named, addressed and offloaded as the configuration
says, its MTU and queue sized for the slot the schedule gives it (as RTnet sets them)."""

from __future__ import annotations

from . import config as _config
from .errors import ConfigError


def vnic_mtu(cfg: _config.StationConfig) -> int:
    """The VNIC's MTU as RTnet sets it: the NRT slot's size minus the RTmac header under TDMA,
    otherwise the RT device's MTU (at most 1500) minus that header."""
    from vnic.tap import RTMAC_HLEN, vnic_mtu_for

    if cfg.discipline == "tdma" and cfg.tdma is not None:
        return vnic_mtu_for(cfg.tdma, cfg.vnic.slot)
    from pyroute2 import IPRoute

    with IPRoute() as ipr:
        found = ipr.link_lookup(ifname=cfg.device)
        if not found:
            raise ConfigError(f"VNIC: device {cfg.device} not found")
        dev_mtu = ipr.link("get", index=found[0])[0].get_attr("IFLA_MTU")
    return min(dev_mtu, 1500) - RTMAC_HLEN


def open_vnic(cfg: _config.StationConfig, mac: str):
    """vnic.tap.Tap for ``cfg.vnic`` in the daemon's own namespace, sized for its slot."""
    from vnic.tap import MIN_TXQUEUELEN, OFFLOAD_BY_MODE, Tap, txqueuelen_for

    qlen = MIN_TXQUEUELEN
    if cfg.discipline == "tdma" and cfg.tdma is not None and cfg.tdma.cycle_us:
        qlen = txqueuelen_for(cfg.tdma.cycle_us, cfg.link_rate_mbps)
    return Tap(
        cfg.vnic.name,
        mac=mac,
        mtu=vnic_mtu(cfg),
        address=cfg.vnic.address,
        txqueuelen=qlen,
        offload=OFFLOAD_BY_MODE[cfg.vnic.mode],
    )
