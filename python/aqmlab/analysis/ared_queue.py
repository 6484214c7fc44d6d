"""The queue-dynamics model of Adaptive RED with sliding thresholds.

Source: Jou, Tan & Baras, "A Parallel Virtual Queue Structure for Active Queue
Management", §VI.B (equations numbered as there). N persistent TCP flows share a
link of rate C; flow k has round-trip propagation delay d_k and, because the sliding
thresholds hold the drop probability nearly fixed, a constant mean window W̄. In
slot n (length S, the rate-update interval) flow k sends at

    T_k^n = W̄ / R_k^n + E_k^n,   R_k^n = d_k + q^n / C                  (2), (3)

with E_k^n white Gaussian noise of variance sigma^2, and the queue follows the
Lindley recursion q^{n+1} = min{B, max[0, q^n + (sum_k T_k^n - C) S]}  (4), i.e.

    q^{n+1} = min{B, max[0, f(q^n) + xi^n]},                           (15)
    f(q) = q + S (sum_k W̄ C / (q + d_k C) - C),                         (6)
    xi^n = S sum_k E_k^n ~ N(0, N S^2 sigma^2).                          (7)

Units throughout: queue and windows in bits, C in bit/s, times in seconds (the
paper's own units: W̄ = 6.02e4 bits, sigma = 77021 bit/s for N = 20).

Note on (20)-(21): the report writes the variance of xi^n as "N S sigma^2"; the
normalized variance it then states, Var[Q/S] = N sigma^2 / (1 - f'(q_e)^2), follows
from xi^n = S sum_k E_k^n only with N S^2 sigma^2, which is what we use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr


@dataclass(frozen=True)
class QueueModel:
    """Parameters of the map (6). `d_s` is one round-trip propagation delay per flow."""

    C_bps: float
    d_s: tuple[float, ...]
    W_bits: float
    S_s: float
    sigma_bps: float = 0.0
    B_bits: float = float("inf")
    L_bits: float = 1500 * 8

    @classmethod
    def homogeneous(cls, N: int, C_bps: float, d_s: float, W_bits: float, S_s: float, **kw: Any) -> "QueueModel":
        return cls(C_bps=C_bps, d_s=tuple([float(d_s)] * int(N)), W_bits=W_bits, S_s=S_s, **kw)

    @property
    def N(self) -> int:
        return len(self.d_s)

    @property
    def d(self) -> np.ndarray:
        return np.asarray(self.d_s, dtype=float)

    def with_S(self, S_s: float) -> "QueueModel":
        kw = asdict(self)
        kw["S_s"] = S_s
        kw["d_s"] = tuple(self.d_s)
        return QueueModel(**kw)

    # ---- the map and its derivatives ---------------------------------------------
    def rate(self, q: np.ndarray | float) -> np.ndarray:
        """Aggregate arrival rate sum_k W̄ C / (q + d_k C) (bit/s), eq. (3) without noise."""
        q = np.asarray(q, dtype=float)
        return np.sum(self.W_bits * self.C_bps / (q[..., None] + self.d * self.C_bps), axis=-1)

    def f(self, q: np.ndarray | float) -> np.ndarray:
        """Eq. (6): f(q) = q + S (sum_k W̄ C / (q + d_k C) - C)."""
        q = np.asarray(q, dtype=float)
        return q + self.S_s * (self.rate(q) - self.C_bps)

    def fprime(self, q: np.ndarray | float) -> np.ndarray:
        """Eq. (13): f'(q) = 1 - S sum_k W̄ C / (q + d_k C)^2."""
        q = np.asarray(q, dtype=float)
        return 1.0 - self.S_s * np.sum(self.W_bits * self.C_bps / (q[..., None] + self.d * self.C_bps) ** 2, axis=-1)

    def peak_rate_exceeds_capacity(self) -> bool:
        """Eq. (8): sum_k W̄ / d_k >= C (otherwise the queue empties: q_e = 0)."""
        return float(np.sum(self.W_bits / self.d)) >= self.C_bps

    def equilibrium(self) -> float:
        """Eq. (9): the unique root q_e of sum_k W̄ / (d_k + q/C) = C (bits)."""
        if not self.peak_rate_exceeds_capacity():
            return 0.0
        g = lambda q: float(self.rate(q)) - self.C_bps  # noqa: E731  decreasing in q
        hi = self.N * self.W_bits  # g(N W̄) = sum W̄ C/(N W̄ + d_k C) - C < 0
        return float(brentq(g, 0.0, hi, xtol=1e-9, rtol=1e-14))

    def rtt_at_equilibrium(self) -> np.ndarray:
        return self.d + self.equilibrium() / self.C_bps

    def S_bound_prop61(self) -> float:
        """Eq. (10), Proposition 6.1: f'(q) > -1 on [0, inf) iff S < 2C / (W̄ sum_k d_k^-2)
        (f' is increasing, eq. (11), so its minimum is f'(0)); sufficient for global
        asymptotic stability."""
        return 2.0 * self.C_bps / (self.W_bits * float(np.sum(self.d ** -2.0)))

    def stability(self) -> dict[str, Any]:
        """The verdicts of §VI.B for this S."""
        qe = self.equilibrium()
        fp = float(self.fprime(qe))
        s10 = self.S_bound_prop61()
        marginal = abs(abs(fp) - 1.0) < 1e-9
        return {
            "q_e_bits": qe,
            "q_e_kbytes": qe / 8 / 1000,
            "q_e_packets": qe / self.L_bits,
            "rtt_at_q_e_s": [float(x) for x in np.unique(np.round(self.rtt_at_equilibrium(), 12))],
            "S_s": self.S_s,
            "fprime_q_e": fp,
            # |f'(q_e)| < 1: locally asymptotically stable
            "locally_stable": bool(abs(fp) < 1.0 and not marginal),
            "marginal": bool(marginal),
            # Proposition 6.2: f'(q_e) >= 0 => globally asymptotically stable
            "prop62_fprime_nonneg": bool(fp >= -1e-12),
            # Proposition 6.1 / eq. (10)
            "prop61_S_bound_s": s10,
            "prop61_holds": bool(self.S_s < s10),
            "verdict": _verdict(fp, marginal, self.S_s < s10),
        }

    # ---- the stochastic system ---------------------------------------------------
    @property
    def noise_std_bits(self) -> float:
        """Std of xi^n = S sum_k E_k^n: sqrt(N) S sigma."""
        return float(np.sqrt(self.N) * self.S_s * self.sigma_bps)

    def n_states(self) -> int:
        if not np.isfinite(self.B_bits):
            raise ValueError("the Markov chain needs a finite buffer B")
        return int(np.floor(self.B_bits / self.L_bits)) + 1

    def transition_matrix(self) -> np.ndarray:
        """Eq. (19): T(i, j) = Pr[j <= min{B, max[0, f(iL) + xi}]/L < j + 1], with
        z = 0..B/L packets (state B/L holds the mass clipped at the full buffer)."""
        n = self.n_states()
        L = self.L_bits
        s = self.noise_std_bits
        fq = self.f(np.arange(n) * L)  # (n,)
        edges = np.arange(1, n) * L  # upper edges of states 0..n-2
        edges = np.minimum(edges, self.B_bits)
        if s > 0:
            cdf = ndtr((edges[None, :] - fq[:, None]) / s)  # Pr[f + xi < edge]
        else:
            cdf = (fq[:, None] < edges[None, :]).astype(float)
        cdf = np.concatenate([np.zeros((n, 1)), cdf, np.ones((n, 1))], axis=1)
        T = np.diff(cdf, axis=1)
        return np.clip(T, 0.0, 1.0)

    def stationary(self, T: Optional[np.ndarray] = None) -> np.ndarray:
        """Eq. (18): pi = pi T, sum(pi) = 1 (solved as a linear system)."""
        if T is None:
            T = self.transition_matrix()
        n = T.shape[0]
        A = T.T - np.eye(n)
        A[-1, :] = 1.0
        b = np.zeros(n)
        b[-1] = 1.0
        pi = np.linalg.solve(A, b)
        pi = np.clip(pi, 0.0, None)
        return pi / pi.sum()

    def linear_variance_bits2(self) -> float:
        """Eq. (21): Var[Q] = N S^2 sigma^2 / (1 - f'(q_e)^2); inf when |f'(q_e)| >= 1."""
        fp = float(self.fprime(self.equilibrium()))
        if abs(fp) >= 1.0 - 1e-9:  # |f'(q_e)| = 1 (S = 2 RTT, homogeneous): no stationary variance
            return float("inf")
        return self.N * self.S_s**2 * self.sigma_bps**2 / (1.0 - fp**2)

    def linear_distribution(self) -> Optional[np.ndarray]:
        """Eq. (20)-(21): N(q_e, Var[Q]) as masses on the Markov chain's packet bins."""
        var = self.linear_variance_bits2()
        if not np.isfinite(var) or var <= 0:
            return None
        n = self.n_states()
        L = self.L_bits
        edges = np.r_[-np.inf, np.minimum(np.arange(1, n) * L, self.B_bits), np.inf]
        cdf = ndtr((edges - self.equilibrium()) / np.sqrt(var))
        return np.diff(cdf)

    def simulate(self, steps: int, q0: float = 0.0, seed: int = 0) -> np.ndarray:
        """Iterate (15) with Gaussian noise: the queue trajectory of Figs. 17 and 20."""
        rng = np.random.default_rng(seed)
        q = np.empty(steps + 1)
        q[0] = q0
        xi = rng.normal(0.0, self.noise_std_bits, steps) if self.noise_std_bits > 0 else np.zeros(steps)
        for n in range(steps):
            q[n + 1] = min(self.B_bits, max(0.0, float(self.f(q[n])) + xi[n]))
        return q


