"""Analysis beside simulation: models that say where to look, checked against aqmlab runs.

- :mod:`aqmlab.analysis.ared_queue`: the queue-dynamics model of Adaptive RED with
  sliding thresholds (Jou, Tan & Baras, "A Parallel Virtual Queue Structure for
  Active Queue Management", §VI): the map f, its equilibrium and stability, the
  Markov chain over the discretized queue and the linear Gaussian approximation.
- :mod:`aqmlab.analysis.pie_fluid`: the fluid model of TCP (Misra, Gong & Towsley,
  SIGCOMM 2000) closed by PIE's discrete PI controller (Pan et al., HPSR 2013;
  RFC 8033), integrated numerically, and the loop's linearized stability margin.
- :mod:`aqmlab.analysis.cli`: ``aqmlab analyze ared-queue`` and ``aqmlab analyze pie-fluid``.

See docs/analysis.md for the equations, their sources, and where the models and the
packet simulation disagree.
"""
