"""A fluid model of TCP closed by PIE, and the loop's linearized stability margin.

TCP: the fluid model of Misra, Gong & Towsley, "Fluid-based analysis of a network of
AQM routers supporting TCP flows with an application to RED" (SIGCOMM 2000), eq. (1)
and (2) there, for N identical long-lived flows through one bottleneck of C
packets/s with round-trip propagation delay Tp:

    dW/dt = 1 / R(t) - W(t) W(t - R(t)) / (2 R(t - R(t))) p(t - R(t))
    dq/dt = N W(t) / R(t) - C          (q held in [0, B])
    R(t)  = Tp + q(t) / C

W in packets, q in packets, p the probability that a packet is dropped.

PIE: RFC 8033 §4.2 (Pan et al., "PIE: A lightweight control scheme to address the
bufferbloat problem", HPSR 2013, §III-IV): every T_update, with the queueing delay
qdelay = q / C (the fluid queue drains at C),

    p += alpha (qdelay - target) + beta (qdelay - qdelay_old)

with RFC 8033's auto-tuning (the step divided by 2048 ... 2 while p < 1e-6 ... 0.1),
its cap on the step (at most 0.02 while p >= 0.1, §5.5), and the decay by 0.98 when
the queue stays empty, all as in `crates/aqm/src/pie.rs`. PIE's burst allowance and
its departure-rate delay estimator are not modelled.

Linearization (Hollot, Misra, Towsley & Gong, "On designing improved controllers for
AQM routers supporting TCP flows", INFOCOM 2001, which Pan et al. follow in their
design analysis): around the operating point where PIE holds qdelay = target,

    R0 = Tp + target,  W0 = R0 C / N,  p0 = 2 / W0^2,
    P(s) = dq/dp = (C^2 / (2N)) e^{-s R0} / ((s + 2N / (R0^2 C)) (s + 1/R0)),

the sensor qdelay = q / C, and PIE as a discrete PI controller with period T and a
zero-order hold:  K(z) = ((alpha + beta) - beta z^-1) / (1 - z^-1),  z = e^{sT}, hold
(1 - e^{-sT}) / (sT). Loop gain L(jw) = K(e^{jwT}) H(jw) P(jw) / C. With auto-tuning,
alpha and beta are the RFC 8033 values divided by the factor that applies at p0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np
from scipy.optimize import brentq


@dataclass(frozen=True)
class Pie:
    """PIE's controller parameters (RFC 8033 §4.2 defaults; Kuhn & Ros §III use
    target 20 ms and T_update 30 ms)."""

    target_s: float = 0.015
    tupdate_s: float = 0.015
    alpha: float = 0.125
    beta: float = 1.25
    auto_scale: bool = True
    cap_drop_adjustment: bool = True


@dataclass(frozen=True)
class Net:
    """N flows through one bottleneck of C packets/s, round-trip propagation Tp."""

    N: int
    C_pps: float
    Tp_s: float
    B_pkts: float = float("inf")

    @classmethod
    def from_rates(cls, N: int, rate_bps: float, rtt_s: float, pkt_bytes: float = 1500.0, buffer_pkts: Optional[float] = None) -> "Net":
        C = rate_bps / (8.0 * pkt_bytes)
        B = buffer_pkts if buffer_pkts is not None else float("inf")
        return cls(N=N, C_pps=C, Tp_s=rtt_s, B_pkts=B)


def autoscale_factor(p: float) -> float:
    """RFC 8033 §4.2: the PIE step is divided by this factor at drop probability p."""
    for bound, f in ((1e-6, 2048.0), (1e-5, 512.0), (1e-4, 128.0), (1e-3, 32.0), (1e-2, 8.0), (1e-1, 2.0)):
        if p < bound:
            return f
    return 1.0


@dataclass(frozen=True)
class OperatingPoint:
    R0_s: float
    W0_pkts: float
    p0: float
    q0_pkts: float


def operating_point(net: Net, pie: Pie) -> OperatingPoint:
    """Where PIE holds the queueing delay at its target: R0 = Tp + target, W0 = R0 C/N,
    p0 = 2 / W0^2 (dW/dt = 0 in the fluid model at W(t) = W(t - R) = W0)."""
    R0 = net.Tp_s + pie.target_s
    W0 = R0 * net.C_pps / net.N
    return OperatingPoint(R0_s=R0, W0_pkts=W0, p0=min(1.0, 2.0 / W0**2), q0_pkts=pie.target_s * net.C_pps)


# ---- numerical integration ----------------------------------------------------------
def integrate(net: Net, pie: Optional[Pie], duration_s: float, dt_s: float = 0.001, W_init: float = 1.0,
              q_init: float = 0.0, p_init: float = 0.0, fixed_p: Optional[float] = None) -> dict[str, np.ndarray]:
    """Integrate the delay-differential equations by forward Euler on a fixed step
    with a history buffer (delayed values interpolated linearly; before t = 0 the
    history is the initial state). PIE updates p every T_update; with `fixed_p` (or
    `pie = None`) p stays constant. W is kept at least 1 packet (no timeouts in the
    model). When the queue is full, the excess arrivals are lost and count as drops
    the senders see one RTT later."""
    n = int(round(duration_s / dt_s))
    C, N, Tp, B = net.C_pps, net.N, net.Tp_s, net.B_pkts
    W = [0.0] * (n + 1)
    q = [0.0] * (n + 1)
    ploss = [0.0] * (n + 1)  # the loss probability the queue applied at each step
    pp = [0.0] * (n + 1)  # PIE's p
    busy = [1.0] * (n + 1)  # fraction of C the link sends: 1 with a backlog
    W[0], q[0] = W_init, q_init
    p = fixed_p if fixed_p is not None else p_init
    pp[0] = ploss[0] = p
    upd = int(round(pie.tupdate_s / dt_s)) if (pie is not None and fixed_p is None) else 0
    qd_old = q_init / C
    for i in range(n):
        Wi, qi = W[i], q[i]
        R = Tp + qi / C
        back = i - R / dt_s
        if back <= 0:
            Wd, qd, pd = W[0], q[0], ploss[0]
        else:
            k = int(back)
            fr = back - k
            Wd = W[k] + fr * (W[k + 1] - W[k])
            qd = q[k] + fr * (q[k + 1] - q[k])
            pd = ploss[k] + fr * (ploss[k + 1] - ploss[k])
        Rd = Tp + qd / C
        dW = 1.0 / R - Wi * Wd / (2.0 * Rd) * pd
        Wn = Wi + dt_s * dW
        W[i + 1] = Wn if Wn > 1.0 else 1.0
        arr = N * Wi / R
        qn = qi + dt_s * (arr - C)
        over = 0.0
        if qn >= B:
            over = (qn - B) / (dt_s * arr) if arr > 0 else 0.0
            qn = B
        elif qn < 0.0:
            qn = 0.0
            busy[i + 1] = arr / C if arr < C else 1.0
        q[i + 1] = qn
        # PIE's update every T_update (RFC 8033 §4.2)
        if upd and (i + 1) % upd == 0:
            qdel = qn / C
            delta = pie.alpha * (qdel - pie.target_s) + pie.beta * (qdel - qd_old)
            if pie.auto_scale:
                delta /= autoscale_factor(p)
            if pie.cap_drop_adjustment and p >= 0.1 and delta > 0.02:
                delta = 0.02
            p += delta
            if qdel == 0.0 and qd_old == 0.0:
                p *= 0.98
            p = min(1.0, max(0.0, p))
            qd_old = qdel
        pp[i + 1] = p
        ploss[i + 1] = 1.0 - (1.0 - p) * (1.0 - min(1.0, over))
    t = np.arange(n + 1) * dt_s
    qa = np.asarray(q)
    return {"t_s": t, "W_pkts": np.asarray(W), "q_pkts": qa, "qdelay_s": qa / C, "p": np.asarray(pp), "utilization": np.asarray(busy)}


# ---- linearized loop ---------------------------------------------------------------
def effective_gains(net: Net, pie: Pie) -> tuple[float, float]:
    """alpha, beta at the operating point (divided by RFC 8033's factor at p0 when auto-tuned)."""
    if not pie.auto_scale:
        return pie.alpha, pie.beta
    f = autoscale_factor(operating_point(net, pie).p0)
    return pie.alpha / f, pie.beta / f


def loop_gain(net: Net, pie: Pie, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|L(jw)| and its unwrapped phase (rad) for w in (0, pi/T)."""
    op = operating_point(net, pie)
    a_, b_ = effective_gains(net, pie)
    T, R0, C, N = pie.tupdate_s, op.R0_s, net.C_pps, net.N
    w = np.asarray(w, dtype=float)
    zinv = np.exp(-1j * w * T)
    num = (a_ + b_) - b_ * zinv  # real part >= alpha > 0: its angle needs no unwrapping
    # K(z) H = num / (1 - z^-1) * (1 - z^-1) / (jwT) = num / (jwT)
    mag_k = np.abs(num) / (w * T)
    ph_k = np.angle(num) - np.pi / 2
    pole_w = 2.0 * N / (R0**2 * C)
    pole_q = 1.0 / R0
    mag_p = (C**2 / (2.0 * N)) / (np.sqrt(w**2 + pole_w**2) * np.sqrt(w**2 + pole_q**2)) / C
    ph_p = -w * R0 - np.arctan(w / pole_w) - np.arctan(w / pole_q)
    return mag_k * mag_p, ph_k + ph_p


def margins(net: Net, pie: Pie) -> dict[str, Any]:
    """Gain crossover, phase margin (deg), phase crossover and gain margin (dB) of the
    linearized loop, up to the Nyquist frequency pi/T. |L| falls monotonically here
    (one gain crossover), so the closed loop is stable iff the phase margin is > 0."""
    op = operating_point(net, pie)
    wN = math.pi / pie.tupdate_s
    w = np.logspace(-4, math.log10(wN * 0.999), 4000)
    mag, ph = loop_gain(net, pie, w)
    out: dict[str, Any] = {"R0_s": op.R0_s, "W0_pkts": op.W0_pkts, "p0": op.p0}
    a_, b_ = effective_gains(net, pie)
    out["alpha_eff"], out["beta_eff"] = a_, b_
    below = np.nonzero(mag < 1.0)[0]
    if len(below) == 0 or below[0] == 0:
        out.update(wc=None, phase_margin_deg=None)
    else:
        k = below[0]
        g = lambda x: math.log(loop_gain(net, pie, np.array([x]))[0][0])  # noqa: E731
        wc = brentq(g, w[k - 1], w[k])
        out["wc_rad_s"] = wc
        out["phase_margin_deg"] = 180.0 + math.degrees(float(loop_gain(net, pie, np.array([wc]))[1][0]))
    # gain margin at the first phase crossover of -180 deg above the gain crossover
    # (the loop is conditionally stable at large RTT: its phase may dip below -180 deg
    # at low frequency where |L| >> 1 and come back; those crossings cancel in the
    # Nyquist count, so the phase margin decides stability)
    wc = out.get("wc_rad_s")
    out["w180_rad_s"] = None
    out["gain_margin_db"] = None
    if wc is not None:
        s = np.sign(ph + np.pi)
        flips = np.nonzero((s[1:] != s[:-1]) & (w[1:] > wc))[0]
        if len(flips):
            k = flips[0] + 1
            h = lambda x: float(loop_gain(net, pie, np.array([x]))[1][0]) + math.pi  # noqa: E731
            w180 = brentq(h, w[k - 1], w[k])
            out["w180_rad_s"] = w180
            out["gain_margin_db"] = -20.0 * math.log10(float(loop_gain(net, pie, np.array([w180]))[0][0]))
    pm = out.get("phase_margin_deg")
    out["stable"] = bool(pm is not None and pm > 0)
    return out


def margin_sweep(net: Net, pie: Pie, rtts_s: np.ndarray) -> list[dict[str, Any]]:
    return [{"rtt_s": float(r), **margins(replace(net, Tp_s=float(r)), pie)} for r in rtts_s]


def stable_ranges(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """The RTT intervals (s) of a `margin_sweep` where the loop is stable."""
    out: list[tuple[float, float]] = []
    start = None
    for r in rows:
        if r["stable"] and start is None:
            start = r["rtt_s"]
        if not r["stable"] and start is not None:
            out.append((start, prev))
            start = None
        prev = r["rtt_s"]
    if start is not None:
        out.append((start, prev))
    return out


def largest_stable_rtt(net: Net, pie: Pie, lo: float = 0.01, hi: float = 1.0) -> Optional[float]:
    """The smallest base RTT in [lo, hi] at which the phase margin reaches 0 (the loop
    loses stability), refined by bisection on a log grid; None if stable throughout,
    `lo` if unstable already there. The auto-tuned gain is piecewise constant in the
    RTT, so the margin can jump; the grid finds the first sign change."""
    def pm(r: float) -> float:
        m = margins(replace(net, Tp_s=r), pie)
        v = m.get("phase_margin_deg")
        return 90.0 if v is None else float(v)

    grid = np.logspace(math.log10(lo), math.log10(hi), 200)
    vals = [pm(r) for r in grid]
    if vals[0] <= 0:
        return lo
    for k in range(1, len(grid)):
        if vals[k] <= 0:
            a, b = grid[k - 1], grid[k]
            for _ in range(40):
                m = math.sqrt(a * b)
                if pm(m) > 0:
                    a = m
                else:
                    b = m
            return float(b)
    return None


def oscillation(qdelay_s: np.ndarray, t_s: np.ndarray, after_s: float) -> dict[str, float]:
    """Queueing-delay figures over t >= after_s (ms): p10, p50, p90, p90 - p10, mean."""
    x = qdelay_s[t_s >= after_s] * 1e3
    p10, p50, p90 = (float(v) for v in np.percentile(x, [10, 50, 90]))
    return {"p10_ms": p10, "p50_ms": p50, "p90_ms": p90, "spread_p90_p10_ms": p90 - p10, "mean_ms": float(x.mean()), "max_ms": float(x.max())}
