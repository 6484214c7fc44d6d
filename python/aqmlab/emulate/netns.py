"""Network namespaces and TUN devices of an emulation, and their cleanup.

Every object a run creates carries its id: the work folder
`$TMPDIR/aqmlab-emulate-<id>-<owner pid>.<owner start time>-XXXX` (made first, so it
says which process owns the run), namespaces `aqe-<id>-snd` and `aqe-<id>-rcv`, TUN
devices `aqe<id>s` and `aqe<id>r`, and the processes whose command lines name the
work folder (the bottleneck, the traffic programs, the guard). The TUN devices
belong to the bottleneck process and vanish with it; the namespaces are removed by
[`remove_run`], which first ends the processes still inside them.

A run is alive while its owner process is (same pid, same start time). [`leftovers`]
lists what belongs to runs that are not, and [`cleanup_all`] (`aqmlab emulate
--cleanup`) removes it and says what it removed; runs in progress are left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "aqe-"
WORK_PREFIX = "aqmlab-emulate-"
_WORK = re.compile(r"^aqmlab-emulate-([0-9a-f]+)-(?:(\d+)\.(\d+)-)?")
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
    return [pid for pid, cmd in _processes().items() if "aqmlab.emulate._bottleneck" in cmd and (run_id is None or f"{WORK_PREFIX}{run_id}-" in cmd)]


def _processes() -> dict[int, str]:
    """Every process's command line (arguments joined by spaces), but this one's."""
    out = {}
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        cmd = _cmdline(int(d))
        if cmd:
            out[int(d)] = cmd
    return out


def start_time(pid: int) -> int | None:
    """A process's start time (clock ticks since boot): with its pid, its identity."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def work_prefix(run_id: str) -> str:
    """The prefix of a run's work folder: its id and its owner (this process)."""
    return f"{WORK_PREFIX}{run_id}-{os.getpid()}.{start_time(os.getpid()) or 0}-"


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _run_id_of(name: str) -> str:
    """`aqe-<id>-snd` -> id; `aqe<id>s` -> id."""
    if name.startswith(PREFIX):
        return name[len(PREFIX) :].split("-")[0]
    return name[len("aqe") : -1]


def _work_folders() -> dict[str, list[Path]]:
    """Work folders by run id, in the temporary folder."""
    out: dict[str, list[Path]] = {}
    tmp = Path(tempfile.gettempdir())
    try:
        entries = list(tmp.iterdir())
    except OSError:
        return out
    for p in entries:
        if _WORK.match(p.name) and p.is_dir():
            out.setdefault(_WORK.match(p.name).group(1), []).append(p)  # type: ignore[union-attr]
    return out


def _alive(folder: Path, procs: dict[int, str]) -> bool:
    """Whether a run's owner is alive (a folder of an older aqmlab, without its owner
    in the name: whether a process still uses it)."""
    m = _WORK.match(folder.name)
    if m and m.group(2):
        pid, started = int(m.group(2)), int(m.group(3))
        return start_time(pid) == started
    return any(str(folder) in cmd for cmd in procs.values())


def leftovers() -> dict[str, list]:
    """What runs that are over left behind: namespaces, devices, processes and work
    folders of runs whose owner is gone. A run in progress has its work folder (made
    before anything else) and its owner, so it is never listed."""
    procs = _processes()
    folders = _work_folders()
    live = {rid for rid, ps in folders.items() if any(_alive(p, procs) for p in ps)}
    ids = lambda cmd: set(re.findall(rf"{WORK_PREFIX}([0-9a-f]+)-", cmd))  # noqa: E731
    stray_ns = [n for n in namespaces() if n.startswith(PREFIX) and _run_id_of(n) not in live]
    stray_pids = {pid for pid, cmd in procs.items() if ids(cmd) and not ids(cmd) & live}
    for ns in stray_ns:  # and whatever else runs inside a namespace left behind
        stray_pids.update(namespace_pids(ns))
    return {
        "namespaces": stray_ns,
        "devices": [d for d in devices() if re.fullmatch(r"aqe[0-9a-f]+[sr]", d) and _run_id_of(d) not in live],
        "processes": sorted(stray_pids),
        "folders": sorted(str(p) for rid, ps in folders.items() if rid not in live for p in ps),
    }


def namespace_pids(ns: str) -> list[int]:
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def _kill(pids: list[int]) -> list[int]:
    """SIGKILL these processes and wait until they are gone; returns those that were
    there to kill."""
    killed = []
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
            killed.append(p)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") and (start_time(p) is not None and _state(p) != "Z") for p in killed):
        time.sleep(0.02)
    return killed


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _kill_namespace_pids(ns: str) -> list[int]:
    pids = namespace_pids(ns)
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") and _state(p) not in ("Z", "") for p in pids):
        time.sleep(0.02)
    _kill([p for p in pids if os.path.exists(f"/proc/{p}") and _state(p) not in ("Z", "")])
    return pids


def remove_namespace(ns: str) -> bool:
    """End the processes inside a namespace, then remove it; False if it was gone."""
    _kill_namespace_pids(ns)
    return subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode == 0


def remove_run(names: Names, work: Path | None = None) -> None:
    """Remove everything of one run; safe to call twice and on a half-built run."""
    _kill([pid for pid, cmd in _processes().items() if f"{WORK_PREFIX}{names.run_id}-" in cmd and "aqmlab.emulate._guard" not in cmd and "_guard.py" not in cmd])
    present = set(namespaces())
    for ns in (names.ns_snd, names.ns_rcv):
        if ns in present:
            remove_namespace(ns)
    have = set(devices())
    for dev in (names.tun_snd, names.tun_rcv):
        if dev in have:
            subprocess.run(["ip", "link", "del", dev], capture_output=True)
    if work is not None:
        shutil.rmtree(work, ignore_errors=True)


def cleanup_all() -> dict[str, list]:
    """Remove the leftovers of runs that are over (`aqmlab emulate --cleanup`), leaving
    runs in progress alone; returns what was removed (each list: what was there and
    is gone now)."""
    found = leftovers()
    removed: dict[str, list] = {"namespaces": [], "devices": [], "processes": [], "folders": []}
    removed["processes"] = _kill(found["processes"])
    for ns in found["namespaces"]:
        removed["processes"] += [p for p in _kill_namespace_pids(ns) if p not in removed["processes"]]
        if subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode == 0:
            removed["namespaces"].append(ns)
    have = set(devices())
    for dev in found["devices"]:
        if dev in have and subprocess.run(["ip", "link", "del", dev], capture_output=True).returncode == 0:
            removed["devices"].append(dev)
    for f in found["folders"]:
        if Path(f).exists():
            shutil.rmtree(f, ignore_errors=True)
            if not Path(f).exists():
                removed["folders"].append(f)
    return removed


def describe_removed(removed: dict[str, list]) -> str:
    """One line: what `cleanup_all` removed."""
    if not any(removed.values()):
        return "nothing to clean up"

    def n(k: str, one: str, many: str) -> str:
        c = len(removed.get(k, []))
        return f"{c} {one if c == 1 else many}"

    return "removed " + ", ".join((n("namespaces", "namespace", "namespaces"), n("devices", "device", "devices"), n("processes", "process", "processes"), n("folders", "folder", "folders")))


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
