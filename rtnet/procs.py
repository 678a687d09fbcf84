"""Processes we started, looked up by PID in /proc (only ever the PIDs we recorded)."""


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # the command name may hold spaces and parentheses: split after the last ")"
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


PF_EXITING = 0x4  # the kernel's task flag: do_exit() has begun (field 9 of /proc/PID/stat)


def running(pid: int) -> bool:
    """Alive: not a zombie, and not on its way out (killed, it closes its files, and so
    releases its locks, only after it is marked exiting; a zombie only after that)."""
    fields = _stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    try:
        return not int(fields[6]) & PF_EXITING
    except (IndexError, ValueError):
        return True


def start_time(pid: int) -> str:
    """Start time in clock ticks (field 22 of /proc/PID/stat): tells PID reuse apart."""
    fields = _stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else "gone"
