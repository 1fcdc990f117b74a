"""Two network namespaces joined by the bridge, made and always removed.

    client namespace           bridge process (root namespace)            server namespace
    lan0 10.79.0.1  <- TAP ->  [uplink: core | modem FIFO] [downlink]  <- TAP ->  wan0 10.79.0.2

The ackfilter is a bump in the wire, so both ends are on one Ethernet
segment; neighbour entries are static (no ARP on the slow link). Offloads are
off (every frame at most 1514 bytes, with its own checksums); SACK and
timestamps are on, classic ECN off unless asked; TCP metrics are not cached
between connections. Namespace names carry this process's id; names left
behind by a process that no longer runs are removed at the next start.

One run at a time on a machine: a testbed holds :data:`REALTIME_LOCK` from
its start to its end (a second one, of `ackfilter experiments` or of the
tests, waits for it), since two real-time bridges delay each other.

The hosts' programs (:meth:`Testbed.popen`) run at :data:`HOST_NICE` whatever
the caller's own priority: a host that waits for the CPU behind a build
delays its ACKs and overflows its socket buffers, which the bridge cannot
see in its own figures (the bridge itself runs as a SCHED_FIFO task).
"""

import fcntl
import os
import sys
import tempfile
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .bridge import Bridge

__all__ = ["Testbed", "TestbedError", "require_root", "HOST_NICE", "CLIENT_IP", "CLIENT_IPS", "SERVER_IP", "cleanup_stale"]

CLIENT_IP = "10.79.0.1"
SERVER_IP = "10.79.0.2"
#: The LAN's hosts, as the uplink sees them: the client namespace holds each
#: address (host k's connections are bound to ``CLIENT_IPS[k]``), so two
#: hosts differ where a flow's key and CAKE's host isolation look, their
#: source address.
CLIENT_IPS = (CLIENT_IP, "10.79.0.3")
CLIENT_MAC = "02:00:00:79:00:01"
SERVER_MAC = "02:00:00:79:00:02"
#: The lock every testbed holds while it runs (machine-wide: the testbeds
#: of every checkout and process share the machine's cores).
REALTIME_LOCK = Path(tempfile.gettempdir()) / "ackfilter-realtime.lock"
#: The hosts' scheduling priority (nice value): ahead of anything of normal
#: priority, so that `make test` at nice 10 beside a build measures what an
#: experiment does.
HOST_NICE = -10
_PREFIX = "afnet"
_NAME = re.compile(rf"^{_PREFIX}(\d+)-(\d+)([cs])$")


def _host_priority():
    os.setpriority(os.PRIO_PROCESS, 0, HOST_NICE)


class TestbedError(RuntimeError):
    """The namespaces or the bridge could not be set up."""


def require_root():
    """Raise :class:`TestbedError` unless this can make namespaces and TAPs."""
    if os.geteuid() != 0:
        raise TestbedError("real-TCP experiments need root (network namespaces, TAP devices): "
                           "run them with sudo")
    for tool in ("ip",):
        if shutil.which(tool) is None:
            raise TestbedError(f"{tool} not found (Debian package iproute2)")
    if not Path("/dev/net/tun").exists():
        raise TestbedError("/dev/net/tun is missing (TUN/TAP support)")


