"""The fuzzer: seeded, bounded random cases over whole runs, checked against aerix's promises.

    python -m tests.fuzz                          # every area, $FUZZ_RUNS (default 10000) cases each
    python -m tests.fuzz --area store --runs 500  # one area
    python -m tests.fuzz --area sse --seed 204 --runs 1 -v   # one case again, with its events

``make fuzz`` runs it (``FUZZ_RUNS=`` sets the cases per area); ``tests/unit/test_fuzz.py`` runs
a few cases of each area in ``make test``. The areas, one module each:

    model    model_output.py     whole runs on a scripted model that writes anything
    engine   engine_protocol.py  a custom model that breaks the model protocol
    tools    tool_faults.py      tools and hooks that fail; effects whose bookkeeping fails
    hooks    hung_callbacks.py   hooks, trust flags and tool policies that hang, raise, answer junk
    store    store_faults.py     a store that fails, loses writes, corrupts records; then recovers
    races    races.py            executors and recover() racing over one run through a slow store
    sse      sse_bodies.py       OpenAIModel over a MockTransport answering any bytes
    sub-agents  sub_agents.py    agents nested as tools: taint never lost, effects once, crashes

The promises each run is checked against are in ``harness.py`` (one ending, nothing escapes,
the agent free afterwards, no key anywhere, no forged turn); ``draw.py`` draws the awkward
inputs, ``fixtures.py`` holds the agents' tools. Case ``i`` of an area is drawn from
``random.Random(f"{area}:{seed + i}")``: a seed names one case on every machine, and a failure
is printed with its seed and its inputs. Failures exit 1.
"""
