#!/usr/bin/env python3
"""Prints a port P such that P and P + 1 are both free on 127.0.0.1 now (the kernel picks
P): for tests that need two neighbouring ports without fixing them. Exits 1 when 100 tries
find none."""
import socket
import sys

for _ in range(100):
    a = socket.socket()
    a.bind(("127.0.0.1", 0))
    p = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", p + 1))
        print(p)
        sys.exit(0)
    except OSError:
        pass
    finally:
        a.close()
        b.close()
sys.exit(1)
