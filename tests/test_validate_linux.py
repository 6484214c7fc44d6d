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


def test_the_simulated_side_has_the_kernels_connections_and_the_emulators_path():
    from aqmlab.emulate.validate import resolved

    case = next(c for c in STANDARD if "16f" in c.name and "droptail" in c.name)
    plain = resolved(case, list(case.overrides), align=False)
    sc = resolved(case, list(case.overrides))
    tcp = sc["flows"][0]["tcp"]
    assert tcp["handshake"] is True and tcp["mss"] == "1448B" and tcp["header"] == "52B"
    # the emulator's hosts reach the bottleneck through TUN devices: no access-link
    # serialization, so the simulated access links are 1000 times the 100 Mb/s default
    assert plain["access"]["rate"] == "100Mbps" and sc["access"]["rate"] == "100Gbps"
    # the path's delays and the bottleneck stay the case's
    assert sc["access"]["delay"] == plain["access"]["delay"] and sc["bottleneck"] == plain["bottleneck"]
