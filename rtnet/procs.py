"""Processes we started, looked up by PID in /proc (only ever the PIDs we recorded)."""


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the command name may hold spaces and parentheses: split after the last ")"
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def start_time(pid: int) -> str:
    """Start time in clock ticks (field 22 of /proc/PID/stat): tells PID reuse apart."""
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else "gone"
