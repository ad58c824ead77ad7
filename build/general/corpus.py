"""Conversations about generated tool families, produced by the real aerix loop, as ChatML.

    python -m build.general.corpus --out build/cache/general --seed 1 --count 5000

For each conversation: a split, a kind (:data:`build.general.tasks.MIX`), a family of that split,
a task; then a real ``aerix.Agent`` with the family's tools (real aerix tools whose results are
made from their input) and a ``Teacher`` model that writes the turns a good agent writes. What is
kept is ``agent.messages``: the real system message, the turns as aerix accepted them, the results
as the loop fed them back. Each is rendered as SmolLM2's ChatML template renders it
(``build.models.chatml``), with the character spans of the assistant's turns (each turn's text and
its ``<|im_end|>``): the loss falls there only.

Writes ``corpus.jsonl`` (one record a line: ``family, domain, split, kind, frame, head, text,
assistant_spans, calls``: ``calls`` are the first turn's) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import time
from collections import Counter
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from aerix import Agent
from aerix.testing import ScriptedModel
from build.models import IM_END, IM_START, chatml

from .domains import EXTRA_FROM_SEED, MORE_FROM_SEED
from .families import PAREN_FROM_SEED, REWORD_FROM_SEED, Family, Runtime, aerix_tools, make_families, parenthesized
from .heads import NEEDS_FROM_SEED, needs
from .listed import LISTED_FROM_SEED, listed
from .mixed import MIXED_FROM_SEED, TWO_ONE_SEEDS, mixed
from .nearmiss import OUTPUT_FROM_SEED, SIBLING_FROM_SEED, outputs, siblings
from .tasks import MIX, MORE_PAIRED_FROM_SEED, NOTE_FROM_SEED, PAIRED_FROM_SEED, Task, ZERO_FROM_SEED, make_task, more_paired, notes_headed, paired, zeros_more
from .values import SUMS_FROM_SEED, Value, big_numbers, said_whole, sums_said_more, switched, unit_words

__all__ = ["SEED", "SEEDS", "MIXES", "DOMAIN_WEIGHTS", "SPLITS", "INSTRUCTIONS", "ASKED_SEEDS", "ASKED_WORDS", "asked", "restated",
           "Teacher", "converse", "render", "generate", "main"]

SEED = 1  # the default seed: run A's corpus
SEEDS = (1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14)  # the corpora the committed adapter was trained on: runs A, B, D, E, F, G, H, I, J, K, M and O (TRAINING.md)
# a seed's kinds' shares where they are not tasks.MIX: run C's corpus has fewer near misses (run B
# refused requests that reach a tool indirectly) and more calls of several tools; run F's fewer near
# misses and more single calls (a third of run E's misses on the demo's tasks were refusals of
# plain requests: "What's it like outside in Kano?")
MIXES = {3: {"single": 0.22, "parallel": 0.16, "multiple": 0.19, "irrelevant": 0.11, "near_miss": 0.07, "error": 0.09,
             "two_requests": 0.16},
         6: {"single": 0.25, "parallel": 0.13, "multiple": 0.15, "irrelevant": 0.12, "near_miss": 0.09, "error": 0.10,
             "two_requests": 0.16}}
MIXES[7] = MIXES[6]
# run H's: more parallel requests (run G's BFCL parallel 0.24; seed 8 pairs values too, tasks._paired)
MIXES[8] = {"single": 0.24, "parallel": 0.16, "multiple": 0.15, "irrelevant": 0.12, "near_miss": 0.09, "error": 0.09,
            "two_requests": 0.15}
# run I's: seed 8's with a few more near misses, 45 % of them a sibling's request (nearmiss._sibling)
MIXES[9] = {"single": 0.23, "parallel": 0.16, "multiple": 0.15, "irrelevant": 0.12, "near_miss": 0.11, "error": 0.08,
            "two_requests": 0.15}
# run J's: more near misses again, most of them another quantity asked with a tool's values or a
# tool's work asked without its values (nearmiss.FIRST_SHARES): run I still called the tool whose
# inputs a request gave, whatever it asked for (BFCL irrelevance 0.56)
MIXES[10] = {"single": 0.22, "parallel": 0.16, "multiple": 0.14, "irrelevant": 0.11, "near_miss": 0.15, "error": 0.08,
             "two_requests": 0.14}
# run K's: a little more parallel (more of them paired: tasks.MORE_PAIRED_SHARE), fewer near misses
# than seed 10's (run J refused every note of the demo's tasks, run I five of eight)
MIXES[11] = {"single": 0.23, "parallel": 0.18, "multiple": 0.14, "irrelevant": 0.10, "near_miss": 0.12, "error": 0.08,
             "two_requests": 0.15}
# a seed's domains drawn more often than the others (a family's weight; 1 where not named): run F's
# corpus draws the domains of its additions (conversions asked for whole, the memo tools) more often,
# so a 400-step run sees them some hundred times rather than some tens
# (run G's: the memo tools' domains more again, run F still refused notes, and the math domain's
# expression tool with its sums said with "and" and its divisions by zero)
DOMAIN_WEIGHTS = {6: {"units": 3.0, "calendar": 2.0, "messaging": 2.0}, 7: {"units": 3.0, "calendar": 3.0, "messaging": 3.0, "math": 3.0},
                  # run H's: the toolboxes (families.TOOLBOXES of them) about a fifth of the conversations
                  8: {"toolbox": 3.0, "units": 2.0, "calendar": 2.0, "messaging": 1.5, "math": 2.0}}
DOMAIN_WEIGHTS[9] = DOMAIN_WEIGHTS[8]
# run J's: the sciences' domains, whose tools' quantities lie close together, twice as often
DOMAIN_WEIGHTS[10] = {**DOMAIN_WEIGHTS[8], "geometry": 2.0, "chemistry": 2.0, "finance": 1.5}
# run K's: finance's rates taken as decimals (families.FRACTION_FROM_SEED) three times as often, and
# the memo keepers' calendar three times (run J refused the demo's notes)
DOMAIN_WEIGHTS[11] = {**DOMAIN_WEIGHTS[10], "finance": 3.0, "calendar": 3.0}
# run M's: seed 11's shares; the math domain (its expression tool, its divisions by zero called and
# answered with the calculator's error: run K refused all four of the demo's) three times again, as in seed 7
MIXES[12] = MIXES[11]
DOMAIN_WEIGHTS[12] = {**DOMAIN_WEIGHTS[11], "math": 3.0}
# run N's: seed 12's, its first turns' thoughts restating the request first (ASKED_SEEDS)
MIXES[13], DOMAIN_WEIGHTS[13] = MIXES[12], DOMAIN_WEIGHTS[12]
# run O's: seed 12's (not 13's restatement), numbers listed as people jot them down in the parallel requests (build.general.listed)
MIXES[14], DOMAIN_WEIGHTS[14] = MIXES[13], DOMAIN_WEIGHTS[13]
# run P's: seed 14's, results written as text ending in parentheses (families.PAREN_FROM_SEED), and requests
# for more calls than one tool and one list (build.general.mixed)
MIXES[15], DOMAIN_WEIGHTS[15] = MIXES[14], DOMAIN_WEIGHTS[14]
# run Q's: seed 15's without one tool for a list beside another (mixed.TWO_ONE_SEEDS)
MIXES[16], DOMAIN_WEIGHTS[16] = MIXES[15], DOMAIN_WEIGHTS[15]
SPLITS = {"train": 0.90, "val_family": 0.05, "val_phrasing": 0.05}
# what {domain} says in the instructions where a family's domain is not a topic
TOPICS = {"toolbox": "everyday"}
INSTRUCTIONS_SHARE = 0.4  # conversations whose agent has instructions (BFCL's have none)
INSTRUCTIONS = ("You are a helpful assistant.", "Use the tools when they fit; otherwise answer directly.",
                "Answer briefly.", "You are an assistant for {domain} tasks.", "Be precise with the values you pass to tools.",
                "You help people with {domain}.", "Keep answers short and friendly.")
# from run E's seed, this share of the agents with instructions write them last
# (TurnFormat(instructions="last"): agents that differ only in instructions share the prompt cache)
INSTRUCTIONS_LAST_SHARE = 0.5


def _turn(thought: str, calls: list[Any] | None = None, final: str | None = None) -> str:
    body: dict[str, Any] = {"thought": thought}
    if calls is not None:
        body["calls"] = [{"tool": c.tool, "input": c.input} for c in calls]
    else:
        body["final"] = final
    return json.dumps(body, ensure_ascii=False)


def _plan(task: Task) -> str:
    tools = [c.tool for c in task.calls]
    if len(set(tools)) == 1 and len(tools) > 1:
        return f"Use {tools[0]} {len(tools)} times, once for each."
    return f"Use {' and '.join(dict.fromkeys(tools))}."


def _quote(result: str) -> str:
    try:
        fields = json.loads(result)
    except ValueError:
        return result
    if not isinstance(fields, dict):
        return result
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fields.items())


def final_answer(family: Family, task: Task, results: list[tuple[str, str]]) -> tuple[str, str]:
    """(thought, final) once every result is in: the final quotes each result."""
    for (tool, text), call in zip(results, task.calls):
        if text.startswith("error: "):
            return "The tool returned an error.", f"Sorry, I couldn't {family.tool(tool).do}: {text[len('error: '):]}."
    parts = []
    for (tool, text), call in zip(results, task.calls):
        spec = family.tool(tool)
        subject = call.said[0].short if call.said and call.said[0].short else ""
        head = spec.obj[:1].upper() + spec.obj[1:] if spec.obj else "Done"
        if len(task.calls) > 1 and len({c.tool for c in task.calls}) == 1:
            head = subject or head
        elif subject and spec.obj:
            head += f" for {subject}"
        parts.append(f"{head}: {_quote(text)}")
    final = ". ".join(parts) + "."
    return ("I have the result." if len(parts) == 1 else "I have the results."), final[:1].upper() + final[1:]


# From run N's seed, a request's first turn restates what it asks before it decides: "Request: what's it
# like outside. Use get_forecast." / "Request: write a short poem about rain. No tool here can do this."
# Every refusal of run K's and M's failed demo runs was the thought "No tool here can do this." written
# first: the choice between a call and a refusal fell on the thought's first word, the tokens right
# after the prompt. Restated, the request's own words (up to its first value) stand just before that choice.
# Seed 13 only: run N, trained on it, called a tool for 16 of BFCL's 25 irrelevance questions (run M
# 6), naming in its thought a tool made up from the request ("Use cone.js."), so later seeds leave it out.
ASKED_SEEDS = frozenset({13})
ASKED_WORDS = 10  # at most, of the request
_ASKED = {"on": False}
# words a restatement does not end on: "what's the hour over in" -> "what's the hour over"
_DANGLING = frozenset("in for of to with at on from a an the and by as is me my about called named into between than "
                      "using under per".split())


def restated(on: bool) -> AbstractContextManager[None]:
    return switched(_ASKED, on)


def asked(prompt: str, values: list[Value]) -> str:
    """The head of ``prompt`` as a thought restates it: the request up to its first value (a value
    the calls pass, a digit or a double quote), without the words left dangling, at most
    :data:`ASKED_WORDS` words; the first words of the request where that leaves fewer than two."""
    low, cut = prompt.lower(), len(prompt)
    for v in values:
        for said in (v.said, v.short):
            i = low.find(said.lower()) if said else -1
            if i >= 0:
                cut = min(cut, i)
    m = re.search(r'[0-9"]', prompt)
    if m:
        cut = min(cut, m.start())
    words = prompt[:cut].split()
    if words and cut < len(prompt) and not prompt[cut - 1].isspace():
        words.pop()  # a word the value begins inside: "ax^2" -> not "ax^"
    while words and (words[-1].lower().strip(",.;:!?") in _DANGLING or not words[-1].strip(",.;:!?")):
        words.pop()
    if len(words) < 2:
        words = prompt.split()[:6]
    return " ".join(words[:ASKED_WORDS]).strip(" ,.;:!?-")


def _thought(thought: str, messages: list[dict[str, str]], task: Task) -> str:
    """``thought`` after the restated request (a seed of :data:`ASKED_SEEDS`), else as it is."""
    if not _ASKED["on"]:
        return thought
    prompt = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return f"Request: {asked(prompt, task.said + [v for c in task.calls for v in c.said])}. {thought}"


class Teacher:
    """The model for ``ScriptedModel``: given the conversation so far, the turn a good agent writes."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.family: Family | None = None

    def __call__(self, messages: list[dict[str, str]], options: dict[str, Any]) -> str:
        task, family = self.task, self.family
        assert task is not None and family is not None
        asked = max(i for i, m in enumerate(messages) if m["role"] == "user" and not m["content"].startswith('{"results": '))
        results: list[tuple[str, str]] = []
        for m in messages[asked + 1 :]:
            if m["role"] == "user":
                results += [(r["tool"], r["result"]) for r in json.loads(m["content"])["results"]]
        if task.reply is not None:
            return _turn(_thought(task.thought, messages, task), final=task.reply)
        if not results:
            return _turn(_thought(_plan(task), messages, task), calls=task.calls)
        thought, final = final_answer(family, task, results)
        return _turn(thought, final=final)


