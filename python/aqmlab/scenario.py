"""Finding a scenario: a TOML file, a built-in name, or a dict."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Union

from . import _core

ScenarioLike = Union[str, Path, Mapping[str, Any], None]


@dataclass(frozen=True)
class Source:
    """Scenario text, its format ("toml" or "json"), and where it came from."""

    text: str
    format: str
    origin: str

    @property
    def base_dir(self) -> str | None:
        """The folder relative file names in the scenario (link traces) start from."""
        if self.origin.startswith("built-in:") or self.origin == "<dict>":
            return None
        return str(Path(self.origin).resolve().parent)


def builtin_names() -> list[str]:
    return [name for name, _ in _core.builtin_scenarios()]


def default_name() -> str:
    return _core.builtin_scenarios()[0][0]


def source(scenario: ScenarioLike) -> Source:
    """Resolve `scenario` (None for the default, a built-in name, a path, or a dict)."""
    if scenario is None:
        scenario = default_name()
    if isinstance(scenario, Mapping):
        return Source(json.dumps(scenario), "json", "<dict>")
    text = str(scenario)
    builtins = dict(_core.builtin_scenarios())
    if text in builtins and not Path(text).is_file():  # a folder of that name (e.g. a run) does not hide it
        return Source(builtins[text], "toml", f"built-in:{text}")
    path = Path(text)
    if not path.exists():
        names = ", ".join(builtins)
        raise _core.ScenarioError(f"scenario: no file \"{text}\" and no built-in scenario of that name (built-ins: {names})")
    if path.is_dir():
        if (path / "scenario.json").is_file():  # a run folder: run its scenario again
            path = path / "scenario.json"
        else:
            raise _core.ScenarioError(f"scenario: \"{text}\" is a directory without a scenario.json, expected a .toml or .json file or a run folder")
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    return Source(read_text(path, "scenario"), fmt, str(path))


def read_text(path: Path, field: str) -> str:
    """A text file (TOML and JSON are UTF-8), or a one-line ScenarioError naming the file."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise _core.ScenarioError(f"{field}: cannot read \"{path}\": {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _core.ScenarioError(
            f"{field}: \"{path}\" is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); save it as UTF-8"
        ) from None


def resolve(scenario: ScenarioLike, overrides: list[str] | None = None, seed: int | None = None) -> dict[str, Any]:
    """Validate a scenario and return it with every default filled in."""
    from . import inputs

    seed = inputs.seed(seed)
    over = inputs.override_list(overrides)
    src = source(scenario)
    return json.loads(_core.resolve_scenario(src.text, src.format, over, seed, src.base_dir))


def _drop_nulls(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


def to_toml(scenario: Mapping[str, Any]) -> str:
    """A scenario (e.g. `resolve`'s, or a run's scenario.json) as TOML that `aqmlab run`
    reads back to the same scenario (TOML has no null: unset fields are left out)."""
    import tomli_w

    return tomli_w.dumps(_drop_nulls(dict(scenario)))
