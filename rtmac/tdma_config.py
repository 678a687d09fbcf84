"""TDMA configuration model and its validation (applied as a whole or not at all).

Semantics follow RTnet's TDMA discipline (doc/TDMA.spec rev 2.1a, section
"Time Slots"; tdmacfg and tdma_ioctl_set_slot()):

- slot ids index a table of ``max_slot_id + 1`` entries; slot 0 is the
  default RT slot, slot 1 the NRT slot, which falls back to slot 0 when it
  does not exist (:func:`effective_slot`);
- phasing/period ``x/y`` is stored as given (1-based) and the slot is active
  in cycle ``n`` when ``n % y == x - 1``;
- ``size`` is the slot's payload MTU: frames up to ``size + 14`` bytes;
  60 <= size <= the device MTU (0 on the command line means the MTU);
- a joint slot shares the queue of its primary, which must exist, have the
  same size and an id below ``max_slot_id`` (RTnet's strict check).

Beyond RTnet, which does not check the schedule at all, :func:`validate`
refuses slots that run past the cycle end or overlap each other, counting
each slot as ``[offset, offset + wire time of a size + 14 byte frame + guard)``.
A configuration object is never modified: changes return a new, validated
object, so a refused change leaves the running configuration intact.

>>> cfg = TdmaConfig(role="master", cycle_us=5000)
>>> cfg = set_slot(cfg, Slot(0, 0))
>>> cfg = set_slot(cfg, Slot(1, 1000, phasing=1, period=2))
>>> effective_slot(cfg, 1).offset_us, sorted(cfg.slots)
(1000, [0, 1])
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from rtnet import options
from rtnet._lowlevel import ffi, last_error, lib
from rtnet.errors import ConfigError
from rtnet.messages import shown
from rtnet.options import OPTIONS

# The rules are the C engine's (rtn_tdma_cfg_check() in csrc/tdma/rtn_tdma_cfg.c):
# validate() calls it through cffi.  Ranges and defaults come from rtnet.options,
# which reads the C constants.
MIN_CYCLE_US, MAX_CYCLE_US = OPTIONS["tdma.cycle_us"].limits
MAX_SLOT_ID_LIMIT = OPTIONS["tdma.max_slot_id"].hi  # the C engine's slot table
MAX_CAL_REQUESTS = OPTIONS["tdma.max_cal_requests"].hi  # calibration replies a master can hold
MAX_OFFSET_US = OPTIONS["tdma.slot.offset_us"].hi
MAX_PERIOD = OPTIONS["tdma.slot.period"].hi
MIN_SLOT_SIZE, MAX_MTU = OPTIONS["tdma.slot.size"].limits  # RTnet's MIN_SLOT_SIZE; no jumbo frames
MAX_LINK_RATE_MBPS = OPTIONS["link.link_rate_mbps"].hi
DEFAULT_GUARD_NS = OPTIONS["tdma.guard_ns"].default

# The whole-number settings of a TdmaConfig and of a Slot that the C configuration holds:
# the option table's rows with a C field (each row's name is the dataclass field's).
_C_OPTIONS = options.c_fields("link", "tdma")
_C_SLOT_OPTIONS = options.c_fields("tdma.slot")

# The allowed range of each whole-number setting of a TdmaConfig (the option
# table's); backup_offset_us is 1..cycle_us - 1 and cycle_us is optional for a slave.
LIMITS = {o.name: o.limits for o in _C_OPTIONS if o.name != "backup_offset_us"}

ETH_HLEN = 14
ETH_ZLEN = 60  # minimum frame without FCS
ETH_FCS_LEN = 4
PREAMBLE_SFD_LEN = 8
IFG_LEN = 12

ROLES = ("master", "slave")


def wire_time_ns(frame_len: int, link_rate_mbps: int) -> int:
    """Time a frame of ``frame_len`` bytes (without FCS) occupies the wire, in ns.

    Counts preamble + SFD, the frame padded to 60 bytes, the FCS and the
    inter-frame gap, rounded up.  ``link_rate_mbps == 0`` means unpaced (0 ns).

    >>> wire_time_ns(60, 100), wire_time_ns(1514, 100), wire_time_ns(42, 1000)
    (6720, 123040, 672)
    """
    _check_int("frame_len", frame_len, 0)
    _check_int("link_rate_mbps", link_rate_mbps, 0)
    if link_rate_mbps == 0:
        return 0
    octets = PREAMBLE_SFD_LEN + max(frame_len, ETH_ZLEN) + ETH_FCS_LEN + IFG_LEN
    return -(-octets * 8 * 1000 // link_rate_mbps)  # rounded up in integers, as the C engine


def _fill(c_struct, obj, rows) -> None:
    """Each C field of ``rows`` from ``obj``'s field of the row's name: in C's unit, or
    C's "not set" value for None."""
    for o in rows:
        value = getattr(obj, o.name)
        setattr(c_struct, o.c_field, o.c_none if value is None else value * o.c_scale)


