"""The run's simulators, apart from the simulator itself: every run holds a pool, and most never
simulate a user, so the simulator's module (and the model client and cache it brings) is imported
only when a simulated step first asks for one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from specengine.plan import SimulatorConfig

if TYPE_CHECKING:
    from specengine.judge.model_client import ShowRequest
    from specengine.simulate.simulator import Simulator


class SimulatorPool:
    """The run's simulators: one per configured simulator model, made when first needed, closed
    when the run ends; their counts together are the summary's `simulator_*` figures."""

    def __init__(
        self,
        configs: Mapping[str | None, SimulatorConfig],
        use_cache: bool = True,
        show_request: Callable[[SimulatorConfig], ShowRequest] | None = None,
    ):
        self.configs = {name: config for name, config in configs.items() if config.model}
        self._use_cache = use_cache
        self._show_request = show_request  # run -v: what shows each simulator's first request as sent
        self._simulators: dict[str | None, Simulator] = {}
        self.used = False

    @property
    def wants_demo(self) -> bool:
        """Whether a simulator is the demo's simulated user (served with the demo agent)."""
        return any(config.demo for config in self.configs.values())

    def serve_demo(self, base_url: str) -> None:
        """Point the demo simulators at the demo server started for the run."""
        for name, config in list(self.configs.items()):
            if config.demo:
                self.configs[name] = replace(config, base_url=base_url)

    def has(self, name: str | None) -> bool:
        """Whether the simulator a `simulate:` step names (None: the project's) has a model."""
        return name in self.configs

    def get(self, name: str | None) -> Simulator:
        self.used = True
        simulator = self._simulators.get(name)
        if simulator is None:
            from specengine.simulate.simulator import Simulator

            config = self.configs[name]
            show = self._show_request(config) if self._show_request is not None else None
            simulator = Simulator(config, use_cache=self._use_cache, show_request=show)
            self._simulators[name] = simulator
        return simulator

    def summary(self) -> dict[str, Any]:
        """The simulators' part of the results summary (nothing when no case was simulated)."""
        if not self.used:
            return {}
        from specengine.simulate.simulator import SimulatorStats

        total = sum((simulator.stats for simulator in self._simulators.values()), SimulatorStats())
        return {
            "simulator_calls": total.calls,
            "simulator_cache_hits": total.cache_hits,
            "simulator_tokens": total.prompt_tokens + total.completion_tokens,
        }

    async def aclose(self) -> None:
        for simulator in self._simulators.values():
            await simulator.aclose()
