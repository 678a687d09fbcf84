"""rtnet.nicqueues: the record of queue changes a killed rtnetd leaves behind is read back
exactly, and anything else in its place is refused whole (RecordError), never half used."""

import json
import os
import random

import pytest

from rtnet import nicqueues
from rtnet.nicqueues import QueueChange, RecordError


def test_a_record_reads_back_as_written_and_an_empty_one_is_no_file(tmp_path):
    path = str(tmp_path / "rteth0.queues")
    changes = [QueueChange("rteth0", 4, 1), QueueChange("rteth1", 8, 1)]
    nicqueues.save_record(path, changes)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert nicqueues.load_record(path) == changes
    nicqueues.save_record(path, [])
    assert not os.path.exists(path)
    assert nicqueues.load_record(path) == []


@pytest.mark.parametrize(
    "text, why",
    [
        (b"", "no JSON"),
        (b"\xff\xfe", "no JSON"),
        (b"[]", "version 1"),
        (b'{"version": 2, "changes": []}', "version 1"),
        (b'{"version": 1, "changes": {}}', "one or two ports"),
        (b'{"version": 1, "changes": [1, 2, 3]}', "one or two ports"),
        (b'{"version": 1, "changes": ["rteth0"]}', "not a table"),
        (b'{"version": 1, "changes": [{"device": "", "was": 4, "now": 1}]}', "interface name"),
        (
            b'{"version": 1, "changes": [{"device": "a-very-long-name", "was": 4, "now": 1}]}',
            "interface name",
        ),
        (b'{"version": 1, "changes": [{"device": "../x", "was": 4, "now": 1}]}', "interface name"),
        (b'{"version": 1, "changes": [{"device": "rteth0", "was": 0, "now": 1}]}', "was is not"),
        (b'{"version": 1, "changes": [{"device": "rteth0", "was": true, "now": 1}]}', "was is not"),
        (b'{"version": 1, "changes": [{"device": "rteth0", "was": 4.0, "now": 1}]}', "was is not"),
        (
            b'{"version": 1, "changes": [{"device": "rteth0", "was": 4, "now": 99999}]}',
            "now is not",
        ),
        (b" " * 70000, "larger than"),
    ],
)
def test_what_is_not_a_record_is_refused_with_one_line_naming_the_file(tmp_path, text, why):
    path = tmp_path / "rteth0.queues"
    path.write_bytes(text)
    with pytest.raises(RecordError) as err:
        nicqueues.load_record(str(path))
    assert str(err.value).startswith(f"{path}: ") and why in str(err.value)
    assert "\n" not in str(err.value)


def test_a_bad_record_is_removed_and_nothing_restored(tmp_path, caplog):
    path = tmp_path / "rteth0.queues"
    path.write_bytes(b'{"version": 1, "changes": [{"device": "lo", "was": "4", "now": 1}]}')
    assert nicqueues.restore_recorded(str(path)) == []
    assert not path.exists()
    assert "was is not a queue count" in caplog.text


def test_restoring_a_device_without_channels_or_gone_changes_nothing(tmp_path):
    # lo has no channels; the second device does not exist: both are left alone
    path = str(tmp_path / "rteth0.queues")
    changes = [QueueChange("lo", 4, 1), QueueChange("rtn-nosuchdev", 4, 1)]
    nicqueues.save_record(path, changes)
    assert nicqueues.restore_recorded(path) == changes
    assert not os.path.exists(path)
    assert nicqueues.channels("lo") is None
    assert nicqueues.one_queue("lo") is None


def test_mutated_records_parse_whole_or_are_refused(tmp_path):
    """Random byte changes to a valid record: every result is a list of well-formed changes
    or RecordError, nothing else escapes."""
    path = tmp_path / "rteth0.queues"
    good = json.dumps(
        {"version": 1, "changes": [{"device": "rteth0", "was": 4, "now": 1}]}
    ).encode()
    rng = random.Random(26)
    parsed = refused = 0
    for _ in range(3000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            op = rng.randrange(3)
            if op == 0:
                data[i] = rng.randrange(256)
            elif op == 1:
                del data[i]
            else:
                data.insert(i, rng.choice(b'{}[]",:0123456789-etrufalsn '))
        path.write_bytes(bytes(data))
        try:
            changes = nicqueues.load_record(str(path))
        except RecordError:
            refused += 1
            continue
        parsed += 1
        for c in changes:
            assert 0 < len(c.device) < nicqueues.IFNAMSIZ
            assert 1 <= c.was <= nicqueues.MAX_CHANNELS and 1 <= c.now <= nicqueues.MAX_CHANNELS
    assert parsed > 0 and refused > 0
