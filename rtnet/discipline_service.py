"""rtnetd's discipline requests, RTnet's tdmacfg and nomaccfg over the control socket:
``tdma.show``, ``tdma.misses``, ``tdma.master``, ``tdma.slave``, ``tdma.slot``,
``tdma.remove_slot``, ``tdma.detach``, ``nomac.attach`` and ``nomac.detach``.  Each change
to the station's discipline is made under the daemon's lock, whole or not at all (rtmac's
TdmaConfig validates a request before the station sees it)."""

from __future__ import annotations

import dataclasses
import threading
import time

from rtmac.tdma_config import TdmaConfig, apply_request

from . import options
from .control_server import RequestError
from .options import OPTIONS

# the settings a tdma.master or tdma.slave request may give: rtmac's flags, from the table
_FLAG_SETTINGS = {
    cmd: tuple(OPTIONS[key].name for key in options.flags(cmd).values())
    for cmd in ("master", "slave")
}


def _given(req: dict, names: tuple) -> dict:
    """The TDMA settings a request gives (what it leaves out keeps TdmaConfig's default,
    which is the table's), as they are: validate() checks their types and the C rule
    their ranges when the configuration is attached or an RTcfg payload checked."""
    return {n: req[n] for n in names if n in req}


class DisciplineService:
    """The requests on the station ``station()`` gives, whose link is modelled at
    ``link_rate_mbps``; ``lock`` is the daemon's, ``stop`` ends a calibration wait."""

    def __init__(
        self, station, dev: str, link_rate_mbps: int, lock: threading.Lock, stop: threading.Event
    ):
        self._station = station
        self.dev = dev
        self._link_rate_mbps = link_rate_mbps
        self._lock = lock
        self._stop = stop

    def handlers(self) -> tuple[dict, dict]:
        """(read-only requests, requests that change the station): name -> handler."""
        return {"tdma.show": self.show, "tdma.misses": self.misses}, {
            "tdma.master": self.master,
            "tdma.slave": self.slave,
            "tdma.slot": self.slot,
            "tdma.remove_slot": self.slot,
            "tdma.detach": self.tdma_detach,
            "nomac.attach": self.nomac_attach,
            "nomac.detach": self.nomac_detach,
        }

    def show(self, req, conn):
        with self._lock:
            cfg = self._station().tdma_config
            tdma = self._station().stats()["tdma"] if cfg else None
        return {"config": cfg.to_dict() if cfg else None, "state": tdma["state"] if tdma else None}

    def misses(self, req, conn):
        """The RT thread's records of missed slot occurrences from record number ``from``
        on (the newest RTN_MISS_RECS are kept; 0, the default, gives those): each with
        when (CLOCK_MONOTONIC, ns), how late that wake-up came and how many slots, of
        them slot 0's, it found missed; ``next`` is the ``from`` of the following call.
        So a reader can put a miss next to what else it saw then (rtnet.stall)."""
        first = req.get("from", 0)
        if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < 1 << 64:
            raise RequestError(f"from: {first!r} is not a record number (a whole number >= 0)")
        records, nxt = self._station().slot_misses(first)
        return {"misses": [dataclasses.asdict(m) for m in records], "next": nxt}

    def _require_free(self):
        disc = self._station().discipline
        if disc != "none":
            raise RequestError(
                f"{self.dev}: {disc.upper() if disc == 'tdma' else 'NoMAC'} "
                f"already attached (detach it first)"
            )

    def master_config(self, req) -> TdmaConfig:
        """The configuration a tdma.master request asks for (RTcfg checks payloads with it)."""
        backup = req.get("backup_offset_us")
        return TdmaConfig(
            role="master",
            cycle_us=req["cycle_us"],
            backup_offset_us=backup or None,
            link_rate_mbps=self._link_rate_mbps,
            **_given(req, _FLAG_SETTINGS["master"]),
        )

    def slave_config(self, req) -> TdmaConfig:
        """The configuration a tdma.slave request asks for."""
        return TdmaConfig(
            role="slave",
            link_rate_mbps=self._link_rate_mbps,
            **_given(req, _FLAG_SETTINGS["slave"]),
        )

    def master(self, req, conn):
        return self._attach(lambda st, cfg=self.master_config(req): st.attach_tdma(cfg))

    def slave(self, req, conn):
        return self._attach(lambda st, cfg=self.slave_config(req): st.attach_tdma(cfg))

    def nomac_attach(self, req, conn):
        return self._attach(lambda st: st.attach_nomac())

    def _attach(self, how) -> dict:
        """A discipline onto a station that has none (the configuration already checked)."""
        with self._lock:
            self._require_free()
            how(self._station())
        return {}

    def slot(self, req, conn):
        with self._lock:
            cur = self._station().tdma_config
            if cur is None:
                raise RequestError(f"{self.dev}: no TDMA attached")
            new = apply_request(cur, req)
            self._station().attach_tdma(new)
        reply = {}
        if req.get("cmd") == "tdma.slot" and req.get("cal_results"):
            reply["cal_results"] = self._wait_calibration(req.get("cal_timeout_ms") or 10_000)
        return reply

    def _wait_calibration(self, timeout_ms) -> list:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise RequestError(f"cal_timeout_ms: {timeout_ms!r} is not a whole number")
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            tdma = self._station().stats()["tdma"]
            cal = tdma["calibration"] if tdma else None
            if cal and cal["rounds"] and cal["done"] >= cal["rounds"]:
                return [cal["delay_ns"]]
            if tdma is None or tdma["role"] != "slave":
                return []
            if time.monotonic() > deadline:
                raise RequestError("calibration did not finish in time")
            self._stop.wait(0.05)  # calibration runs in the RT thread; poll its counters

    def tdma_detach(self, req, conn):
        return self._detach("tdma", "TDMA")

    def nomac_detach(self, req, conn):
        return self._detach("nomac", "NoMAC")

    def _detach(self, disc: str, label: str) -> dict:
        with self._lock:
            if self._station().discipline != disc:
                raise RequestError(f"{self.dev}: no {label} attached")
            self._station().detach()
        return {}
