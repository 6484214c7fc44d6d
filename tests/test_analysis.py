"""The analysis models: Jou, Tan & Baras §VI (ARED queue map) and the MGT fluid model
closed by PIE. Expectations are computed by hand from the papers' equations."""

import json
import math

import numpy as np
import pytest

from aqmlab.analysis import ared_queue as aq
from aqmlab.analysis import pie_fluid as pf

# Jou, Tan & Baras §VI, Fig. 17: C = 6 Mb/s, d_k = 64 ms, W̄ = 6.02e4 bits
C, D, W = 6e6, 0.064, 6.02e4


@pytest.mark.parametrize("N", [20, 40, 7])
def test_equilibrium_homogeneous_is_N_W_minus_d_C(N):
    # §VI.B: for d_k = d, sum W̄/(d + q/C) = C gives q_e = N W̄ - d C
    m = aq.QueueModel.homogeneous(N, C, D, W, S_s=0.1)
    assert m.equilibrium() == pytest.approx(N * W - D * C, rel=1e-10)


def test_paper_equilibria_in_kbytes():
    # N = 20: 20 * 60200 - 0.064 * 6e6 = 820000 bits = 102.5 KB; N = 40: 2024000 bits = 253 KB
    assert aq.QueueModel.homogeneous(20, C, D, W, 1.0).equilibrium() / 8000 == pytest.approx(102.5)
    assert aq.QueueModel.homogeneous(40, C, D, W, 1.0).equilibrium() / 8000 == pytest.approx(253.0)


def test_equilibrium_heterogeneous_solves_eq9():
    m = aq.QueueModel(C_bps=C, d_s=(0.02, 0.064, 0.2, 0.3), W_bits=2e5, S_s=0.1)
    qe = m.equilibrium()
    assert sum(m.W_bits / (d + qe / C) for d in m.d_s) == pytest.approx(C, rel=1e-9)
    assert m.f(qe) == pytest.approx(qe, rel=1e-9)


def test_no_queue_when_peak_rates_fall_short_of_C():
    # eq. (8) violated: sum W̄/d_k < C, the queue empties
    m = aq.QueueModel.homogeneous(2, C, D, W, 0.1)
    assert not m.peak_rate_exceeds_capacity()
    assert m.equilibrium() == 0.0


@pytest.mark.parametrize("k, fp", [(0.5, 0.5), (1.0, 0.0), (2.0, -1.0), (2.5, -1.5)])
def test_fprime_at_equilibrium_is_1_minus_S_over_rtt(k, fp):
    # homogeneous: f'(q_e) = 1 - S N W̄ C/(q_e + dC)^2 = 1 - S/(q_e/C + d) since N W̄ = q_e + dC
    m = aq.QueueModel.homogeneous(40, C, D, W, 1.0)
    rtt = D + m.equilibrium() / C
    assert float(m.with_S(k * rtt).fprime(m.equilibrium())) == pytest.approx(fp, abs=1e-9)


def test_stable_at_S_rtt_and_unstable_beyond_2_rtt():
    base = aq.QueueModel.homogeneous(40, C, D, W, 1.0)
    qe = base.equilibrium()
    rtt = D + qe / C
    st1 = base.with_S(rtt).stability()
    assert st1["prop62_fprime_nonneg"] and st1["locally_stable"]
    st2 = base.with_S(2 * rtt).stability()
    assert st2["marginal"] and not st2["prop62_fprime_nonneg"] and not st2["locally_stable"]
    st25 = base.with_S(2.5 * rtt).stability()
    assert not st25["locally_stable"] and "unstable" in st25["verdict"]
    # and the noise-free iteration agrees: converges from q0 = 0.5 q_e at S = RTT ...
    q = 0.5 * qe
    for _ in range(60):
        q = float(base.with_S(rtt).f(q))
    assert q == pytest.approx(qe, rel=1e-6)
    # ... and is driven away from a point near q_e at S = 2.5 RTT (|f'| = 1.5)
    q = qe * 1.01
    for _ in range(8):
        q = max(0.0, float(base.with_S(2.5 * rtt).f(q)))
    assert abs(q - qe) > 0.1 * qe


