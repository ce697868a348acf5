#!/usr/bin/env python3
"""free_ports.py [N]: prints a port P such that P .. P+N-1 (N = 2 unless given) are all free
on 127.0.0.1 now, for tests that need neighbouring ports without fixing them. P is drawn at
random below the kernel's ephemeral range (ip_local_port_range): the kernel gives ports of
that range to every bind to port 0 and every outgoing connection, so a test running
alongside could take one of ours between this check and its use (fault_port_range failed
so under ctest -j3); below it only a program that asks for that very port can. Exits 1
when 200 tries find none."""
import random
import socket
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    ephemeral_low = 32768
low = 10000
if ephemeral_low - n <= low:  # an unusual range: fall back to the ports above it
    low, high = 61000, 65535 - n
else:
    high = ephemeral_low - n

for _ in range(200):
    p = random.randint(low, high)
    socks = []
    try:
        for port in range(p, p + n):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", port))
        print(p)
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit(1)
