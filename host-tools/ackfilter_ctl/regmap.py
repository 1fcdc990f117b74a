"""The register map shipped with the tool (``regmap.json``, generated from the
gateware's parameter table by ``python -m ackfilter.regmap``)."""

import json
from dataclasses import dataclass
from importlib import resources

__all__ = ["RegisterMap", "RegmapError", "load", "SUPPORTED_REGMAP_VERSION"]

#: The register map layout this tool reads.
SUPPORTED_REGMAP_VERSION = 1


class RegmapError(ValueError):
    """The register map is missing, unreadable or of another version."""


@dataclass(frozen=True)
class RegisterMap:
    raw: dict

    @property
    def params(self):
        return self.raw["params"]

    @property
    def counters(self):
        return self.raw["counters"]

    @property
    def info(self):
        return self.raw["info"]

    @property
    def firmware_params(self):
        """Parameters the firmware keeps (not CSRs), set and saved the same way."""
        return self.raw.get("firmware_params", [])

    @property
    def all_params(self):
        return list(self.params) + list(self.firmware_params)

    def param(self, name):
        for p in self.all_params:
            if p["name"] == name:
                return p
        raise KeyError(f"no parameter named {name!r}; known: "
                       f"{', '.join(p['name'] for p in self.all_params)}")

    def check_value(self, name, value):
        """``value`` (an int, or a name for an enum parameter) as the integer to
        write; a ``ValueError`` names the allowed range (and step: a value
        between two steps is refused, the hardware would ignore its low bits)."""
        p = self.param(name)
        values = p.get("values", {})
        if isinstance(value, str):
            if value in values:
                return values[value]
            try:
                value = int(value, 0)
            except ValueError:
                allowed = f"one of {', '.join(values)} or " if values else ""
                raise ValueError(f"{name}: {value!r} is not {allowed}an integer") from None
        step = p.get("step", 1)
        allowed = f"{p['min']} .. {p['max']} {p['unit']}" + (f" in steps of {step}" if step != 1 else "")
        if not p["min"] <= value <= p["max"]:
            raise ValueError(f"{name} = {value} is out of range: allowed {allowed}")
        if value % step:
            raise ValueError(f"{name} = {value} is not a multiple of {step} (the hardware ignores the "
                             f"rest, so it would act as {value - value % step}): allowed {allowed}")
        return value


def load(text=None):
    """The shipped map (or one given as JSON text)."""
    if text is None:
        text = resources.files(__package__).joinpath("regmap.json").read_text()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise RegmapError(f"regmap.json is not valid JSON: {e}") from None
    version = raw.get("regmap_version")
    if version != SUPPORTED_REGMAP_VERSION:
        raise RegmapError(f"register map version {version!r}; this ackfilter-ctl reads version "
                          f"{SUPPORTED_REGMAP_VERSION}: install the ackfilter-ctl of your gateware")
    return RegisterMap(raw)