def test_prop61_bound_eq10_by_hand():
    # eq. (10): S < 2C / (W̄ sum_k d_k^-2) = 2 * 6e6 / (6.02e4 * 40 / 0.064^2) s
    m = aq.QueueModel.homogeneous(40, C, D, W, 0.01)
    assert m.S_bound_prop61() == pytest.approx(2 * C / (W * 40 / D**2))
    assert m.stability()["prop61_holds"]
    assert float(m.fprime(0.0)) > -1  # f' is increasing: f'(0) > -1 means f' > -1 everywhere


def markov_model(S_factor=1.0, sigma=128490.0, N=40):
    base = aq.QueueModel.homogeneous(N, C, D, W, 1.0, sigma_bps=sigma, B_bits=600 * 12000)
    return base.with_S(S_factor * (D + base.equilibrium() / C))


@pytest.mark.parametrize("k", [0.5, 1.0, 2.0])
def test_markov_rows_sum_to_one_and_stationary_is_fixed_point(k):
    m = markov_model(k)
    T = m.transition_matrix()
    assert T.shape == (601, 601)
    assert np.all(T >= 0)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-12)
    pi = m.stationary(T)
    assert pi.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(pi @ T, pi, atol=1e-12)


def test_markov_transition_by_hand():
    # from state i the next queue is f(iL) + xi, xi ~ N(0, N S^2 sigma^2): state j gets
    # Phi(((j+1)L - f)/s) - Phi((jL - f)/s); state 0 gets everything below L
    m = markov_model(1.0)
    T = m.transition_matrix()
    i, j, L = 100, 170, 12000.0
    s = math.sqrt(40) * m.S_s * 128490.0
    f = float(m.f(i * L))
    Phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    assert T[i, j] == pytest.approx(Phi(((j + 1) * L - f) / s) - Phi((j * L - f) / s), rel=1e-9)
    assert T[i, 0] == pytest.approx(Phi((L - f) / s), abs=1e-15)
    assert T[i, 600] == pytest.approx(1 - Phi((600 * L - f) / s), abs=1e-15)


def test_linear_variance_eq21_by_hand():
    # eq. (20)-(21): Q_{n+1} = f'(q_e) Q_n + xi_n, Var[xi] = N S^2 sigma^2 => Var[Q] = N S^2 sigma^2 / (1 - f'^2)
    m = markov_model(0.5)  # f'(q_e) = 0.5
    assert m.linear_variance_bits2() == pytest.approx(40 * m.S_s**2 * 128490.0**2 / (1 - 0.25))
    assert math.isinf(markov_model(2.0).linear_variance_bits2())  # |f'| = 1
    # the AR(1) recursion reproduces it
    rng = np.random.default_rng(3)
    xi = rng.normal(0, math.sqrt(40) * m.S_s * 128490.0, 200_000)
    Q = np.zeros_like(xi)
    for n in range(1, len(xi)):
        Q[n] = 0.5 * Q[n - 1] + xi[n]
    assert np.var(Q[100:]) == pytest.approx(m.linear_variance_bits2(), rel=0.02)


def test_markov_and_linear_agree_when_the_noise_is_small():
    # Fig. 21: with the queue far from 0 and B, the chain's steady state is close to N(q_e, Var (21))
    m = markov_model(1.0)
    pi, lin = m.stationary(), m.linear_distribution()
    z = np.arange(len(pi)) * m.L_bits
    assert np.sum(pi * z) == pytest.approx(m.equilibrium(), rel=0.05)
    assert aq.total_variation(pi, lin) < 0.15


def test_noise_larger_at_2_rtt_than_at_rtt():
    # §VI: S = RTT steady, S = 2 RTT much more chaotic
    def std(k):
        m = markov_model(k)
        pi = m.stationary()
        z = np.arange(len(pi)) * m.L_bits
        mu = np.sum(pi * z)
        return math.sqrt(np.sum(pi * (z - mu) ** 2))

    assert std(2.0) > 3 * std(1.0)


