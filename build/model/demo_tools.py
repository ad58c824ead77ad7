"""The demo's tools as aerix tools, in Python: the same spec file and the same fake data as
web/demo-tools.mjs, so training conversations carry exactly the results the page produces.

A tool that fails in the page throws a JavaScript ``Error``; aerix then records the result
``error: Error: <message>``. ``ToolFailed`` prints the same way, so the mirror's error results
match the page's byte for byte (the eval checks every result against this module).
"""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from aerix import tool

__all__ = ["SPEC", "INSTRUCTIONS", "UNITS", "ToolFailed", "fmt", "run", "aerix_tools"]

SPEC_FILE = Path(__file__).resolve().parents[2] / "web" / "demo-tools.json"
SPEC: dict[str, Any] = json.loads(SPEC_FILE.read_text(encoding="utf-8"))
INSTRUCTIONS: str = SPEC["instructions"]
UNITS: list[str] = next(t for t in SPEC["tools"] if t["name"] == "convert")["input"]["from"]["enum"]

SKIES = ["sunny", "clear skies", "light clouds", "cloudy", "fog", "wind", "light rain", "showers", "rain", "snow"]
FACTORS = {
    "km": ("length", 1000), "mi": ("length", 1609.344), "m": ("length", 1), "ft": ("length", 0.3048),
    "cm": ("length", 0.01), "in": ("length", 0.0254),
    "kg": ("weight", 1000), "lb": ("weight", 453.59237), "g": ("weight", 1), "oz": ("weight", 28.349523125),
    "l": ("volume", 1), "gal": ("volume", 3.785411784),
}
SHOWN = {"c": "°C", "f": "°F"}


class ToolFailed(Exception):
    """A tool's failure, printed as the page prints a thrown JavaScript Error."""

    def __str__(self) -> str:
        return f"Error: {self.args[0]}"


def name_hash(name: str) -> int:
    h = 0x811C9DC5
    for byte in name.strip().lower().encode("utf-8"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def fmt(x: float) -> str:
    """As JavaScript's ``Math.abs(x).toFixed(2)`` with trailing zeros cut (exact, half away from zero)."""
    if x != x or abs(x) >= 1e15:
        raise ToolFailed("the number is too large")
    s = f"{Decimal(abs(x)).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):.2f}"
    s = re.sub(r"\.?0+$", "", s)
    return f"-{s}" if x < 0 and s != "0" else s


def weather(city: str) -> str:
    name = city.strip()
    h = name_hash(name)
    return f"{SKIES[(h >> 8) % len(SKIES)]} and {h % 41 - 5}°C in {name}"


def weather_celsius(result: str) -> int:
    """The temperature a weather result states."""
    return int(re.search(r" and (-?\d+)°C in ", result).group(1))  # type: ignore[union-attr]


def time(city: str) -> str:
    name = city.strip()
    offset = name_hash(f"time:{name}") % 25 - 12
    hour = (9 + offset + 24) % 24
    return f"{hour:02d}:41 in {name} (UTC{'-' if offset < 0 else '+'}{abs(offset)})"


def convert(value: float, from_: str, to: str) -> str:
    if from_ in SHOWN or to in SHOWN:
        if not (from_ in SHOWN and to in SHOWN):
            raise ToolFailed(f"cannot convert {from_} to {to}")
        out = value if from_ == to else (value * 9 / 5 + 32 if from_ == "c" else (value - 32) * 5 / 9)
    else:
        (kind_from, a), (kind_to, b) = FACTORS[from_], FACTORS[to]
        if kind_from != kind_to:
            raise ToolFailed(f"cannot convert {from_} to {to}")
        out = value * a / b

    def unit(u: str, x: str) -> str:
        return f"{x}{SHOWN[u]}" if u in SHOWN else f"{x} {u}"

    return f"{unit(from_, fmt(value))} is {unit(to, fmt(out))}"


_TOKEN = re.compile(r"\d+(?:\.\d+)?|[-+*/()]|\S", re.ASCII)


def evaluate(expression: str) -> float:
    tokens = _TOKEN.findall(expression.strip())
    pos = 0

    def fail() -> Any:
        raise ToolFailed("cannot read the expression")

    def atom() -> float:
        nonlocal pos
        t = tokens[pos] if pos < len(tokens) else None
        pos += 1
        if t == "-":
            return -atom()
        if t == "(":
            v = total()
            if (tokens[pos] if pos < len(tokens) else None) != ")":
                fail()
            pos += 1
            return v
        if t is None or not t[0].isdigit():
            fail()
        return float(t)  # type: ignore[arg-type]

    def product() -> float:
        nonlocal pos
        v = atom()
        while pos < len(tokens) and tokens[pos] in "*/":
            op = tokens[pos]
            pos += 1
            w = atom()
            if op == "/" and w == 0:
                raise ToolFailed("division by zero")
            v = v * w if op == "*" else v / w
        return v

    def total() -> float:
        nonlocal pos
        v = product()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            v = v + product() if op == "+" else v - product()
        return v

    value = total()
    if pos != len(tokens):
        fail()
    return value


def calculate(expression: str) -> str:
    return f"{expression.strip()} = {fmt(evaluate(expression))}"


def save_note(text: str) -> str:
    note = text.strip()
    if not note:
        raise ToolFailed("the note is empty")
    return f"note saved: {note}"


def run(name: str, input: dict[str, Any]) -> str:
    """One tool's result text as the page gives it (raises ToolFailed as the page throws)."""
    if name == "convert":
        return convert(input["value"], input["from"], input["to"])
    return {"weather": weather, "time": time, "calculate": calculate, "save_note": save_note}[name](**input)


def aerix_tools() -> list[Any]:
    """The spec's tools as aerix tools, running these mirrors."""
    return [
        tool(name=t["name"], description=t["description"], input=t["input"],
             run=lambda input, ctx, name=t["name"]: run(name, input))
        for t in SPEC["tools"]
    ]
