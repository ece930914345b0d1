# Sets the kernel buffers of another process's UDP socket (the calls benchmark's SIPp -rtp_echo socket, which
# SIPp's -rtp_buffsize leaves at net.core.rmem_default): takes a duplicate of its descriptor (pidfd_getfd, Linux
# 5.6, root) and forces SO_RCVBUF/SO_SNDBUF past net.core.rmem_max. Prints the receive buffer the kernel then holds.
# Usage: python3 socket-buffers.py PID LOCAL_PORT BYTES
import ctypes
import os
import socket
import sys

SYS_PIDFD_GETFD = 438
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33

pid, port, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
inode = next(
    f[9]
    for f in (line.split() for line in open('/proc/net/udp').read().splitlines()[1:])
    if int(f[1].split(':')[1], 16) == port
)
target = next(
    int(fd) for fd in os.listdir(f'/proc/{pid}/fd') if os.readlink(f'/proc/{pid}/fd/{fd}') == f'socket:[{inode}]'
)
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(pid)
fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, target, 0)
if fd < 0:
    raise OSError(ctypes.get_errno(), 'pidfd_getfd')
s = socket.socket(fileno=fd)
s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, size)
print(s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
s.detach()
os.close(fd)
os.close(pidfd)