@dataclass(frozen=True)
class Slot:
    """One TDMA slot of this station; ``phasing``/``period`` as in ``-p x/y``."""

    id: int
    offset_us: int
    phasing: int = 1  # the x of "x/y" (1 <= x <= period); the rest from the table
    period: int = OPTIONS["tdma.slot.period"].default
    size: int = OPTIONS["tdma.slot.size"].default
    joint: int | None = OPTIONS["tdma.slot.joint"].default
    # beyond RTnet: a transmit window (0: one frame + guard, as RTnet)
    window_us: int = OPTIONS["tdma.slot.window_us"].default

    def active_in(self, cycle_no: int) -> bool:
        return cycle_no % self.period == self.phasing - 1


@dataclass(frozen=True)
class TdmaConfig:
    """TDMA discipline configuration of one station (tdmacfg master/slave + slots).

    ``cycle_us`` is required for a master; a slave learns it from the Sync
    frames and may leave it None, which skips the cycle-end checks.
    ``backup_offset_us`` None means primary master.
    """

    role: str
    cycle_us: int | None = None
    backup_offset_us: int | None = None
    cal_rounds: int = OPTIONS["tdma.cal_rounds"].default
    max_slot_id: int = OPTIONS["tdma.max_slot_id"].default
    max_cal_requests: int = OPTIONS["tdma.max_cal_requests"].default
    slots: dict = field(default_factory=dict)
    link_rate_mbps: int = OPTIONS["link.link_rate_mbps"].default
    guard_ns: int = DEFAULT_GUARD_NS
    mtu: int = OPTIONS["tdma.mtu"].default
    # beyond RTnet: cycles without Sync before a slave goes silent
    sync_loss_cycles: int = OPTIONS["tdma.sync_loss_cycles"].default
    # master: cycles it listens for another active master before sending Sync
    listen_cycles: int = OPTIONS["tdma.listen_cycles"].default

    def to_c(self):
        """This configuration as a ``struct rtn_tdma_cfg *`` for the C engine (validate first)."""
        c = ffi.new("struct rtn_tdma_cfg *")
        # no check here (validate() does it): a role the engine lacks is its "none"
        role = {"master": lib.RTN_TDMA_ROLE_MASTER, "slave": lib.RTN_TDMA_ROLE_SLAVE}.get(
            self.role, lib.RTN_TDMA_ROLE_NONE
        )
        lib.rtn_tdma_cfg_init(c, role)
        _fill(c, self, _C_OPTIONS)
        slots = sorted(self.slots.values(), key=lambda s: s.id)
        c.n_slots = len(slots)
        for i, s in enumerate(slots):
            _fill(c.slots[i], s, _C_SLOT_OPTIONS)
            c.slots[i].phasing = s.phasing  # the x of "x/y": no row of its own
        return c

    def validated(self, learned_cycle_us: int | None = None) -> "TdmaConfig":
        """This configuration if valid (ConfigError if not); a slave without a cycle is
        also checked against the cycle it learned from the Sync frames, if given."""
        if self.role == "slave" and self.cycle_us is None and learned_cycle_us:
            validate(replace(self, cycle_us=learned_cycle_us))
        return validate(self)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["slots"] = [asdict(s) for _, s in sorted(self.slots.items())]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TdmaConfig":
        """Inverse of :meth:`to_dict`; the result is validated."""
        try:
            d = dict(d)
            slots = {s["id"]: Slot(**s) for s in d.pop("slots", [])}
            return validate(cls(**d, slots=slots))
        except (TypeError, KeyError, ValueError) as exc:
            raise ConfigError(f"bad TDMA configuration: {shown(str(exc))}") from None


