"""The AQMs to characterize: a kind (``pie``) or a variant of it
(``pie:target=20ms,tupdate=30ms``), checked against the AQM catalogue; and what each
has beyond the plain queue: an FQ form (RFC 7928 §4.6), ECN (§4.5), L4S's ECT(1)
classifier (§4.5), a main parameter (§8.3, §12)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from .. import _core
from ..grid import parse_literal

# An AQM's flow-queueing form: the same AQM per flow queue behind a scheduler (the
# parameters they share carry over). The FQ kinds are their own FQ form.
FQ_FORM = {"codel": "fq_codel", "pie": "fq_pie", "cobalt": "cake"}
FQ_KINDS = ("fq_codel", "fq_pie", "cake")
# AQMs that classify ECT(1) packets into a low-latency (L4S) queue (RFC 9331/9332).
L4S_KINDS = ("dualpi2",)
# The scalable (ECT(1)) sender of §4.5's L4S case: TCP Prague (RFC 9331 §4.3).
L4S_CC = "prague"
# The parameter operators turn first (RFC 7928 §8.3 and §12): the first one an AQM has.
MAIN_PARAMS = ("target", "target_delay", "tau_dd", "max_p")


class VariantError(ValueError):
    """A bad AQM argument: the message is one line naming the argument and the value."""


@lru_cache(maxsize=1)
def aqm_catalog() -> dict[str, dict[str, Any]]:
    return {a["kind"]: a for a in json.loads(_core.aqm_catalog())}


@dataclass(frozen=True)
class Variant:
    label: str  # as given on the command line: "pie" or "pie:target=20ms"
    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def spec(self) -> dict[str, Any]:
        """The scenario's `aqm` table."""
        return {"kind": self.kind, **self.params}

    def param_names(self) -> list[str]:
        return [p["name"] for p in aqm_catalog()[self.kind]["params"]]

    def default(self, name: str) -> Any:
        return next(p["default"] for p in aqm_catalog()[self.kind]["params"] if p["name"] == name)

    @property
    def ecn_switch(self) -> Optional[str]:
        """The parameter that turns ECN marking on: `ecn`, or a nested table's
        (MADPIE's `pie.ecn`, RED+Tail's `ared.ecn`); None without one."""
        params = aqm_catalog()[self.kind]["params"]
        if any(p["name"] == "ecn" for p in params):
            return "ecn"
        return next((f"{p['name']}.ecn" for p in params if isinstance(p["default"], dict) and "ecn" in p["default"]), None)

    @property
    def has_ecn(self) -> bool:
        return self.ecn_switch is not None

    def with_ecn(self) -> dict[str, Any]:
        """The scenario's `aqm` table with ECN marking on (the spec unchanged without a switch)."""
        spec = copy.deepcopy(self.spec)
        path = self.ecn_switch
        if path == "ecn":
            spec["ecn"] = True
        elif path:
            table = path.split(".")[0]
            spec[table] = {**(spec.get(table) or {}), "ecn": True}
        return spec

    @property
    def marks_ecn_always(self) -> bool:
        """No `ecn` switch, and CE-marks ECN-capable packets anyway (DualPI2, CAKE)."""
        return not self.has_ecn and bool(aqm_catalog()[self.kind].get("marks_ecn"))

    @property
    def l4s(self) -> bool:
        return self.kind in L4S_KINDS

    def fq_form(self) -> Optional[dict[str, Any]]:
        """The `aqm` table of its FQ form, the parameters it shares carried over; None
        without one. An FQ kind is its own FQ form."""
        if self.kind in FQ_KINDS:
            return self.spec
        fq = FQ_FORM.get(self.kind)
        if fq is None or fq not in aqm_catalog():
            return None
        names = {p["name"] for p in aqm_catalog()[fq]["params"]}
        return {"kind": fq, **{k: v for k, v in self.params.items() if k in names}}

    def main_param(self) -> Optional[str]:
        names = self.param_names()
        return next((p for p in MAIN_PARAMS if p in names), None)


def parse(text: str) -> Variant:
    """``kind`` or ``kind:param=value,...`` (values as in ``aqmlab run --set``)."""
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    cat = aqm_catalog()
    if kind not in cat:
        raise VariantError(f"characterize: \"{text}\": unknown AQM \"{kind}\", expected one of: {', '.join(cat)}")
    params: dict[str, Any] = {}
    names = [p["name"] for p in cat[kind]["params"]]
    for part in filter(None, (p.strip() for p in rest.split(","))) if rest else ():
        name, eq, raw = part.partition("=")
        name = name.strip()
        if not eq or not name:
            raise VariantError(f"characterize: \"{text}\": \"{part}\" is not param=value")
        if name not in names:
            raise VariantError(f"characterize: \"{text}\": the AQM {kind} has no parameter \"{name}\" (it has: {', '.join(names) or 'none'})")
        params[name] = parse_literal(raw.strip())
    if rest is not None and ":" in text and not params:
        raise VariantError(f"characterize: \"{text}\": no parameters after \":\" (kind:param=value,...)")
    return Variant(text.strip(), kind, params)


def parse_all(texts: list[str]) -> list[Variant]:
    if not texts:
        raise VariantError("characterize: name at least one AQM (aqmlab list aqms)")
    out = [parse(t) for t in texts]
    seen: set[str] = set()
    for v in out:
        if v.label in seen:
            raise VariantError(f"characterize: \"{v.label}\" is named twice")
        seen.add(v.label)
    return out
