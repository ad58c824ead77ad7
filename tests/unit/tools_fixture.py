"""A fixed tool set: one tool in each definition form, shared by the golden and loop tests."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from aerix import tool

weather = tool(
    name="weather",
    description="Today's forecast for a city.",
    input={
        "city": {"type": "string", "description": "City name", "required": True},
        "unit": {"type": "string", "enum": ["c", "f"]},
    },
    run=lambda input, ctx: f"Sunny in {input['city']}, 21°{input.get('unit', 'c')}",
)


@tool
def convert(value: float, unit: Literal["km", "mi"], digits: Annotated[int, "Decimal places"] = 1) -> dict:
    """Convert a distance between kilometres and miles."""
    factor = 0.621371 if unit == "km" else 1.609344
    return {"value": round(value * factor, digits), "unit": "mi" if unit == "km" else "km"}


class NoteInput(BaseModel):
    text: str = Field(description="What to remember")
    pinned: bool = False


notes: list[str] = []


async def _save(input, ctx):
    notes.append(input["text"])
    return f"saved note {len(notes)} ({ctx.call_id})"


note = tool(name="note", description="Save a note for later.", input=NoteInput, run=_save)

clock = tool(name="clock", description="The current time in UTC.", input={}, run=lambda input, ctx: "12:00")

TOOLS = [weather, convert, note, clock]
