"""The bottleneck process of `aqmlab emulate`.

`python -m aqmlab.emulate._bottleneck SPEC.json OUT.npz` creates the two TUN devices
named in SPEC (they live exactly as long as this process: a crash removes them),
prints `ready`, then runs the Rust bottleneck (`aqmlab._core.emulate_bottleneck`)
with the GIL released, taking its commands (`start <t0_ns>`, `stop`) from stdin;
when stdin closes it stops, writes the records to OUT.npz and prints `done`.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import sys

import numpy as np

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def _die_with_parent() -> None:
    """Die with the emulation that started us, however it ends (even SIGKILL)."""
    import os

    from aqmlab.interrupts import die_with_parent

    parent = os.environ.get("AQMLAB_EMULATE_PARENT")
    die_with_parent(int(parent) if parent and parent.isdigit() else None)


def main(argv: list[str]) -> int:
    from aqmlab import _core

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    _die_with_parent()
    spec_path, out = argv
    with open(spec_path) as fh:
        spec = json.load(fh)
    snd = open_tun(spec["tun_senders"])
    rcv = open_tun(spec["tun_receivers"])
    print("ready", flush=True)
    raw = _core.emulate_bottleneck(
        spec["text"], spec["format"], spec["overrides"], spec["seed"], snd, rcv, sys.stdin.fileno(), spec["base_port"], spec["flows"], spec.get("spin_ns"), spec.get("trace_ms"),
        spec.get("base_dir"), [tuple(d) for d in spec["delays_ns"]] if spec.get("delays_ns") is not None else None,
        tuple(spec["groups"]) if spec.get("groups") is not None else None,
    )
    arrays = {f"{table}.{col}": v for table in ("packets", "link_series", "histograms") for col, v in raw[table].items()}
    tmp = out + ".tmp.npz"
    np.savez(tmp, meta=np.array(raw["meta"]), **arrays)
    os.replace(tmp, out)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
