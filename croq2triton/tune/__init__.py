"""``croq2triton tune``: sweeps over a kernel's schedule space, pruned, verified, timed, cached.

One job per module (DESIGN.md, "Tuning and the schedule space"):

* :mod:`.space`: the parameters (the source's own ``#define`` values, the fields of each kernel's
  ``Schedule`` / ``TileSchedule``), their values, the default space per kernel kind, the points;
* :mod:`.prune`: what rules a point out before compiling and after, each with its reason;
* :mod:`.verify`: a point's outputs against the default translation and float64 torch;
* :mod:`.timing`: the one timing method (also used by ``perf/``);
* :mod:`.workers`: worker processes (compile pool, one benchmark process per GPU), killed and
  respawned on a crash or a hang;
* :mod:`.search`: which points to evaluate within the budget (exhaustive, random, Optuna TPE);
* :mod:`.cache`: one JSON-lines record per evaluated point, merged from every process and host;
* :mod:`.report`: the ranked table, ``best.json``, the plot;
* :mod:`.sweep`: the sweep itself, tying them together; :mod:`.rayrun`: the same over a Ray cluster.
"""