def _run(*cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise TestbedError(f"{' '.join(cmd)} failed: {p.stderr.strip()}")
    return p


def _namespaces():
    p = _run("ip", "netns", "list", check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def _kill_ns(ns):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _run("ip", "netns", "pids", ns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), sig)
            except (ProcessLookupError, ValueError):
                pass
        if not pids:
            break
        time.sleep(0.3)
    _run("ip", "netns", "del", ns, check=False)


def cleanup_stale():
    """Remove namespaces of ours whose creating process is gone."""
    for ns in _namespaces():
        m = _NAME.match(ns)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            _kill_ns(ns)


class Testbed:
    """Namespaces + bridge for one run. Use as a context manager::

        with Testbed(link, csr) as tb:
            tb.popen("server", [...])
        stats = tb.stats          # the bridge's figures, after the exit
    """

    _serial = 0

    def __init__(self, link, csr=None, *, binary=None, ecn=0, log=None):
        Testbed._serial += 1
        tag = f"{_PREFIX}{os.getpid()}-{Testbed._serial}"
        self.ns = {"client": tag + "c", "server": tag + "s"}
        self.link, self.csr, self.binary, self.ecn, self.log = link, csr, binary, ecn, log
        self.bridge = None
        self.stats = None
        self.procs = []
        self._lock = None

    def exec(self, side, *cmd, check=True):
        return _run("ip", "netns", "exec", self.ns[side], *cmd, check=check)

    def popen(self, side, cmd, **kw):
        """Start ``cmd`` in the ``side`` host's namespace, at :data:`HOST_NICE`."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[side], *cmd],
                             preexec_fn=_host_priority, **kw)
        self.procs.append(p)
        return p

    def _take_lock(self):
        self._lock = open(REALTIME_LOCK, "a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another real-time run to end ({REALTIME_LOCK})", file=sys.stderr, flush=True)
            fcntl.flock(self._lock, fcntl.LOCK_EX)

    def __enter__(self):
        require_root()
        self._take_lock()
        try:
            cleanup_stale()
            for ns in self.ns.values():
                _run("ip", "netns", "add", ns)
            self.bridge = Bridge((self.ns["client"], "lan0"), (self.ns["server"], "wan0"), self.link,
                                 self.csr, binary=self.binary, log=self.log).start()
            for side, dev, ip, mac, peer_ip, peer_mac in (
                    ("client", "lan0", CLIENT_IP, CLIENT_MAC, SERVER_IP, SERVER_MAC),
                    ("server", "wan0", SERVER_IP, SERVER_MAC, CLIENT_IP, CLIENT_MAC)):
                self.exec(side, "ip", "link", "set", "lo", "up")
                self.exec(side, "ip", "link", "set", dev, "address", mac, "mtu", "1500")
                if shutil.which("ethtool"):
                    for feature in ("tso", "gso", "gro", "lro", "tx", "sg"):
                        self.exec(side, "ethtool", "-K", dev, feature, "off", check=False)
                # IPv4 only, and no IPv6 chatter (router solicitations, MLD) on the link.
                self.exec(side, "sysctl", "-qw", "net.ipv4.tcp_sack=1", "net.ipv4.tcp_timestamps=1",
                          f"net.ipv4.tcp_ecn={self.ecn}", "net.ipv4.tcp_no_metrics_save=1",
                          "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                          f"net.ipv6.conf.{dev}.disable_ipv6=1")
                self.exec(side, "ip", "addr", "add", f"{ip}/24", "dev", dev)
                if side == "client":
                    for extra in CLIENT_IPS[1:]:
                        self.exec(side, "ip", "addr", "add", f"{extra}/24", "dev", dev)
                self.exec(side, "ip", "link", "set", dev, "up")
                self.exec(side, "ip", "neigh", "replace", peer_ip, "lladdr", peer_mac, "dev", dev,
                          "nud", "permanent")
                if side == "server":
                    for extra in CLIENT_IPS[1:]:
                        self.exec(side, "ip", "neigh", "replace", extra, "lladdr", peer_mac, "dev", dev,
                                  "nud", "permanent")
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc):
        self._teardown()
        return False

    def _teardown(self):
        # Agents first (no more traffic), then the bridge (its figures; its
        # TAPs go with it), then the namespaces.
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        try:
            if self.bridge is not None and self.bridge.alive():
                self.stats = self.bridge.stop()
        finally:
            if self.bridge is not None:
                self.bridge.kill()
            for ns in self.ns.values():
                if ns in _namespaces():
                    _kill_ns(ns)
            if self._lock is not None:
                self._lock.close()          # (the lock goes with the file)
                self._lock = None
