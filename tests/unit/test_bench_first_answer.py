"""Issue 30's bench parts that need no browser: P10's figures and table lines from the page's
results (bench/first_answer.py; the page side, bench/first_answer.mjs, runs only in `make bench`),
their place in `make bench`'s table (bench/run.py), the batch sweep's table, and the first prompt's
size in tokens (bench/prompt_tokens.py). CPython only: the harness is not part of the package."""

from __future__ import annotations

import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("the benchmark harness runs on CPython", allow_module_level=True)

from bench import first_answer, prompt_tokens, run


def agent(answer: float | None, token: float | None, usage: list[list[int]], *, sent: float = 9000.0, generation: int | None = 2,
          ending: str = "final") -> dict:  # fmt: skip
    return {"prompt": "task", "agentMs": 30.0, "sentAt": sent, "firstTokenMs": token, "firstAnswerMs": answer,
            "answerGeneration": generation if answer is not None else None, "usage": usage, "calls": ["weather"], "ending": ending}  # fmt: skip


def load(cold: dict, warm: dict, ready: float = 8000.0) -> dict:
    return {"ok": True, "ready": ready, "engine": {"n_threads": 2, "n_batch": 2048, "n_ubatch": 512}, "cold": cold, "warm": warm}


# three page loads of one model and mode: the warm agent reuses the system message (cached ≈ 400 of 431)
LOADS = [
    load(agent(6000, 5400, [[431, 0, 40], [470, 460, 20]]), agent(1400, 600, [[431, 404, 38], [468, 457, 21]])),
    load(agent(5000, 4600, [[431, 0, 41], [472, 460, 22]]), agent(1200, 500, [[433, 404, 36], [470, 459, 20]])),
    load(agent(7000, 6100, [[431, 0, 39], [469, 459, 23]]), agent(1800, 700, [[431, 405, 40], [466, 455, 19]])),
]


def test_figures_are_medians_of_the_page_loads_with_the_prompt_tokens_each_first_generation_processed():
    f = first_answer.figures(LOADS)
    assert f["cold"]["first_answer_ms"] == {"median": 6000, "min": 5000, "max": 7000, "n": 3}
    assert f["cold"]["first_token_ms"]["median"] == 5400
    assert f["cold"]["first_processed_tokens"]["median"] == 431  # nothing cached on a new page
    assert f["warm"]["first_processed_tokens"] == {"median": 27, "min": 26, "max": 29, "n": 3}
    assert f["warm"]["first_cached_tokens"]["median"] == 404
    assert f["cold"]["page_to_answer_ms"]["median"] == 9000 + 6000
    assert f["cold"]["generations_to_answer"]["median"] == 2
    assert f["warm"]["answered"] == "3/3" and f["warm"]["endings"] == ["final"]


def test_an_agent_that_never_answered_is_counted_and_left_out_of_the_times():
    loads = [*LOADS[:2], load(agent(None, 6100, [[431, 0, 256]] * 4, ending="end turns"), LOADS[2]["warm"])]
    cold = first_answer.figures(loads)["cold"]
    assert cold["answered"] == "2/3" and cold["first_answer_ms"]["n"] == 2
    assert cold["first_token_ms"]["n"] == 3
    assert cold["endings"] == ["end turns", "final"]
    nobody = first_answer.figures([load(agent(None, None, [], ending="end abort"), agent(None, None, [], ending="end abort"))])
    assert nobody["cold"]["first_answer_ms"] is None and nobody["cold"]["first_processed_tokens"] is None
    (line, _) = first_answer.rows({"figures": {"m.gguf page": nobody}})
    assert line[3] == "none" and "answered in 0/1 runs" in line[5] and "no token" in line[5]


def test_rows_give_cold_and_warm_against_their_goals():
    p = {"figures": {"smollm2-q8_0.gguf page": first_answer.figures(LOADS)}}
    cold, warm = first_answer.rows(p)
    assert cold[0] == "P10 smollm2-q8_0.gguf page cold" and cold[2] == "≤ 4000 ms"
    assert cold[3] == "6000 ✗" and cold[4] == "5000–7000"
    assert warm[0] == "P10 smollm2-q8_0.gguf page warm" and warm[2] == "≤ 1500 ms" and warm[3] == "1400 ✓"
    assert "processed 27 of 431 prompt tokens (404 from the cache)" in warm[5]
    assert "page load → answer 15.0 s" in cold[5] and "answer in generation 2" in cold[5]
    assert first_answer.rows(None) == [] and first_answer.rows({}) == []


