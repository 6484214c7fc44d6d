"""`aqmlab validate linux`: which stored runs a changed setting keeps."""

from __future__ import annotations

from aqmlab.emulate.validate import STANDARD, kernel_overrides, run_key


def test_simulator_only_tcp_settings_keep_the_kernel_runs():
    case = STANDARD[0]
    base = list(case.overrides)
    gso = base + ['flows.0.tcp.gso="linux"', "flows.1.tcp.recovery=\"rfc6675\""]
    # the kernel runs its own TCP: the simulator's model settings do not change them
    assert kernel_overrides(gso) == base
    assert run_key("linux", case, gso, 1) == run_key("linux", case, base, 1)
    # what the emulator passes to the kernel does
    for o in ('flows.0.tcp.cc="reno"', "flows.0.tcp.ecn=true", "flows.0.tcp.slow_start_after_idle=false", "duration=10s", "bottleneck.rate=\"20Mbps\""):
        assert kernel_overrides(base + [o]) == base + [o]
        assert run_key("linux", case, base + [o], 1) != run_key("linux", case, base, 1), o
    # and the simulated side is redone for any change of its scenario
    assert run_key("aqmlab", case, gso, 1, {"a": 1}) != run_key("aqmlab", case, base, 1, {"a": 2})