def test_total_variation():
    assert aq.total_variation([1, 0, 0], [0, 0, 1]) == pytest.approx(1.0)
    assert aq.total_variation([0.2, 0.8], [0.2, 0.8]) == pytest.approx(0.0)
    assert aq.total_variation([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.5)


# ---- the PIE fluid model -------------------------------------------------------------
NET = pf.Net.from_rates(10, 10e6, 0.1)  # 10 flows, 10 Mb/s = 833.3 packets/s of 1500 B
PIE = pf.Pie(target_s=0.02, tupdate_s=0.03)


def test_operating_point_by_hand():
    # R0 = Tp + target = 0.12 s; W0 = R0 C / N = 0.12 * 833.33 / 10 = 10 packets; p0 = 2/W0^2 = 0.02
    op = pf.operating_point(NET, PIE)
    assert op.R0_s == pytest.approx(0.12)
    assert op.W0_pkts == pytest.approx(10.0)
    assert op.p0 == pytest.approx(0.02)


def test_fluid_model_rests_at_the_operating_point_with_p_fixed():
    # MGT: at W = W0, q = q0, p = p0 both derivatives vanish
    op = pf.operating_point(NET, PIE)
    r = pf.integrate(NET, None, 20.0, dt_s=0.001, W_init=op.W0_pkts, q_init=op.q0_pkts, fixed_p=op.p0)
    np.testing.assert_allclose(r["W_pkts"], op.W0_pkts, rtol=1e-9)
    np.testing.assert_allclose(r["q_pkts"], op.q0_pkts, rtol=1e-9, atol=1e-9)


def test_fluid_model_with_pie_converges_to_target_and_p0_when_stable():
    op = pf.operating_point(NET, PIE)
    m = pf.margins(NET, PIE)
    assert m["stable"]
    r = pf.integrate(NET, PIE, 120.0, dt_s=0.001, W_init=1.0)
    tail = r["t_s"] > 100
    assert np.mean(r["qdelay_s"][tail]) == pytest.approx(0.02, rel=0.01)
    assert np.mean(r["p"][tail]) == pytest.approx(op.p0, rel=0.02)
    assert np.mean(r["W_pkts"][tail]) == pytest.approx(op.W0_pkts, rel=0.02)


def test_fluid_model_oscillates_when_the_loop_is_unstable():
    net = pf.Net.from_rates(10, 10e6, 0.3)
    assert not pf.margins(net, PIE)["stable"]
    r = pf.integrate(net, PIE, 150.0, dt_s=0.001, W_init=1.0)
    osc = pf.oscillation(r["qdelay_s"], r["t_s"], 50)
    assert osc["spread_p90_p10_ms"] > 10


def test_autoscale_bands_rfc8033():
    assert [pf.autoscale_factor(p) for p in (1e-7, 5e-6, 5e-5, 5e-4, 5e-3, 5e-2, 0.5)] == [2048, 512, 128, 32, 8, 2, 1]


def test_loop_gain_is_discrete_pi_with_hold_times_hollot_plant():
    w, T = 2.0, 0.03
    op = pf.operating_point(NET, PIE)
    a, b = pf.effective_gains(NET, PIE)  # p0 = 0.02: RFC 8033 halves alpha and beta
    assert (a, b) == (0.0625, 0.625)
    z = np.exp(1j * w * T)
    K = ((a + b) - b / z) / (1 - 1 / z)
    H = (1 - np.exp(-1j * w * T)) / (1j * w * T)
    N, Cp, R0 = 10, NET.C_pps, op.R0_s
    P = (Cp**2 / (2 * N)) * np.exp(-1j * w * R0) / ((1j * w + 2 * N / (R0**2 * Cp)) * (1j * w + 1 / R0))
    L = K * H * P / Cp
    mag, ph = pf.loop_gain(NET, PIE, np.array([w]))
    assert mag[0] == pytest.approx(abs(L), rel=1e-9)
    assert np.exp(1j * ph[0]) == pytest.approx(L / abs(L), abs=1e-9)


def test_margin_falls_as_rtt_grows_with_fixed_gains():
    fixed = pf.Pie(target_s=0.02, tupdate_s=0.03, auto_scale=False)
    pms = [pf.margins(pf.Net.from_rates(10, 10e6, r), fixed)["phase_margin_deg"] for r in (0.03, 0.1, 0.3, 0.5)]
    assert all(x > y for x, y in zip(pms, pms[1:]))
    lim = pf.largest_stable_rtt(NET, fixed)
    assert lim is not None and 0.03 < lim < 0.3
    assert pf.margins(pf.Net.from_rates(10, 10e6, lim * 0.98), fixed)["stable"]
    assert not pf.margins(pf.Net.from_rates(10, 10e6, lim * 1.02), fixed)["stable"]


# ---- the commands ----------------------------------------------------------------------
def test_cli_ared_queue_model_only(cli, tmp_path):
    code, out, err = cli("analyze", "ared-queue", "--no-sim", "--out", str(tmp_path / "a"))
    assert code == 0, err
    res = json.loads((tmp_path / "a" / "analysis.json").read_text())
    assert res["cases"]["20"]["q_e_kbytes"] == pytest.approx(102.5)
    assert res["cases"]["40"]["by_S_factor"]["1"]["prop62_fprime_nonneg"]
    assert not res["cases"]["40"]["by_S_factor"]["2"]["locally_stable"]
    for f in ("mapping_S_rtt", "mapping_S_factors", "queue_distributions", "model_queue_trajectories"):
        assert (tmp_path / "a" / f"{f}.png").exists() and (tmp_path / "a" / f"{f}.svg").exists()
    assert (tmp_path / "a" / "analysis.md").read_text().startswith("# Adaptive RED queue model")


def test_cli_ared_queue_with_a_short_simulation(cli, tmp_path):
    code, out, err = cli("analyze", "ared-queue", "--flows", "20", "--duration", "40", "--warmup", "10", "--out", str(tmp_path / "a"))
    assert code == 0, err
    c = json.loads((tmp_path / "a" / "analysis.json").read_text())["cases"]["20"]
    assert c["W_sigma_source"] == "simulation"
    assert c["W_bits"] > 0 and c["sigma_bps"] > 0
    assert 0 <= c["total_variation_S_RTT"]["sim_vs_markov"] <= 1


def test_cli_pie_fluid_model_only(cli, tmp_path):
    code, out, err = cli("analyze", "pie-fluid", "--no-sim", "--rtt-ms", "100", "500", "--duration", "30", "--warmup", "10", "--window", "10", "30", "--out", str(tmp_path / "p"))
    assert code == 0, err
    res = json.loads((tmp_path / "p" / "analysis.json").read_text())
    assert res["N"] == 10 and res["rate_bps"] == 10e6
    assert res["rtts"]["100.0"]["fluid"]["auto-tuned (RFC 8033)"]["margins"]["stable"]
    assert not res["rtts"]["500.0"]["fluid"]["auto-tuned (RFC 8033)"]["margins"]["stable"]
    assert (tmp_path / "p" / "pie_stability_margin.svg").exists()


def test_cli_pie_fluid_refuses_a_non_pie_scenario(cli, tmp_path):
    code, out, err = cli("analyze", "pie-fluid", "madpie-proof-droptail", "--no-sim", "--out", str(tmp_path / "p"))
    assert code == 2 and "bottleneck.aqm.kind" in err


def test_cli_errors_are_one_line_and_write_nothing(cli, tmp_path):
    code, out, err = cli("analyze", "ared-queue", "--aqm", "nope", "--out", str(tmp_path / "x"))
    assert code == 2 and err.count("\n") == 1 and "--aqm" in err
    code, out, err = cli("analyze", "pie-fluid", "--set", "bottleneck.rate=fast", "--no-sim", "--out", str(tmp_path / "y"))
    assert code == 2 and err.startswith("aqmlab: error: bottleneck.rate")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