def _verdict(fp: float, marginal: bool, prop61: bool) -> str:
    if prop61:
        return "globally asymptotically stable (Prop. 6.1, eq. 10)"
    if fp >= -1e-12:
        return "globally asymptotically stable (Prop. 6.2, f'(q_e) >= 0)"
    if marginal:
        return "marginal (|f'(q_e)| = 1: undamped period-2 oscillation)"
    if abs(fp) < 1:
        return "locally asymptotically stable (|f'(q_e)| < 1), oscillatory"
    return "unstable (|f'(q_e)| > 1)"


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance between two distributions on the same bins: 1/2 sum |p - q|."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())


# ---- estimating W̄, sigma and the queue distribution from an aqmlab run -------------
@dataclass
class RunEstimate:
    """What §VI takes from the simulation: the mean window W̄ and the flow-rate
    deviation sigma, plus the simulated queue-length distribution."""

    W_bits: float
    sigma_bps: float
    W_bits_by: dict[str, float] = field(default_factory=dict)
    sigma_bps_by: dict[str, float] = field(default_factory=dict)
    queue_hist: Optional[np.ndarray] = None  # time-weighted, per packet bin, sums to 1
    queue_slot_hist: Optional[np.ndarray] = None  # sampled at slot starts
    queue_mean_bits: float = float("nan")
    queue_std_bits: float = float("nan")
    queue_slot_std_bits: float = float("nan")
    drop_rate: float = float("nan")
    utilization: float = float("nan")
    slots: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "W_bits": self.W_bits,
            "W_bits_by_estimator": self.W_bits_by,
            "sigma_bps": self.sigma_bps,
            "sigma_bps_by_estimator": self.sigma_bps_by,
            "queue_mean_kbytes": self.queue_mean_bits / 8000,
            "queue_std_kbytes": self.queue_std_bits / 8000,
            "queue_slot_std_kbytes": self.queue_slot_std_bits / 8000,
            "drop_rate": self.drop_rate,
            "utilization": self.utilization,
            "slots": self.slots,
        }