def converse(family: Family, task: Task, instructions: str | None, teacher: Teacher, loop: asyncio.AbstractEventLoop,
             instructions_at: str = "first") -> list[dict[str, str]]:
    """The task run through a real agent with the family's tools: ``agent.messages``
    (``instructions_at``: ``TurnFormat.instructions``)."""
    runtime = Runtime()
    agent = Agent(model=ScriptedModel(teacher), instructions=instructions or "", tools=aerix_tools(family, runtime),
                  limits={"turns": 6, "retries": 0}, turn_format={"instructions": instructions_at})
    teacher.family = family
    current: Task | None = task
    while current is not None:
        teacher.task = current
        runtime.fail = dict(current.fail)
        answer = loop.run_until_complete(agent.ask(current.prompt))
        if not answer.text:
            raise RuntimeError(f"no final for {current.to_dict()}: {answer}")
        current = current.then
    return agent.messages


def _check_errors(messages: list[dict[str, str]], task: Task) -> None:
    """Only the tools a task makes fail may give an error: another error is aerix refusing a
    call input the teacher wrote, a bug of this generator."""
    failing: list[str] = []
    t: Task | None = task
    while t is not None:
        failing += list(t.fail)
        t = t.then
    for m in messages:
        if m["role"] == "user" and m["content"].startswith('{"results": '):
            for r in json.loads(m["content"])["results"]:
                if r["result"].startswith("error: ") and r["tool"] not in failing:
                    raise RuntimeError(f"{r['tool']} gave {r['result']!r} in {task.to_dict()}")


