"""rtnet.benchkit.listening: a TCP listener found in a process's namespace by its table."""

import os
import socket

from rtnet.benchkit import listening


def test_a_listening_socket_is_found_and_a_closed_one_is_not():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert not listening(os.getpid(), port)  # bound, not listening yet
        s.listen()
        assert listening(os.getpid(), port)
    assert not listening(os.getpid(), port)


def test_a_process_that_is_gone_listens_on_nothing():
    assert not listening(2**22 + 1, 5201)  # above pid_max's default: no such process