def _check_int(name: str, value, lo: int | None = None, hi: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {shown(value)}")
    if lo is not None and value < lo:
        raise ConfigError(f"{name}: {shown(value)} below minimum {lo}")
    if hi is not None and value > hi:
        raise ConfigError(f"{name}: {shown(value)} above maximum {hi}")


def slot_extent_ns(config: TdmaConfig, slot: Slot) -> tuple[int, int]:
    """``[start, end)`` in ns after the cycle start that the slot occupies: its window,
    or RTnet's one full frame plus the guard."""
    start = slot.offset_us * 1000
    if slot.window_us:
        return start, start + slot.window_us * 1000
    return start, start + wire_time_ns(
        slot.size + ETH_HLEN, config.link_rate_mbps
    ) + config.guard_ns


def phases_meet(a: Slot, b: Slot) -> bool:
    """Whether some cycle has both slots active (Chinese remainder theorem)."""
    return (a.phasing - 1) % math.gcd(a.period, b.period) == (b.phasing - 1) % math.gcd(
        a.period, b.period
    )


# --- validation: Python checks what C cannot see, then calls the one validator ---------------
#
# Every rule about values (ranges, the cycle, the backup offset, slot sizes against the MTU,
# joint slots, windows, overlaps) is rtn_tdma_cfg_check()'s in csrc/tdma/rtn_tdma_cfg.c, with its
# one message.  What stays here is about Python-only input, which never reaches C: that a
# setting is a whole number at all (not a str, float or bool), the role's name, the slots
# mapping and its keys, and values that do not fit their C field or that C reads as "none"
# (a given cycle 0, a given joint below 0).  Those are refused with the option table's
# message, the same words C uses for a value outside its range.

# the whole-number fields of a TdmaConfig and of a Slot, with their option-table rows
_INT_FIELDS = {o.name: o.key for o in _C_OPTIONS}
_SLOT_INT_FIELDS = {**{o.name: o.key for o in _C_SLOT_OPTIONS}, "phasing": None}


def _python_only_globals(c: TdmaConfig) -> None:
    """The checks C cannot make: types, the role's name, the slots mapping (Python-only)."""
    if c.role not in ROLES:
        raise ConfigError(f"role must be 'master' or 'slave', got {shown(c.role)}")
    for name in _INT_FIELDS:
        value = getattr(c, name)
        if value is not None or name not in ("cycle_us", "backup_offset_us"):
            _check_int(name, value)
    if c.cycle_us == 0:  # C's "learn it from Sync": a given 0 is a value
        OPTIONS["tdma.cycle_us"].check(0, "cycle_us")
    if not isinstance(c.slots, dict):
        raise ConfigError(f"slots must be a dict of id -> Slot, got {type(c.slots).__name__}")


def _python_only_slot(key, s) -> None:
    """The checks C cannot make on one slot: its type, its key, whole numbers (Python-only)."""
    if not isinstance(s, Slot):
        raise ConfigError(f"slot {shown(key)} is not a Slot")
    _check_int("slot id", s.id)
    if not -(2**31) <= s.id < 2**31:  # names the slot in every message: must fit C's int32
        OPTIONS["tdma.slot.id"].check(s.id, "slot id")
    if key != s.id:
        raise ConfigError(f"slot {s.id} stored under id {shown(key)}")
    for name in _SLOT_INT_FIELDS:
        value = getattr(s, name)
        if value is not None or name != "joint":
            _check_int(f"slot {s.id}: {name}", value)
    if s.joint is not None and s.joint < 0:  # C's "no joint": a given -1 is a value
        OPTIONS["tdma.slot.joint"].check(s.joint, f"slot {s.id}: joint")


def _unfit(config: TdmaConfig) -> None:
    """A value too large or too small for its C field, refused with its option's message
    (Python-only: C cannot hold the value to judge it)."""
    for name, key in _INT_FIELDS.items():
        value = getattr(config, name)
        if value is not None:
            OPTIONS[key].check(value, name)
    for s in sorted(config.slots.values(), key=lambda s: s.id):
        for name, key in _SLOT_INT_FIELDS.items():
            value = getattr(s, name)
            if key is not None and value is not None:
                OPTIONS[key].check(value, "slot id" if name == "id" else f"slot {s.id}: {name}")
        if not 1 <= s.phasing <= s.period:
            raise ConfigError(
                f"slot {s.id}: phasing {shown(s.phasing)}/{s.period} outside 1..{s.period}"
            )
    raise ConfigError("a TDMA setting does not fit the C engine's configuration")


def _by_key(item) -> tuple:
    """Slots in id order, any key that is not an id (refused later) after them."""
    key = item[0]
    return (0, key, "") if isinstance(key, int) else (1, 0, shown(key))


def validate(config: TdmaConfig) -> TdmaConfig:
    """Check the whole configuration; return it unchanged or raise ConfigError.

    Python checks what only Python can see (above); every other rule is
    rtn_tdma_cfg_check()'s, whose message is raised as it is.
    """
    if not isinstance(config, TdmaConfig):
        raise ConfigError(f"expected a TdmaConfig, got {type(config).__name__}")
    _python_only_globals(config)
    for key, s in sorted(config.slots.items(), key=_by_key):
        _python_only_slot(key, s)
    try:
        if len(config.slots) > MAX_SLOT_ID_LIMIT + 1:
            raise OverflowError  # more slots than the C table: some id is out of range
        c = config.to_c()
    except OverflowError:
        _unfit(config)
    if lib.rtn_tdma_cfg_check(c) != 0:
        raise ConfigError(last_error())
    return config


def effective_slot(config: TdmaConfig, slot_id: int) -> Slot | None:
    """The slot that carries traffic for ``slot_id``: slot 1 falls back to slot 0."""
    slot = config.slots.get(slot_id)
    if slot is None and slot_id == 1:
        slot = config.slots.get(0)
    return slot


def set_slot(config: TdmaConfig, slot: Slot) -> TdmaConfig:
    """New configuration with ``slot`` added or replaced; ``config`` is untouched."""
    if not isinstance(slot, Slot):
        raise ConfigError(f"expected a Slot, got {type(slot).__name__}")
    return validate(replace(config, slots={**config.slots, slot.id: slot}))


def remove_slot(config: TdmaConfig, slot_id: int) -> TdmaConfig:
    """New configuration without slot ``slot_id``; ``config`` is untouched."""
    if not isinstance(slot_id, int) or slot_id not in config.slots:
        raise ConfigError(f"slot {shown(slot_id)} does not exist")
    slots = {k: v for k, v in config.slots.items() if k != slot_id}
    return validate(replace(config, slots=slots))


def apply_request(config: TdmaConfig, request: dict) -> TdmaConfig:
    """Apply a ``tdma.slot`` or ``tdma.remove_slot`` request from the rtmac CLI.

    A slot size of 0 means the device MTU, as with tdmacfg.  The request comes from
    a socket: a missing or mistyped value is refused by validate() like a wrong one.
    """
    cmd = request.get("cmd")
    if cmd == "tdma.remove_slot":
        return remove_slot(config, request.get("id"))
    if cmd == "tdma.slot":
        size = request.get("size", 0)
        return set_slot(
            config,
            Slot(
                id=request.get("id"),
                offset_us=request.get("offset_us"),
                phasing=request.get("phasing", 1),
                period=request.get("period", 1),
                size=config.mtu if size == 0 else size,
                joint=request.get("joint"),
                window_us=request.get("window_us", 0),
            ),
        )
    raise ConfigError(f"not a slot request: {shown(cmd)}")