def render(messages: list[dict[str, str]]) -> tuple[str, list[tuple[int, int]]]:
    """The conversation as ChatML, and the spans of each assistant turn (its text and ``<|im_end|>``)."""
    text, spans = "", []
    for m in messages:
        text += f"{IM_START}{m['role']}\n"
        start = len(text)
        text += m["content"] + IM_END
        if m["role"] == "assistant":
            spans.append((start, len(text)))
        text += "\n"
    assert text == chatml(messages, generation_prompt=False)
    return text, spans


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(list(weights), list(weights.values()))[0]


def generate(seed: int, count: int, mix: dict[str, float] | None = None, splits: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """``count`` records, deterministic from ``seed`` (the kinds' shares: ``mix``, else the seed's
    in :data:`MIXES`, else :data:`build.general.tasks.MIX`)."""
    mix, splits = mix or MIXES.get(seed, MIX), splits or SPLITS
    families = make_families(seed)
    pools = {"train": [f for f in families if f.split == "train"], "val_family": [f for f in families if f.split == "val_family"]}
    weights = {name: [DOMAIN_WEIGHTS[seed].get(f.domain, 1.0) for f in pool] for name, pool in pools.items()} if seed in DOMAIN_WEIGHTS else None
    rng = random.Random(seed)
    teacher, loop = Teacher(), asyncio.new_event_loop()
    out: list[dict[str, Any]] = []
    try:
        with big_numbers(seed >= REWORD_FROM_SEED), unit_words(seed >= EXTRA_FROM_SEED), said_whole(seed >= MORE_FROM_SEED), \
                sums_said_more(seed >= SUMS_FROM_SEED), needs(seed >= NEEDS_FROM_SEED), paired(seed >= PAIRED_FROM_SEED), \
                siblings(seed >= SIBLING_FROM_SEED), outputs(seed >= OUTPUT_FROM_SEED), more_paired(seed >= MORE_PAIRED_FROM_SEED), \
                notes_headed(seed >= NOTE_FROM_SEED), zeros_more(seed >= ZERO_FROM_SEED), restated(seed in ASKED_SEEDS), \
                listed(seed >= LISTED_FROM_SEED), parenthesized(seed >= PAREN_FROM_SEED), \
                mixed(seed >= MIXED_FROM_SEED, seed in TWO_ONE_SEEDS):
            while len(out) < count:
                split, kind = _pick(rng, splits), _pick(rng, mix)
                task = None
                while task is None:  # a kind the family cannot have (a multiple of one tool): another family
                    name = "val_family" if split == "val_family" else "train"
                    family = rng.choices(pools[name], weights[name])[0] if weights else rng.choice(pools[name])
                    task = make_task(rng, family, kind, val_phrasing=split == "val_phrasing")
                instructions, at = None, "first"
                if rng.random() < INSTRUCTIONS_SHARE:
                    instructions = rng.choice(INSTRUCTIONS).replace("{domain}", TOPICS.get(family.domain, family.domain))
                    if seed >= EXTRA_FROM_SEED and rng.random() < INSTRUCTIONS_LAST_SHARE:
                        at = "last"
                messages = converse(family, task, instructions, teacher, loop, at)
                _check_errors(messages, task)
                text, spans = render(messages)
                out.append({"family": family.id, "domain": family.domain, "split": split, "kind": kind, "frame": task.frame,
                            "head": task.head, "text": text, "assistant_spans": spans, "calls": [{"tool": c.tool, "input": c.input} for c in task.calls]})
    finally:
        loop.close()
    return out


def summary(records: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    n = len(records)
    return {
        "conversations": n,
        "seconds": round(seconds, 2),
        "by_kind": dict(Counter(r["kind"] for r in records)),
        "by_split": dict(Counter(r["split"] for r in records)),
        "families": {s: len({r["family"] for r in records if r["split"] == s}) for s in ("train", "val_family", "val_phrasing")},
        "domains": len({r["domain"] for r in records}),
        "by_family": dict(Counter(r["family"] for r in records).most_common()),
        "mean_chars": round(sum(len(r["text"]) for r in records) / max(n, 1), 1),
        "max_chars": max((len(r["text"]) for r in records), default=0),
        "mean_assistant_chars": round(sum(b - a for r in records for a, b in r["assistant_spans"]) / max(n, 1), 1),
    }


def _shares(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        kind, _, share = part.partition("=")
        if kind.strip() not in MIX:
            raise argparse.ArgumentTypeError(f"unknown kind {kind.strip()!r}; kinds: {', '.join(MIX)}")
        try:
            out[kind.strip()] = float(share)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{kind.strip()}: the share must be a number, got {share!r}") from None
    if not sum(out.values()) > 0:
        raise argparse.ArgumentTypeError("the shares must add up to more than 0")
    return out


def _seed_list(text: str) -> tuple[int, ...]:
    if text.strip() == "all":
        return SEEDS
    try:
        seeds = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds: {text!r} is not `all` nor seeds as N,N,... (integers)") from None
    if len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"--seeds: {text!r} names a seed twice")
    return seeds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m build.general.corpus", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="the folder to write corpus.jsonl and summary.json into")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--count", type=int, default=5000, help="conversations (with --seeds: of each seed)")
    ap.add_argument("--seeds", type=_seed_list, default=None, metavar="N,N,...|all",
                    help="several seeds' corpora in one file, --count of each, each record naming its seed "
                         "(`all`: SEEDS, what the committed adapter was trained on); the trainer shuffles them")
    ap.add_argument("--mix", type=_shares, default=None, metavar="KIND=SHARE,...",
                    help=f"the kinds' shares (default: the seed's in MIXES, else {','.join(f'{k}={v}' for k, v in MIX.items())}); "
                         "kinds left out get none")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    if args.seeds:
        records = [{"seed": seed, **r} for seed in args.seeds for r in generate(seed, args.count, mix=args.mix)]
    else:
        records = generate(args.seed, args.count, mix=args.mix)
    seconds = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "corpus.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    s = {**({"seeds": list(args.seeds)} if args.seeds else {"seed": args.seed}), **summary(records, seconds)}
    (args.out / "summary.json").write_text(json.dumps(s, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in s.items() if k != "by_family"}, indent=2), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
