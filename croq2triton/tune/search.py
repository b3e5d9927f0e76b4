"""Which points a sweep evaluates, and in which order.

* ``exhaustive``: every point of the space, the seeds first (the untuned point: what the schedule
  picks); chosen by ``auto`` while the space's remaining points fit the remaining budget at the
  time per point measured so far.
* ``random``: the seeds, then points drawn without replacement.
* ``guided``: Optuna's TPE sampler (a Parzen-tree model of good and bad points, fitted to every
  result so far; Optuna because it is well kept, runs asynchronous trials, takes categorical
  parameters and a history of results, which a hand-written Bayesian search would not do better),
  seeded with the untuned point and with every result already in the cache.  A point pruned, failed
  or wrong is told as throughput 0, so the model learns where the space is empty.  ``auto``
  switches to it (from exhaustive) when the space does not fit the budget.

The sweep asks for points while workers are free (``ask``) and tells results as they come
(``tell``), so several points are in flight at once (TPE's constant liar keeps them apart).
"""

from __future__ import annotations

import random
from typing import Any

from ..options import Point, Value
from .space import Space, show_value

KINDS = ("auto", "exhaustive", "random", "guided")


class Search:
    def __init__(self, space: Space, kind: str = "auto", seeds: list[Point] | None = None, rng: int = 0) -> None:
        if kind not in KINDS:
            raise ValueError(f"search {kind!r}: one of {', '.join(KINDS)}")
        self.space = space
        self.kind = kind
        self.mode = "guided" if kind == "guided" else "random" if kind == "random" else "exhaustive"
        self.rng = random.Random(rng)
        self.rng_seed = rng
        self.seeds = list(seeds or [])
        self.extra = sum(1 for p in self.seeds if not self._in_space(p))  # seeds outside the product
        self.issued: set[str] = set()
        self.told: dict[str, float] = {}
        self._order = self._exhaustive() if self.mode == "exhaustive" else self._random()
        self._study: Any = None
        self._trials: dict[str, Any] = {}
        self.note = ""  # what the report should say about the search

    @property
    def total(self) -> int:
        return self.space.size() + self.extra

    def _in_space(self, point: Point) -> bool:
        values = self.space.values_of(point)
        return all(values[p.name] in p.values for p in self.space.swept)

    def remaining(self) -> int:
        return max(0, self.total - len(self.issued))

    # ---------------------------------------------------------------- orders
    def _exhaustive(self) -> Any:
        yield from self.seeds
        yield from self.space.points()

    def _random(self) -> Any:
        yield from self.seeds
        n = self.total
        names = [p.name for p in self.space.swept]
        if n <= 2_000_000:
            for i in self.rng.sample(range(n), n):
                yield self.space.point(dict(zip(names, self._combo(i))))
            return
        while True:  # a space too large to shuffle: draw until nothing new comes
            yield self.space.point({p.name: self.rng.choice(p.values) for p in self.space.swept})

    def _combo(self, index: int) -> list[Value]:
        out: list[Value] = []
        for p in reversed(self.space.swept):
            index, r = divmod(index, len(p.values))
            out.append(p.values[r])
        return list(reversed(out))

    # ---------------------------------------------------------------- ask / tell
    def ask(self) -> Point | None:
        """The next point to evaluate (None: the space, or what the search can still find, is done)."""
        if self.remaining() <= 0:
            return None
        if self.mode == "guided":
            return self._ask_guided()
        for misses, p in enumerate(self._order):
            if p.key() not in self.issued:
                self.issued.add(p.key())
                return p
            if misses > 10_000_000:
                break
        return None

    def tell(self, point: Point, score: float | None) -> None:
        """The result of ``point``: its throughput (higher is better), None when it was ruled out."""
        key = point.key()
        value = float(score) if score is not None else 0.0
        self.told[key] = value
        self.issued.add(key)
        trial = self._trials.pop(key, None)
        if trial is not None and self._study is not None:
            self._study.tell(trial, value)

    def skip(self, point: Point) -> None:
        """A point the search must not propose (already known)."""
        self.issued.add(point.key())

    def switch(self, mode: str) -> None:
        """Change the search mid-sweep (``auto``: exhaustive to guided when the space does not fit)."""
        if mode == self.mode:
            return
        self.mode = mode
        if mode == "random":
            self._order = self._random()

    # ---------------------------------------------------------------- guided (Optuna TPE)
    def _distributions(self) -> dict[str, Any]:
        import optuna

        return {
            p.name: optuna.distributions.CategoricalDistribution([show_value(v) for v in p.values])
            for p in self.space.swept
        }

    def _study_now(self) -> Any:
        if self._study is not None:
            return self._study
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.rng_seed, constant_liar=True, n_startup_trials=10)
        self._study = optuna.create_study(direction="maximize", sampler=sampler)
        dists = self._distributions()
        for key, value in self.told.items():  # the history: the cache and what this sweep measured
            point = Point.from_json(_json(key))
            params = self._params(point)
            if params is None:
                continue
            self._study.add_trial(optuna.trial.create_trial(params=params, distributions=dists, value=value))
        for p in self.seeds:
            if p.key() not in self.issued:
                params = self._params(p)
                if params is not None:
                    self._study.enqueue_trial(params)
        return self._study

    def _params(self, point: Point) -> dict[str, str] | None:
        values = self.space.values_of(point)
        out = {}
        for p in self.space.swept:
            shown = show_value(values[p.name])
            if shown not in [show_value(v) for v in p.values]:
                return None
            out[p.name] = shown
        return out

    def _point(self, params: dict[str, str]) -> Point:
        values: dict[str, Value] = {}
        for p in self.space.swept:
            values[p.name] = next(v for v in p.values if show_value(v) == params[p.name])
        return self.space.point(values)

    def _ask_guided(self) -> Point | None:
        try:
            study = self._study_now()
        except ImportError:  # optuna is a dependency, but a bare environment may lack it: random instead
            self.note = "Optuna is not installed: a random search instead of the guided one"
            self.switch("random")
            return self.ask()
        dists = self._distributions()
        for _ in range(64):
            trial = study.ask(dists)
            point = self._point(trial.params)
            key = point.key()
            if key in self.issued:  # proposed again: tell it what is known, ask again
                study.tell(trial, self.told.get(key, 0.0))
                continue
            self.issued.add(key)
            self._trials[key] = trial
            return point
        # the model keeps proposing known points: an unseen one at random
        names = [p.name for p in self.space.swept]
        for _ in range(10_000):
            point = self.space.point({n: self.rng.choice(p.values) for n, p in zip(names, self.space.swept)})
            if point.key() not in self.issued:
                self.issued.add(point.key())
                return point
        return None


def _json(key: str) -> dict[str, Any]:
    import json

    return json.loads(key)
