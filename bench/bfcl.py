"""`make bfcl`: the Berkeley Function-Calling Leaderboard's single-turn categories through aerix.

    .venv/bin/python -m bench.bfcl [--model PATH ...] [--variant default] [--limit 25]
        [--categories simple_python,multiple,parallel,parallel_multiple,irrelevance]
        [--page-sample 5] [--threads 1] [--fresh]

Each question is one fresh ``aerix.Agent`` whose tools are the question's functions
(``bench/bfcl_agent.py``: BFCL's names mapped to aerix's pattern and back, parameters as JSON
Schema), on a GGUF served natively by the ``llama-server`` the tests compile
(``build/llama_server.py``), through ``aerix.OpenAIModel``: the same turn schema the page sends,
greedy (temperature 0). Each question is an ``aerix.evals`` case run by ``evals.run`` (its
agent the factory's) with ``stop_after="turn"``: the first accepted turn is kept and the run
stopped there, so no tool runs. Its calls, in BFCL's format and names, are scored by BFCL's own
AST checker, imported from the pinned wheel (``bench/bfcl_data.py``), as the case's check
``bfcl`` through ``evals.score``; each category's right answers are its ``evals.Report``'s
(``bench/bfcl_score.py``).

Without ``--model``: SmolLM2-135M-Instruct Q4_1 and Q8_0 and the bundled model, from the built
site's models/ (``make smollm2``). ``--limit``: the first N questions of each category (0: all).

Resumable: each question's record is appended, as it finishes, to
``$AERIX_CACHE/bfcl/runs/<model>-<variant>.jsonl`` (``-page.jsonl`` for the page's); a rerun
skips what is there for the same GGUF (by sha256) and the same request (the fingerprint of what
the model is sent: system message, turn schema, question, settings); ``--fresh`` starts over. Writes
``bench/results/bfcl-<model>.json`` (``bfcl-<model>-<variant>.json`` for another variant): every
question's calls, verdict and error type, the summary and the page comparison; prints the table.

``--variant NAME``: the agent's ``TurnFormat`` (``FORMATS`` in ``bench/bfcl_agent.py``, the
ablations of issue 27); ``python -m bench.bfcl_variants`` tables the variants' results side by side.

``--page-sample N``: the first N questions of each category also run in the page (headless
Chromium, bench/bfcl_page.html, the same GGUF in the page's engine) and their calls are compared
with the native ones (0: skip).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from bench import bfcl_agent, bfcl_data
from build.dist import sha256
from aerix import evals
from bench.bfcl_score import scored as scored_case, summary, table

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
RESULTS = ROOT / "bench" / "results"
DEFAULT_MODELS = {
    "aerix-general": SITE / "models" / "aerix-general-q8_0.gguf",  # SmolLM2 tuned here (make general-model)
    "smollm2-q4_1": SITE / "models" / "smollm2.gguf",
    "smollm2-q8_0": SITE / "models" / "smollm2-q8_0.gguf",
    "aerix-tools": SITE / "models" / "aerix-tools.gguf",
}


def log(message: str) -> None:
    print(f"bfcl: {message}", file=sys.stderr, flush=True)


# -- the questions and the run's log -------------------------------------------------------------


def picked(categories: list[str], limit: int) -> list[tuple[str, dict[str, Any]]]:
    """(category, entry) of the first ``limit`` questions of each category (0: all)."""
    return [(c, e) for c in categories for e in (bfcl_data.questions(c)[:limit] if limit else bfcl_data.questions(c))]


class RunLog:
    """One JSON line per finished question; lines for another GGUF (sha256) are not reused."""

    def __init__(self, path: Path, model_sha256: str, fresh: bool) -> None:
        self.path, self.sha = path, model_sha256
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh:
            path.unlink(missing_ok=True)
        self.done: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut by a killed run: that question runs again
                if record.get("model_sha256") == self.sha:
                    self.done[record["id"]] = record

    def keep(self, fingerprints: dict[str, str]) -> None:
        """Forget the logged answers to questions aerix would now ask differently (another
        system message, turn schema, tools...): their fingerprint is not the one given."""
        self.done = {k: r for k, r in self.done.items() if r.get("fingerprint") == fingerprints.get(k)}

    def add(self, record: dict[str, Any]) -> None:
        record["model_sha256"] = self.sha
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.done[record["id"]] = record


# -- one question ----------------------------------------------------------------------------------


Scored = tuple[dict[str, Any], evals.CaseResult]  # a record with its verdict, and its evals result


def scored(record: dict[str, Any], entry: dict[str, Any], answers: dict[str, Any], checker: Any) -> Scored:
    """The logged record through its evals case (bfcl_score.scored): the record with its verdict, and the case's result."""
    return scored_case(record, entry, answers.get(entry["id"]), checker)


# -- natively, on llama-server ---------------------------------------------------------------------