def test_make_bench_table_carries_p10_s_lines():
    record = {"P10": {"figures": {"smollm2-q8_0.gguf worker": first_answer.figures(LOADS)}}}
    lines = run.table(record).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| P10 smollm2-q8_0.gguf worker cold", "| P10 smollm2-q8_0.gguf worker warm"]
    assert run.table({}).count("\n") == 1  # no P10 in the results: no line


def test_sweep_table_one_row_per_ubatch():
    sweep = {"rates": {"64": [{"prompt_tok_s": 70.0, "prompt_n": 790}, {"prompt_tok_s": 74.0, "prompt_n": 790}], "512": [{"prompt_tok_s": 80.5, "prompt_n": 790}]}}
    assert first_answer.sweep_rows(sweep).splitlines()[2:] == ["| 64 | 72.0 | 70.0–74.0 | 790 |", "| 512 | 80.5 | 80.5–80.5 | 790 |"]


# -- the first prompt in tokens --------------------------------------------------------------------


def test_generated_tool_sets_have_the_sizes_asked_and_the_same_tools_each_time():
    for n in prompt_tokens.SIZES:
        tools = prompt_tokens.family_tools(n)
        assert len(tools) == n and len({t.name for t in tools}) == n
        assert [t.name for t in prompt_tokens.family_tools(n)] == [t.name for t in tools]


def test_counts_each_tool_set_in_each_format_and_the_first_prompt_is_the_page_s_chatml():
    seen: list[str] = []

    def encode(text: str) -> int:
        seen.append(text)
        return len(text.split())

    sets = prompt_tokens.tool_sets()
    rows = prompt_tokens.count(encode, sets)
    assert len(rows) == len(sets) * len(prompt_tokens.FORMATS)
    demo = {r["format"]: r for r in rows if r["tools"].startswith("demo")}
    assert demo["compact"]["system_chars"] < demo["default"]["system_chars"]
    first = seen[1]  # the demo's first prompt, default format
    assert first.startswith("<|im_start|>system\n" + seen[0] + "<|im_end|>\n<|im_start|>user\n" + prompt_tokens.FIRST_TASK)
    assert first.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_token_table_compares_with_the_default_format_and_gives_seconds_only_at_a_known_rate():
    rows = [{"tools": "demo (5 tools)", "format": "default", "system_chars": 1326, "system_tokens": 408, "prompt_tokens": 431},
            {"tools": "demo (5 tools)", "format": "compact", "system_chars": 1241, "system_tokens": 375, "prompt_tokens": 398}]  # fmt: skip
    with_rate = prompt_tokens.table("SmolLM2", rows, prompt_tokens.page_rate("SmolLM2-135M-Instruct-Q8_0")).splitlines()
    assert with_rate[3] == "| SmolLM2 | demo (5 tools) | compact | 1241 | 375 | 398 | -33 (-8%) | 5.0 s |"
    assert prompt_tokens.page_rate("aerix-tools") is None
    assert prompt_tokens.table("aerix-tools", rows).splitlines()[2].endswith("| 431 | +0 (+0%) |")


# -- the engine sweep (bench/engine_sweep.py) -------------------------------------------------------


def test_engine_sweep_variants_parse_options_and_refuse_a_malformed_one():
    from bench import engine_sweep

    assert engine_sweep.parse_variant("f32=cacheTypeK:f32,flashAttn:false,nUbatch:128") == (
        "f32", {"cacheTypeK": "f32", "flashAttn": False, "nUbatch": 128})
    assert engine_sweep.parse_variant("default=") == ("default", {})
    for bad in ("no-equals", "=cacheTypeK:f32", "x=cacheTypeK"):
        with pytest.raises(Exception, match="variant|NAME=option"):
            engine_sweep.parse_variant(bad)


def test_engine_sweep_table_one_row_per_variant_and_browser_cold_and_warm_medians():
    from bench import engine_sweep

    def run(variant, flags, prompt, which, rate, gen=30.0):
        return {"variant": variant, "js_flags": flags, "prompt": prompt, "run": which, "prompt_tok_s": rate, "gen_tok_s": gen}

    record = {"variants": {"default": {}}, "js_flags": ["", "--no-liftoff"], "runs": [
        run("default", "", "short", "cold", 60.0), run("default", "", "short", "warm", 80.0),
        run("default", "", "long", "cold", 40.0), run("default", "", "long", "warm", 44.0, 33.0),
        run("default", "--no-liftoff", "long", "cold", 70.0)]}
    lines = engine_sweep.table(record).splitlines()
    assert lines[2] == "| default | (none) | 60.0 / 80.0 | 40.0 / 44.0 | 30.0 / 33.0 |"
    assert lines[3] == "| default | --no-liftoff | – / – | 70.0 / – | 30.0 / – |"