def estimate_from_run(r: Any, S_s: float, n_states: int, L_bits: float, d_s: float, C_bps: float,
                      warmup_s: float = 0.0, window: str = "cwnd", sigma_from: str = "flow") -> RunEstimate:
    """W̄, sigma and the queue-length distribution of an aqmlab run (`aqmlab.RunResult`)
    with per-packet records and per-flow series on.

    - W̄: the time average over flows and samples of the congestion window
      (`cwnd_segments` x packet size on the wire), as §VI assumes a constant mean
      window; `window = "inflight"` uses RFC 6675's pipe instead, and "little" the
      Little's-law value (flow arrival rate x (d + mean queue / C)). All three are
      reported.
    - sigma: the standard deviation of E_k^n = T_k^n - W̄ / R^n (eq. 3), T_k^n the
      bits flow k brought to the bottleneck in slot n (length S) over S, and R^n =
      d + q^n / C with q^n the backlog at the start of the slot ("flow", as §VI).
      "aggregate" instead takes std(sum_k E_k^n) / sqrt(N): the sigma that gives the
      aggregate noise xi^n its measured variance, whatever the flows' correlation
      (eq. 7 assumes them independent; flows sharing one bottleneck are not).
    - the queue-length distribution: time-weighted over the backlog after every
      packet event at the bottleneck, on the bins [jL, (j+1)L) (the last bin holds
      everything from B on), and also sampled at slot starts (the q^n of eq. 15).
    """
    raw = r.raw
    pk = raw["packets"]
    meta = r.meta
    if "bottleneck" not in (meta.get("logged_links") or []):
        raise ValueError("the run has no per-packet records at the bottleneck (record.packets = true)")
    li = meta["logged_links"].index("bottleneck")
    sel = pk["link"] == li
    t = pk["time_ns"][sel] / 1e9
    ev = pk["event"][sel]
    size_bits = pk["size"][sel].astype(float) * 8
    flow = pk["flow"][sel]
    backlog = pk["backlog_bytes"][sel].astype(float) * 8
    T_end = float(meta["sim_seconds"])
    # ---- queue distribution, time weighted (backlog holds from its event to the next)
    keep = t >= warmup_s
    tt = np.r_[t[keep], T_end]
    bb = backlog[keep]
    dt = np.diff(tt)
    z = np.minimum(np.floor(bb / L_bits).astype(int), n_states - 1)
    hist = np.bincount(z, weights=dt, minlength=n_states)[:n_states]
    hist = hist / hist.sum()
    qmean = float(np.sum(bb * dt) / dt.sum())
    qstd = float(np.sqrt(np.sum((bb - qmean) ** 2 * dt) / dt.sum()))
    # ---- slots of length S from the warm-up on
    edges = np.arange(warmup_s, T_end + 1e-12, S_s)
    nslots = len(edges) - 1
    # backlog at each slot start: the last event before it
    idx = np.searchsorted(t, edges[:-1], side="right") - 1
    q_slot = np.where(idx >= 0, backlog[np.maximum(idx, 0)], 0.0)
    zs = np.minimum(np.floor(q_slot / L_bits).astype(int), n_states - 1)
    slot_hist = np.bincount(zs, minlength=n_states)[:n_states].astype(float)
    slot_hist /= max(slot_hist.sum(), 1)
    # arrivals of each flow per slot: enqueues and drops of packets that arrived
    # (a drop from inside the queue also has an enqueue row, so count it once)
    arrived = (ev == 0) | ((ev == 2) & (pk["sojourn_ns"][sel] < 0))
    fwd = np.isin(pk["kind"][sel], [0, 4])  # data, udp
    a = arrived & fwd & (t >= warmup_s) & (t < edges[-1])
    slot = np.floor((t[a] - warmup_s) / S_s).astype(int)
    flows = np.unique(flow[a])
    fi = np.searchsorted(flows, flow[a])
    Tkn = np.zeros((len(flows), nslots))
    np.add.at(Tkn, (fi, slot), size_bits[a])
    Tkn /= S_s
    # mean windows
    W_by: dict[str, float] = {}
    fs = raw["flow_series"]
    if len(fs["time_ns"]):
        fsel = fs["time_ns"] / 1e9 >= warmup_s
        mss_wire = _wire_bits(r)
        W_by["cwnd"] = float(np.mean(fs["cwnd"][fsel])) * mss_wire
        W_by["inflight"] = float(np.mean(fs["in_flight"][fsel].astype(float))) * mss_wire
    rate_k = Tkn.mean(axis=1)
    W_by["little"] = float(np.mean(rate_k * (d_s + qmean / C_bps)))
    W = W_by.get(window, W_by["little"])
    R_n = d_s + q_slot / C_bps
    E = Tkn - W / R_n[None, :]
    sig_by = {"flow": float(np.std(E)), "aggregate": float(np.std(E.sum(axis=0)) / np.sqrt(max(E.shape[0], 1)))}
    sigma = sig_by[sigma_from]
    busy = raw["link_series"]
    util = float("nan")
    try:
        lsel = (busy["link"] == 0) & (busy["time_ns"] / 1e9 > warmup_s)
        iv = r.scenario["record"]["interval"]
        from .. import measures

        util = float(np.mean(busy["busy_ns"][lsel]) / measures.duration_ns(iv))
    except Exception:  # pragma: no cover - the utilization is informative only
        pass
    drops = int(np.sum((ev == 2) & fwd & (t >= warmup_s)))
    arrivals = int(np.sum(arrived & fwd & (t >= warmup_s)))
    return RunEstimate(
        W_bits=W, sigma_bps=sigma, W_bits_by=W_by, sigma_bps_by=sig_by, queue_hist=hist, queue_slot_hist=slot_hist,
        queue_mean_bits=qmean, queue_std_bits=qstd, queue_slot_std_bits=float(np.std(q_slot)),
        drop_rate=drops / max(arrivals, 1), utilization=util, slots=nslots,
    )


def _wire_bits(r: Any) -> float:
    """Bits on the wire of a full segment of the first flow group (mss + header)."""
    tcp = r.scenario["flows"][0].get("tcp", {})
    return float(_size_bytes(tcp.get("mss", "1460B")) + _size_bytes(tcp.get("header", "40B"))) * 8


def _size_bytes(v: Any) -> int:
    """A size as the resolved scenario writes it ("1460B", or a plain number of bytes)."""
    if isinstance(v, (int, float)):
        return int(v)
    text = str(v).strip()
    units = {"B": 1, "KB": 1000, "MB": 10**6, "KiB": 1024, "MiB": 1024**2}
    for u in sorted(units, key=len, reverse=True):
        if text.endswith(u):
            return int(float(text[: -len(u)]) * units[u])
    return int(float(text))