class NativeServer:
    """llama-server on one GGUF, on a free port: one slot, 4096 tokens of context, ``threads``."""

    def __init__(self, model: Path, alias: str, threads: int, log_path: Path) -> None:
        from build import llama_server
        from build.ports import free_port

        binary = llama_server.find()
        if binary is None:
            sys.exit("bfcl: llama-server is not built: run `make llama-server` (make bfcl does)")
        self.port = free_port()
        said = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
        lines = (said.stdout + said.stderr).strip().splitlines()
        self.version = [line for line in lines if line.startswith("version")][:1] or lines[:1]  # "version: N (hash)"
        args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "--alias", alias,
                "-np", "1", "-c", "4096", "-t", str(threads), "-tb", str(threads), "--no-webui"]  # fmt: skip
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit(f"bfcl: llama-server did not start on {model}; its log: {log_path}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._log.close()


def run_native(todo: list[tuple[str, dict[str, Any]]], model_path: Path, name: str, args: argparse.Namespace,
               runs: RunLog, score: Callable[[dict[str, Any], dict[str, Any]], Scored]) -> list[str]:  # fmt: skip
    """Each question of ``todo`` natively, logged as it finishes; llama-server's version line."""
    from aerix import OpenAIModel

    server = NativeServer(model_path, name, args.threads, runs.path.with_suffix(".server.log"))
    try:
        model = OpenAIModel(f"http://127.0.0.1:{server.port}/v1", name, retries=0)

        async def all_of_them() -> None:
            for i, (category, entry) in enumerate(todo, 1):
                record, _ = score(await bfcl_agent.question_record(model, category, entry, args.variant), entry)
                runs.add(record)
                log(f"{name} {entry['id']}: {'right' if record['valid'] else record['error_type']} ({i}/{len(todo)}, {record.get('seconds') or 0:.1f} s)")

        asyncio.run(all_of_them())
    finally:
        server.stop()
    return server.version


# -- in the page -------------------------------------------------------------------------------------


def site_url(model_path: Path) -> str | None:
    """The model's URL on the built site: the file itself under build/site/models/, or one there with its bytes."""
    models = SITE / "models"
    if model_path.resolve().parent == models.resolve():
        return f"/models/{model_path.name}"
    size, digest = model_path.stat().st_size, None
    for other in sorted(models.glob("*.gguf")) if models.is_dir() else []:
        if other.stat().st_size == size:
            digest = digest or sha256(model_path)
            if sha256(other) == digest:
                return f"/models/{other.name}"
    return None


def run_page(sample: list[tuple[str, dict[str, Any]]], url: str, name: str, args: argparse.Namespace, runs: RunLog,
             score: Callable[[dict[str, Any], dict[str, Any]], Scored]) -> dict[str, Any]:  # fmt: skip
    """The sample's questions in headless Chromium (bench/bfcl_page.mjs), logged as they finish."""
    from playwright.sync_api import sync_playwright

    from bench.run import start_server
    from build.chromium import launch

    todo = [(c, e) for c, e in sample if e["id"] not in runs.done]
    if not todo:
        return {}
    server, origin = start_server()
    try:
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_context().new_page()
            page.set_default_timeout(600_000)
            page.on("console", lambda m: log(f"page console: {m.text[:300]}") if m.type == "error" else None)
            page.goto(f"{origin}/bench/bfcl_page.html")
            page.wait_for_function("() => window.bfcl !== undefined")
            info = page.evaluate("(a) => window.bfcl.setup(a)", {"model": url, "nThreads": args.threads})
            log(f"page booted on {url} in {info['ms'] / 1000:.1f} s (prompt mode {info['info'].get('prompt')})")
            for i, (category, entry) in enumerate(todo, 1):
                question = {"category": category, "entry": json.dumps(entry), "variant": args.variant}
                record = json.loads(page.evaluate("(a) => window.bfcl.question(a)", question))
                runs.add(score(record, entry)[0])
                log(f"{name} page {entry['id']} ({i}/{len(todo)})")
            browser.close()
        return {"engine": info["info"]}
    finally:
        server.shutdown()


def compare(native: list[dict[str, Any]], page: list[dict[str, Any]]) -> dict[str, Any]:
    """How often the page's first turn has the native one's calls (and how often the whole turn,
    thought included, is the same); each difference, with whether the prompts had as many tokens
    and the thoughts were the same."""
    by_id = {r["id"]: r for r in native}
    differences, same_turns = [], 0
    for p in page:
        n = by_id[p["id"]]
        same_turns += p.get("turn") == n.get("turn")
        if p.get("calls") != n.get("calls"):
            differences.append({
                "id": p["id"], "native": n.get("calls"), "page": p.get("calls"),
                "native_verdict": n["valid"], "page_verdict": p["valid"],
                "same_prompt_tokens": bool(n.get("usage")) and bool(p.get("usage")) and n["usage"][0][0] == p["usage"][0][0],
                "same_thought": (n.get("turn") or {}).get("thought") == (p.get("turn") or {}).get("thought"),
            })  # fmt: skip
    agree = len(page) - len(differences)
    return {"questions": len(page), "agree": agree, "rate": agree / len(page) if page else None, "same_turns": same_turns, "differences": differences}


# -- one model ---------------------------------------------------------------------------------------


def run_model(name: str, path: Path, args: argparse.Namespace, checker: Any) -> dict[str, Any]:
    categories = args.categories.split(",")
    questions = picked(categories, args.limit)
    answers = {k: v for c in categories for k, v in bfcl_data.answers(c).items()}
    entries = {e["id"]: e for _, e in questions}

    def score(record: dict[str, Any], entry: dict[str, Any]) -> Scored:
        return scored(record, entry, answers, checker)

    digest = sha256(path)
    runs_dir = bfcl_data.cache() / "runs"
    native = RunLog(runs_dir / f"{name}-{args.variant}.jsonl", digest, args.fresh)
    prints = {e["id"]: bfcl_agent.fingerprint(e, args.variant) for _, e in questions}
    native.keep(prints)
    todo = [(c, e) for c, e in questions if e["id"] not in native.done]
    log(f"{name}: {len(questions) - len(todo)} of {len(questions)} questions already in {native.path}")
    version = run_native(todo, path, name, args, native, score) if todo else []
    # scored again from the records, so a figure always comes from the checker as it is now
    results = [score(native.done[e["id"]], e) for _, e in questions]
    records = [r for r, _ in results]
    out: dict[str, Any] = {"model": {"name": name, "file": str(path), "size": path.stat().st_size, "sha256": digest},
           "llama_server": version, "summary": summary(results, categories), "evals": evals.Report(tuple(r for _, r in results)).totals(),
           "questions": records}  # fmt: skip
    if args.page_sample:
        sample = [(c, e) for c in categories for e in [e for cc, e in questions if cc == c][: args.page_sample]]
        url = site_url(path)
        if url is None:
            out["page"] = {"skipped": f"{path} is not in {SITE / 'models'}: the page cannot load it (make smollm2, make build)"}
        else:
            page_log = RunLog(runs_dir / f"{name}-{args.variant}-page.jsonl", digest, args.fresh)
            page_log.keep(prints)
            info = run_page(sample, url, name, args, page_log, score)
            page_results = [score(page_log.done[e["id"]], entries[e["id"]]) for _, e in sample]
            page_records = [r for r, _ in page_results]
            out["page"] = {"url": url, **info, **compare(records, page_records), "summary": summary(page_results, categories), "questions": page_records}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", type=Path, help="a GGUF (repeatable; default: aerix-general, SmolLM2 Q4_1 and Q8_0 and the bundled model)")
    ap.add_argument("--variant", default="default", choices=sorted(bfcl_agent.VARIANTS), help="how each agent is made (bench/bfcl_agent.py)")
    ap.add_argument("--categories", default=",".join(bfcl_data.CATEGORIES))
    ap.add_argument("--limit", type=int, default=25, help="the first N questions of each category (0: all; default 25)")
    ap.add_argument("--page-sample", type=int, default=5, help="of those, the first N of each category also in the page (0: none)")
    ap.add_argument("--threads", type=int, default=1, help="llama-server's and the page engine's threads (default 1)")
    ap.add_argument("--fresh", action="store_true", help="forget the logged questions of these runs")
    ap.add_argument("--out-dir", type=Path, default=RESULTS, help="where bfcl-<model>.json goes (default bench/results)")
    args = ap.parse_args(argv)
    unknown = set(args.categories.split(",")) - set(bfcl_data.CATEGORIES)
    if unknown:
        ap.error(f"unknown categories {sorted(unknown)} (known: {', '.join(bfcl_data.CATEGORIES)})")
    models = {p.stem: p for p in args.model} if args.model else DEFAULT_MODELS
    missing = [str(p) for p in models.values() if not p.is_file()]
    if missing:
        sys.exit(f"bfcl: no such model: {', '.join(missing)} (make smollm2 puts SmolLM2 in the site, make general-model aerix-general)")
    bfcl_data.fetch()
    checker = bfcl_data.checker()
    for name, path in models.items():
        started = time.monotonic()
        result = run_model(name, path, args, checker)
        suffix = "" if args.variant == "default" else f"-{args.variant}"
        out = args.out_dir / f"bfcl-{name}{suffix}.json"
        record = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "command": " ".join(["python -m bench.bfcl", *(argv or sys.argv[1:])]),
            "variant": args.variant, "limit": args.limit, "threads": args.threads, "minutes": round((time.monotonic() - started) / 60, 2),
            "bfcl_eval": {"version": bfcl_data.VERSION, "wheel_sha256": bfcl_data.WHEEL_SHA256}, **result,
        }  # fmt: skip
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        tmp.replace(out)
        print(table(f"{name} ({args.variant})", result["summary"]))
        page = result.get("page") or {}
        if "rate" in page:
            print(f"page: {page['agree']} of {len(page['questions'])} first turns have the native calls ({page['rate']:.0%})")  # "questions": the page's records
        elif page:
            print(f"page: {page['skipped']}")
        print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
