"""Network namespaces and TUN devices of an emulation, and their cleanup.

Every object a run creates carries its name prefix: namespaces `aqe-<id>-snd` and
`aqe-<id>-rcv`, TUN devices `aqe<id>s` and `aqe<id>r`. The TUN devices belong to the
bottleneck process and vanish with it; the namespaces are removed by
[`remove_run`], which first ends the processes still inside them. [`leftovers`]
and [`cleanup_all`] find and remove what a killed `aqmlab emulate` left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

PREFIX = "aqe-"
# Private addresses, used only inside the run's own namespaces (RFC 1918).
SND_ADDR = "10.201.0.1"
RCV_ADDR = "10.201.1.1"


class EmulationError(RuntimeError):
    """An emulation that could not be set up or did not finish."""


@dataclass(frozen=True)
class Names:
    run_id: str

    @property
    def ns_snd(self) -> str:
        return f"{PREFIX}{self.run_id}-snd"

    @property
    def ns_rcv(self) -> str:
        return f"{PREFIX}{self.run_id}-rcv"

    @property
    def tun_snd(self) -> str:
        return f"aqe{self.run_id}s"

    @property
    def tun_rcv(self) -> str:
        return f"aqe{self.run_id}r"


def preflight() -> None:
    """Fail with one line, before anything is created, if emulation cannot run here."""
    if not hasattr(os, "geteuid") or not os.path.exists("/proc/self/ns/net"):
        raise EmulationError("aqmlab emulate needs Linux (network namespaces and TUN devices)")
    if os.geteuid() != 0:
        raise EmulationError("aqmlab emulate needs root (it creates network namespaces and TUN devices); run it with sudo")
    if shutil.which("ip") is None:
        raise EmulationError("aqmlab emulate needs the `ip` command (iproute2)")
    try:
        fd = os.open("/dev/net/tun", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        raise EmulationError(f"aqmlab emulate needs /dev/net/tun ({e.strerror}); load the tun module or give the container the device") from None


def ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise EmulationError(f"`{' '.join(cmd)}` failed: {r.stderr.strip()}")
    return r


def namespaces() -> list[str]:
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def devices() -> list[str]:
    r = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    return [line.split(":")[1].strip().split("@")[0] for line in r.stdout.splitlines() if line.count(":") >= 2]


def bottleneck_pids(run_id: str | None = None) -> list[int]:
    """Bottleneck processes (of one run, or of any run) still alive."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if b"aqmlab.emulate._bottleneck" in args and (run_id is None or any(f"aqmlab-emulate-{run_id}-".encode() in a for a in args)):
            pids.append(int(d))
    return pids


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _run_id_of(name: str) -> str:
    """`aqe-<id>-snd` -> id; `aqe<id>s` -> id."""
    if name.startswith(PREFIX):
        return name[len(PREFIX) :].split("-")[0]
    return name[len("aqe") : -1]


def leftovers() -> dict[str, list]:
    """What killed runs left: namespaces and devices of runs whose bottleneck process
    is gone, and bottleneck processes whose `aqmlab emulate` is gone. A run in
    progress always has its bottleneck process (it starts before the namespaces and
    devices exist), so runs still going are never listed."""
    alive = {pid: _cmdline(pid) for pid in bottleneck_pids()}
    # a bottleneck's parent is the Python process that runs the emulation; once that
    # is gone the bottleneck is reparented (to init or a subreaper)
    orphans = [pid for pid in alive if _parent(pid) <= 1 or "python" not in _cmdline(_parent(pid))]
    live_ids = {rid for pid, cmd in alive.items() if pid not in orphans for rid in _ids_in(cmd)}
    return {
        "namespaces": [n for n in namespaces() if n.startswith(PREFIX) and _run_id_of(n) not in live_ids],
        "devices": [d for d in devices() if d.startswith("aqe") and _run_id_of(d) not in live_ids],
        "processes": orphans,
    }


def _ids_in(cmd: str) -> set[str]:
    """Run ids named in a bottleneck's command line (its work folder carries the id)."""
    return {part.split("aqmlab-emulate-", 1)[1].split("-")[0] for part in cmd.split() if "aqmlab-emulate-" in part}


def _kill_namespace_pids(ns: str) -> None:
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    pids = [int(p) for p in r.stdout.split() if p.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for p in pids:
            try:
                os.kill(p, sig)
                alive.append(p)
            except ProcessLookupError:
                pass
        if not alive:
            return
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in alive):
            time.sleep(0.02)
        pids = alive


def remove_namespace(ns: str) -> None:
    _kill_namespace_pids(ns)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def remove_run(names: Names) -> None:
    """Remove everything of one run; safe to call twice and on a half-built run."""
    for p in bottleneck_pids(names.run_id):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    present = set(namespaces())
    for ns in (names.ns_snd, names.ns_rcv):
        if ns in present:
            remove_namespace(ns)
    for dev in (names.tun_snd, names.tun_rcv):
        if dev in devices():
            subprocess.run(["ip", "link", "del", dev], capture_output=True)


def cleanup_all() -> dict[str, list]:
    """Remove the leftovers of killed runs (`aqmlab emulate --cleanup`), leaving runs
    in progress alone; returns what was found."""
    found = leftovers()
    for p in found["processes"]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for ns in found["namespaces"]:
        remove_namespace(ns)
    for dev in found["devices"]:
        subprocess.run(["ip", "link", "del", dev], capture_output=True)
    return found


def build(names: Names, ecn: bool, slow_start_after_idle: bool = True) -> None:
    """Create the two namespaces with their settings (before the TUN devices move in).
    The congestion control is chosen per socket (TCP_CONGESTION) by the senders."""
    for ns in (names.ns_snd, names.ns_rcv):
        ip("ip", "netns", "add", ns)
        ip("ip", "link", "set", "lo", "up", ns=ns)
        for key, value in (
            ("net.ipv6.conf.all.disable_ipv6", "1"),
            ("net.ipv6.conf.default.disable_ipv6", "1"),
            ("net.ipv4.conf.all.rp_filter", "0"),
            ("net.ipv4.conf.default.rp_filter", "0"),
            # RFC 3168 ECN, requested and accepted (1), or off (0)
            ("net.ipv4.tcp_ecn", "1" if ecn else "0"),
            # each run starts from a cold TCP: no cached ssthresh or RTT from an earlier flow
            ("net.ipv4.tcp_no_metrics_save", "1"),
            # RFC 5681 §4.1 restart after idle (the scenario's tcp.slow_start_after_idle)
            ("net.ipv4.tcp_slow_start_after_idle", "1" if slow_start_after_idle else "0"),
        ):
            ip("sysctl", "-q", "-w", f"{key}={value}", ns=ns)


def attach(names: Names) -> None:
    """Move the TUN devices into the namespaces and give them addresses and routes."""
    for dev, ns, me, peer in ((names.tun_snd, names.ns_snd, SND_ADDR, RCV_ADDR), (names.tun_rcv, names.ns_rcv, RCV_ADDR, SND_ADDR)):
        ip("ip", "link", "set", "dev", dev, "netns", ns)
        ip("ip", "link", "set", "dev", dev, "mtu", "1500", "up", ns=ns)
        ip("ip", "addr", "add", f"{me}/32", "peer", f"{peer}/32", "dev", dev, ns=ns)
