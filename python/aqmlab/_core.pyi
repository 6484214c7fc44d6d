"""Type stubs for aqmlab's Rust extension."""

from typing import Callable, Optional

import numpy as np

__version__: str

class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field and the value."""

class SimulationError(RuntimeError):
    """A run that broke an invariant such as packet conservation (a bug)."""

def resolve_scenario(
    text: str, format: str = "toml", overrides: list[str] = ..., seed: Optional[int] = None, base_dir: Optional[str] = None
) -> str: ...
def run(
    text: str,
    format: str = "toml",
    overrides: list[str] = ...,
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], object]] = None,
    base_dir: Optional[str] = None,
) -> dict[str, object]: ...
def builtin_scenarios() -> list[tuple[str, str]]: ...
def aqm_catalog() -> str: ...
def traffic_catalog() -> str: ...
def cc_catalog() -> str: ...
def schema() -> str: ...
def emulate_bottleneck(
    text: str,
    format: str,
    overrides: list[str],
    seed: Optional[int],
    tun_senders: int,
    tun_receivers: int,
    control: int,
    base_port: int,
    flows: int,
    spin_ns: Optional[int] = None,
    trace_ms: Optional[list[int]] = None,
    base_dir: Optional[str] = None,
    delays_ns: Optional[list[tuple[int, int]]] = None,
    groups: Optional[tuple[list[str], list[int]]] = None,
) -> dict[str, object]: ...
def emulation_plan(
    text: str, format: str = "toml", overrides: list[str] = ..., seed: Optional[int] = None, base_dir: Optional[str] = None
) -> str: ...
def memory_estimate(
    text: str, format: str = "toml", overrides: list[str] = ..., seed: Optional[int] = None, base_dir: Optional[str] = None
) -> str: ...
