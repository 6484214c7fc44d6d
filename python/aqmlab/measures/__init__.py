"""Every derived figure of a run, computed from its tables: the one measures layer.

`summarize` makes summary.json from the raw columns the core hands back; the other
functions read a run's tables through `Run.table` (a run in memory or a run folder,
see `aqmlab.folders`) and serve the run report, the comparison of runs and the
reproductions alike. Each takes the link it measures by name (`link="bottleneck"`),
so that a figure of another logged link is the same call. The same functions serve
simulated and emulated runs: they read only the tables of DESIGN.md "What a run
writes". Conventions:

* queueing delay: per-packet sojourn time in the bottleneck queue (dequeue time
  minus enqueue time) of every packet that left the queue; from the packet rows
  when they were recorded, otherwise from the streaming histograms (percentiles
  within 0.4 % of the exact ones, mean and max exact: `hist_distribution`);
* utilization: the fraction of each `metrics.utilization_interval` (1 s by default,
  as in Kuhn & Ros §III) that the bottleneck spent transmitting; on a trace-driven
  link, the delivery opportunities that carried data over those offered;
* goodput: payload bytes delivered in order to the receiving application (for CBR,
  whole datagrams, so that a lossless CBR flow's goodput is its rate), over the time
  the flow was active (from its start, or the warm-up, to its stop or the end);
* goodput per interval: the same per `metrics.goodput_interval` window (Khademi,
  Ros & Welzl use 5 s), per flow and for the class;
* Jain's fairness index over a group's per-flow goodputs: (sum x)^2 / (n sum x^2);
* loss rate of a class: its forward packets dropped anywhere / its packets sent;
* one-way delay of CBR datagrams: arrival at the receiver minus sending time;
* download time: from the request (the connection's start, handshake included) to
  the delivery of the last byte, per file size (Kuhn & Ros Fig. 7's percentiles).

The package, by what is measured: `stats` (percentiles, histograms, Jain's index,
moving averages), `runs` (durations, settings, traffic families, link names),
`summary` (summary.json and its headline figures), `links` (a link's packets and
intervals), `flows` (flows, classes and transfers), `rfc7928` (RFC 7928's measures
for `aqmlab characterize`). Every name is importable from `aqmlab.measures`.
"""

from .flows import class_kinds, class_packets, flow_goodputs, interval_goodputs, transfer_rates, transfers  # noqa: F401
from .links import (  # noqa: F401
    CAUSE_NAMES, causes_over_time, delay_over_time, drop_delays, goodput_delay_points, histogram_sample, link_rate_bps,
    link_series, queue_delays, utilization,
)
from .rfc7928 import delay_cv, ipdv_ms, loss_sync, tcp_goodput  # noqa: F401
from .runs import DEQUEUES, _ns, duration_ns, ecn_codepoints, kinds_of, resolve_link, setting_ns, warmup_s  # noqa: F401
from .stats import (  # noqa: F401
    DOWNLOAD_PERCENTILES, EWMA_TAU_S, GOODPUT_PERCENTILES, HIST_NOTE, MAX_SAMPLES_PER_RUN, OWD_PERCENTILES, QUEUE_PERCENTILES,
    UTIL_PERCENTILES, distribution, ecdf_points, ewma, hist_distribution, histogram, jain_index, thin,
)
from .summary import (  # noqa: F401
    HEADLINE, PERCENT, download_times, get, goodput_windows, headline, headline_columns, headline_values, is_trace_link,
    aqm_counters, link_summary, link_utilization, primary_link_of, summarize, utilization_samples,
)