# -- the profile of the engine's threads (bench/profile_prompt.py) ------------------------------


def test_profile_self_times_add_each_threads_samples_by_function_and_count_wasm_threads_as_the_engines():
    from bench import profile_prompt

    def frame(name, wasm=False):
        return {"functionName": name, "url": "wasm://wasm/abc" if wasm else "http://x/engine.mjs", **({"codeType": "wasm"} if wasm else {})}

    events = [
        {"name": "Profile", "pid": 1, "tid": 7, "id": "0x1", "args": {"data": {"startTime": 0}}},
        {"name": "ProfileChunk", "pid": 1, "tid": 7, "id": "0x1", "args": {"data": {
            "cpuProfile": {"nodes": [{"id": 1, "callFrame": frame("(root)")}, {"id": 2, "callFrame": frame("ggml_vec_dot_q8_0_q8_0", True), "parent": 1},
                                     {"id": 3, "callFrame": frame("(idle)")}], "samples": [2, 2, 3]},
            "timeDeltas": [0, 100, 100]}}},
        {"name": "ProfileChunk", "pid": 1, "tid": 7, "id": "0x1", "args": {"data": {
            "cpuProfile": {"nodes": [{"id": 4, "callFrame": frame("ggml_vec_dot_f16", True), "parent": 1}], "samples": [4]}, "timeDeltas": [50]}}},
        {"name": "ProfileChunk", "pid": 1, "tid": 9, "id": "0x2", "args": {"data": {
            "cpuProfile": {"nodes": [{"id": 1, "callFrame": frame("render")}], "samples": [1, 1]}, "timeDeltas": [0, 30]}}},
        {"name": "ThreadName", "pid": 1, "tid": 7},
    ]
    times = profile_prompt.self_times(events)
    # each chunk's samples take the delta that follows them; the last of a chunk gets 0
    assert times["total_us"]["ggml_vec_dot_q8_0_q8_0"] == 200 and times["total_us"]["(idle)"] == 0
    assert times["total_us"]["render"] == 30
    assert times["engine_busy_us"] == 200  # only the thread that ran wasm, idle left out
    assert times["threads"]["1:7"] == {"busy_us": 200, "wasm_us": 200, "engine": True}
    assert times["threads"]["1:9"]["engine"] is False
    text = profile_prompt.table("prompt", times, 5, {"prompt_n": 790, "prompt_per_second": 40.0, "predicted_n": 1, "predicted_per_second": 0})
    assert "| `ggml_vec_dot_q8_0_q8_0` | 0 | 100.0 % |" in text and "790 tokens at 40.0 tok/s" in text and "(idle)" not in text
    assert "threads running wasm: 1 (0.0 s in wasm)" in text


def test_a_third_agent_with_other_instructions_gets_its_own_line_without_a_goal():
    # instructions last: the third agent reads only its instructions and the task (cached 390 of 431)
    loads = [{**x, "other": agent(2100, 900, [[436, 390, 40], [470, 460, 20]])} for x in LOADS]
    f = first_answer.figures(loads)
    assert f["other"]["first_processed_tokens"]["median"] == 46 and f["other"]["first_cached_tokens"]["median"] == 390
    cold, warm, other = first_answer.rows({"figures": {"aerix-general-q8_0.gguf page": f}})
    assert other[0] == "P10 aerix-general-q8_0.gguf page other" and other[2] == "—" and other[3] == "2100"
    assert "other instructions" in other[1] and "processed 46 of 436 prompt tokens (390 from the cache)" in other[5]
    assert "other" not in first_answer.figures(LOADS)  # results from before the third agent: two lines, as they were


def test_a_prefilled_cold_agent_says_so_and_how_long_the_prefill_took():
    loads = [{**x, "cold": {**x["cold"], "prefillMs": 9000.0 + i, "prefill": {"promptTokens": 410}}} for i, x in enumerate(LOADS)]
    f = first_answer.figures(loads)
    assert f["cold"]["prefill_ms"]["median"] == 9001 and f["warm"]["prefill_ms"] is None
    cold, warm = first_answer.rows({"figures": {"m.gguf page": f}})
    assert cold[1].endswith("new page, first agent, prefilled") and "after agent.prefill() of 9.0 s before the send" in cold[5]
    assert "prefill" not in warm[5]
