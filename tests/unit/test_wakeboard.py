"""The process's board of RT threads' next deadlines (csrc/core/rtn_wakeboard.c) through cffi."""

from rtnet._core import lib

INT64_MAX = 2**63 - 1
ANY = lib.RTN_WAKEBOARD_ANY_CPU


def test_the_next_deadline_is_the_earliest_posted_one_not_yet_past():
    a, b = lib.rtn_wakeboard_claim(), lib.rtn_wakeboard_claim()
    try:
        assert a >= 0 and b >= 0 and a != b
        lib.rtn_wakeboard_post(a, 5_000)
        lib.rtn_wakeboard_post(b, 3_000)
        assert lib.rtn_wakeboard_next(1_000, ANY) == 3_000
        assert lib.rtn_wakeboard_next(3_000, ANY) == 3_000  # due now still counts
        assert lib.rtn_wakeboard_next(3_001, ANY) == 5_000  # past deadlines are skipped
        lib.rtn_wakeboard_post(b, INT64_MAX)  # b has none
        assert lib.rtn_wakeboard_next(1_000, ANY) == 5_000
        lib.rtn_wakeboard_release(a)
        assert lib.rtn_wakeboard_next(1_000, ANY) == INT64_MAX
    finally:
        lib.rtn_wakeboard_release(a)
        lib.rtn_wakeboard_release(b)


def test_slots_run_out_and_come_back_and_bad_slots_are_ignored():
    claimed = []
    try:
        while (slot := lib.rtn_wakeboard_claim()) >= 0:
            claimed.append(slot)
            assert len(claimed) <= lib.RTN_WAKEBOARD_SLOTS
        # a station that gets no slot posts nothing: -1 and out-of-range slots are no-ops
        lib.rtn_wakeboard_post(-1, 7)
        lib.rtn_wakeboard_post(lib.RTN_WAKEBOARD_SLOTS, 7)
        lib.rtn_wakeboard_release(-1)
        assert lib.rtn_wakeboard_next(0, ANY) != 7
        lib.rtn_wakeboard_release(claimed.pop())
        claimed.append(lib.rtn_wakeboard_claim())
        assert claimed[-1] >= 0
    finally:
        for slot in claimed:
            lib.rtn_wakeboard_release(slot)


def test_a_thread_pinned_elsewhere_is_not_in_a_helpers_way():
    """A helper asks about the CPUs it may run on: an RT thread pinned to another CPU does
    not count, one pinned to one of them or not pinned does, and a released slot forgets
    its CPU."""
    a, b = lib.rtn_wakeboard_claim(), lib.rtn_wakeboard_claim()
    try:
        lib.rtn_wakeboard_pin(a, 1)
        lib.rtn_wakeboard_pin(b, 3)
        lib.rtn_wakeboard_post(a, 3_000)
        lib.rtn_wakeboard_post(b, 5_000)
        assert lib.rtn_wakeboard_next(1_000, 0b0001) == INT64_MAX  # CPU 0: neither
        assert lib.rtn_wakeboard_next(1_000, 0b1001) == 5_000  # CPUs 0 and 3: b's
        assert lib.rtn_wakeboard_next(1_000, 0b0010) == 3_000  # CPU 1: a's
        assert lib.rtn_wakeboard_next(1_000, ANY) == 3_000
        lib.rtn_wakeboard_pin(a, -1)  # not pinned: in everybody's way
        assert lib.rtn_wakeboard_next(1_000, 0b0001) == 3_000
        lib.rtn_wakeboard_pin(a, 64)  # beyond the mask: counted as everywhere
        assert lib.rtn_wakeboard_next(1_000, 0b0001) == 3_000
        lib.rtn_wakeboard_pin(b, 0)
        lib.rtn_wakeboard_release(b)
        b2 = lib.rtn_wakeboard_claim()  # the slot comes back unpinned
        try:
            lib.rtn_wakeboard_post(b2, 2_000)
            assert lib.rtn_wakeboard_next(1_000, 0b1000) == 2_000
        finally:
            lib.rtn_wakeboard_release(b2)
    finally:
        lib.rtn_wakeboard_release(a)
        lib.rtn_wakeboard_release(b)
