"""Congestion controls that `aqmlab emulate` brings to a kernel built without them,
as BPF programs (struct_ops `tcp_congestion_ops`, Linux 5.6+).

`dctcp` is Linux's `tcp_dctcp` module where the kernel has it (or `modprobe` loads
it); otherwise aqmlab's port of tcp_dctcp.c, `bpf/aqmlab_dctcp.bpf.c`, registered
under its own name, `aqmlab_dctcp`. It is built here from source (clang, with
vmlinux.h dumped from the running kernel's BTF by bpftool) and registered with
`bpftool struct_ops register`; like a module loaded by modprobe it stays registered
after the run (`bpftool struct_ops unregister name aqmlab_dctcp` removes it).
`bpf/Makefile` builds and registers it by hand.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

BPF_DIR = Path(__file__).with_name("bpf")
VMLINUX_BTF = "/sys/kernel/btf/vmlinux"
# the scenario's congestion control (its Linux name) -> the BPF port's name and source
PORTS = {"dctcp": ("aqmlab_dctcp", "aqmlab_dctcp.bpf.c")}
INSTALL_HINT = "apt-get install clang llvm libbpf-dev bpftool"


class BpfUnavailable(RuntimeError):
    """The BPF port could not be built or registered (one line: why)."""


def port_of(linux_name: str) -> str | None:
    """The name the BPF port of `linux_name` registers under, if aqmlab has one."""
    p = PORTS.get(linux_name)
    return p[0] if p else None


def _run(cmd: list[str], what: str, **kw: object) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if r.returncode != 0:
        lines = [ln.strip() for ln in (r.stderr or r.stdout or "").splitlines() if ln.strip()]
        raise BpfUnavailable(f"{what} failed: {lines[-1] if lines else f'exit code {r.returncode}'}")
    return r


def build(linux_name: str, out_dir: Path) -> Path:
    """Compile the BPF port of `linux_name` into `out_dir`; the object's path."""
    name, src = PORTS[linux_name]
    for tool in ("clang", "bpftool"):
        if shutil.which(tool) is None:
            raise BpfUnavailable(f"no `{tool}` to build it ({INSTALL_HINT})")
    if not Path(VMLINUX_BTF).exists():
        raise BpfUnavailable(f"the kernel has no BTF ({VMLINUX_BTF}: needs CONFIG_DEBUG_INFO_BTF)")
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        raise BpfUnavailable(f"no libbpf headers (/usr/include/bpf/bpf_helpers.h; {INSTALL_HINT})")
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "vmlinux.h", "w") as fh:
        r = subprocess.run(["bpftool", "btf", "dump", "file", VMLINUX_BTF, "format", "c"], stdout=fh, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise BpfUnavailable(f"bpftool btf dump failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
    obj = out_dir / f"{name}.bpf.o"
    # the flags of bpf/Makefile
    _run(["clang", "-O2", "-g", "-Wall", "-target", "bpf", f"-I{out_dir}", "-c", str(BPF_DIR / src), "-o", str(obj)], "clang")
    return obj


def ensure(linux_name: str, available: set[str]) -> str:
    """Register the BPF port of `linux_name` unless the kernel already lists it in
    `available`; its name. Raises BpfUnavailable with the reason."""
    name = PORTS[linux_name][0]
    if name in available:
        return name
    with tempfile.TemporaryDirectory(prefix="aqmlab-bpf-") as d:
        obj = build(linux_name, Path(d))
        try:
            _run(["bpftool", "struct_ops", "register", str(obj)], "bpftool struct_ops register")
        except BpfUnavailable:
            # another run may have registered it meanwhile
            if name in _available():
                return name
            raise
    if name not in _available():
        raise BpfUnavailable(f"registered, but {name} is not in /proc/sys/net/ipv4/tcp_available_congestion_control")
    return name


def _available() -> set[str]:
    try:
        return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    except OSError:
        return set()
