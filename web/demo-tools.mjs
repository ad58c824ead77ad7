// The demo's tools, with deterministic fake data so every answer can be checked: weather and
// time are made up from a hash of the city's name, the clock is frozen at 09:41 UTC, and notes
// live in this page only. Names, descriptions and fields come from demo-tools.json, which the
// bundled model was trained on (build/model/demo_tools.py mirrors these functions in Python).

const SPEC = await (await fetch(new URL("./demo-tools.json", import.meta.url))).json();

export const INSTRUCTIONS = SPEC.instructions;

const SKIES = ["sunny", "clear skies", "light clouds", "cloudy", "fog", "wind", "light rain", "showers", "rain", "snow"];
const FACTORS = {
  km: ["length", 1000], mi: ["length", 1609.344], m: ["length", 1], ft: ["length", 0.3048], cm: ["length", 0.01], in: ["length", 0.0254],
  kg: ["weight", 1000], lb: ["weight", 453.59237], g: ["weight", 1], oz: ["weight", 28.349523125],
  l: ["volume", 1], gal: ["volume", 3.785411784],
};
const SHOWN = { c: "°C", f: "°F" };

/** FNV-1a (32-bit) of the UTF-8 bytes of a trimmed, lower-cased name. */
export function nameHash(name) {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(name.trim().toLowerCase())) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A number as the tools print it: at most two decimals, half away from zero, no trailing zeros. */
export function fmt(x) {
  if (!Number.isFinite(x) || Math.abs(x) >= 1e15) throw new Error("the number is too large");
  const s = Math.abs(x).toFixed(2).replace(/\.?0+$/, "");
  return x < 0 && s !== "0" ? `-${s}` : s;
}

export function weather({ city }) {
  const name = city.trim();
  const h = nameHash(name);
  return `${SKIES[(h >>> 8) % SKIES.length]} and ${(h % 41) - 5}°C in ${name}`;
}

export function time({ city }) {
  const name = city.trim();
  const offset = (nameHash(`time:${name}`) % 25) - 12;
  const hour = (9 + offset + 24) % 24;
  return `${String(hour).padStart(2, "0")}:41 in ${name} (UTC${offset < 0 ? "-" : "+"}${Math.abs(offset)})`;
}

export function convert({ value, from, to }) {
  let out;
  if (from in SHOWN || to in SHOWN) {
    if (!(from in SHOWN && to in SHOWN)) throw new Error(`cannot convert ${from} to ${to}`);
    out = from === to ? value : from === "c" ? (value * 9) / 5 + 32 : ((value - 32) * 5) / 9;
  } else {
    const [kindFrom, a] = FACTORS[from];
    const [kindTo, b] = FACTORS[to];
    if (kindFrom !== kindTo) throw new Error(`cannot convert ${from} to ${to}`);
    out = (value * a) / b;
  }
  const unit = (u, x) => (u in SHOWN ? `${x}${SHOWN[u]}` : `${x} ${u}`);
  return `${unit(from, fmt(value))} is ${unit(to, fmt(out))}`;
}

/** + - * / and parentheses over decimal numbers, by recursive descent (no eval). */
export function calculate({ expression }) {
  const text = expression.trim();
  const tokens = text.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const fail = () => {
    throw new Error("cannot read the expression");
  };
  const atom = () => {
    const t = tokens[i++];
    if (t === "-") return -atom();
    if (t === "(") {
      const v = sum();
      if (tokens[i++] !== ")") fail();
      return v;
    }
    if (t === undefined || !/^\d/.test(t)) fail();
    return Number(t);
  };
  const product = () => {
    let v = atom();
    while (tokens[i] === "*" || tokens[i] === "/") {
      const op = tokens[i++];
      const w = atom();
      if (op === "/" && w === 0) throw new Error("division by zero");
      v = op === "*" ? v * w : v / w;
    }
    return v;
  };
  const sum = () => {
    let v = product();
    while (tokens[i] === "+" || tokens[i] === "-") v = tokens[i++] === "+" ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (i !== tokens.length) fail();
  return `${text} = ${fmt(value)}`;
}

export const notes = [];

export function saveNote({ text }) {
  const note = text.trim();
  if (!note) throw new Error("the note is empty");
  notes.push(note);
  return `note saved: ${note}`;
}

const RUN = { weather, time, convert, calculate, save_note: saveNote };

/** The tools as `aerix.agent({ tools })` takes them. */
export const tools = SPEC.tools.map((t) => ({ ...t, run: async (input) => RUN[t.name](input) }));
