/**
 * A chat store for UIs: one agent's conversation as state that any framework can bind.
 *
 *   import { boot, chat } from "./aerix.mjs";
 *   const store = chat(ai.agent({ tools }));
 *   const unsubscribe = store.subscribe((state) => render(state));   // after each change
 *   await store.send("Umbrella for Lisbon?");   // resolves with the state once the run stops
 *   store.stop();                               // abort the running run (it ends `abort`)
 *   await store.approve(approvalId, true);      // answer a waiting durable run and continue it
 *   await store.reset();                        // forget the conversation (agent.reset() too)
 *
 * The state is derived from the agent's events by one pure function, `reduce(state, event)`.
 * Each change makes a new frozen object (and new arrays where they changed), so a framework may
 * compare by reference; an event that changes nothing (a `text` delta) gives the same object.
 *
 *   messages   [{role: "user"|"assistant", text, output?, runId?}]: the conversation as a person
 *              reads it; `output` is a structured answer, `runId` a durable run's id when known
 *   answer     the answer of the running run as it streams (its `final_delta` texts joined), ""
 *              before it starts and once it is in `messages`; what streamed before an `end` stays
 *   output     with structured output (`output:`), the answer object of the running run as it
 *              streams: the latest `output_delta`'s `output` (each is the whole object so far,
 *              its strings and numbers complete), null before it starts, after a `retry` and
 *              once it is in `messages`; what streamed before an `end` stays
 *   status     "idle" | "running" | "waiting" (for an approval) | "error" (an `end` other than
 *              `abort`, or a failure thrown by the agent: then `error`)
 *   ending     the run's `final` or `end` event, or null
 *   error      {name, kind, reason, message} of a failure the agent threw (`busy`...), or null
 *   thought    the latest turn's thought, or null
 *   calls      [{id, tool, input, result?, error?, subagent?}]: this run's calls, announced by
 *              their turn, then filled in by their `result`; `subagent`, for a call of an agent
 *              as a tool, is its sub-run as a state of its own, reduced from the `subagent`
 *              events of that call (their inner events) as they come: `agent` (its name),
 *              `status`, `thought`, `calls` (a sub-run's own sub-runs nest again), `answer`,
 *              `ending`, `usage`, `artifacts`... (its usage is not in the run's `usage`)
 *   approvals  [{runId, approvalId, title, body}]: pending approvals, until answered
 *   usage      {promptTokens, completionTokens, cachedTokens}, summed over the conversation
 *   taint      the conversation's `taint` event, or null
 *   artifacts  [{id, mediaType, filename, size, callId}]: this run's files (`callId` null for
 *              an attachment)
 *   runId      the run's durable id once known (sent with `{runId}`, or told by `waiting`)
 *   compactions how many times the conversation's oldest turns were compacted into a summary
 *              (`compact` events: the model sees the summary, `messages` still shows them all)
 *
 * `answer`, `output`, `ending`, `error`, `thought`, `calls`, `artifacts` and `runId` belong to the run:
 * they start again at each `send`. `messages`, `usage`, `taint`, `approvals` and `compactions` last
until `reset`.
 *
 * Besides the agent's events, `reduce` takes the store's own actions, typed "chat.*":
 * `chat.send {text, runId?}` (a prompt is sent), `chat.recovered {runId, prompt}` (a run found
 * waiting after a reload), `chat.reopened {messages}` (a kept conversation is back, `reopen()`), `chat.approve {approvalId}` and `chat.resume {runId, prompt?}` (a run
 * goes on), `chat.error {error, refused?}` (`refused`: the agent refused a sent prompt before its
 * run began, an `options` error such as a prompt too long for the context or `busy`: the prompt
 * never entered the conversation, so it leaves `messages` and stays in `error.prompt`),
 * `chat.done` (the run's events stopped) and `chat.reset`.
 *
 * @module chat
 */

const freeze = Object.freeze;

const NO_USAGE = freeze({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 });

/** The state of a store with nothing sent. */
export const initialState = freeze({
  messages: freeze([]),
  answer: "",
  output: null,
  status: "idle",
  ending: null,
  error: null,
  thought: null,
  calls: freeze([]),
  approvals: freeze([]),
  usage: NO_USAGE,
  taint: null,
  artifacts: freeze([]),
  runId: null,
  compactions: 0,
});

const RUN = { answer: "", output: null, ending: null, error: null, thought: null, calls: freeze([]), artifacts: freeze([]) };

const next = (state, changes) => freeze({ ...state, ...changes });
const append = (list, item) => freeze([...list, freeze(item)]);
const replace = (list, i, item) => freeze(list.map((old, j) => (j === i ? freeze(item) : old)));
const message = (role, text, extra) => {
  const m = { role, text };
  for (const [key, value] of Object.entries(extra)) if (value !== null && value !== undefined) m[key] = value;
  return m;
};

/**
 * A run's prompt in the messages: the last message when it is that prompt already (a reopened
 * conversation holds the prompt of a run a reload left waiting or interrupted), else appended.
 */
function withPrompt(state, text, runId) {
  const last = state.messages.length - 1;
  const prompt = state.messages[last];
  if (prompt?.role === "user" && prompt.text === text) return replace(state.messages, last, message("user", text, { runId }));
  return append(state.messages, message("user", text, { runId }));
}

/** A durable run's id, once the state learns it: the prompt that started the run gets it too. */
function withRunId(state, runId) {
  if (!runId || state.runId === runId) return state;
  const last = state.messages.length - 1;
  const prompt = state.messages[last];
  const messages = prompt?.role === "user" && !prompt.runId ? replace(state.messages, last, { ...prompt, runId }) : state.messages;
  return next(state, { runId, messages });
}

/**
 * A call as the state keeps it: the event's fields, then what its result said.
 * @param {readonly object[]} calls
 * @param {{id: string, tool: string, input?: unknown}} call
 * @param {object} result
 */
function upsertCall(calls, { id, tool, input }, result) {
  const i = calls.findIndex((c) => c.id === id);
  const old = i < 0 ? { id, tool, input: input ?? null } : calls[i];
  const call = { ...old, ...(input !== undefined ? { input } : {}), ...result };
  if (i < 0) return append(calls, call);
  return replace(calls, i, call);
}

/**
 * A sub-run's event (`subagent {callId, tool, agent, event}`): reduced into the calling call's
 * `subagent` state. A sub-run that was waiting goes on with its next event (its approval was the
 * run's, answered there).
 */
function subagent(s, ev) {
  const i = s.calls.findIndex((c) => c.id === ev.callId);
  const call = i < 0 ? { id: ev.callId, tool: ev.tool, input: null } : s.calls[i];
  let sub = call.subagent ?? next(initialState, { agent: ev.agent, status: "running" });
  if (sub.status === "waiting") sub = next(sub, { status: "running", approvals: freeze([]) });
  const after = reduce(sub, ev.event);
  if (after === call.subagent) return s;
  const updated = { ...call, subagent: after };
  return next(s, { calls: i < 0 ? append(s.calls, updated) : replace(s.calls, i, updated) });
}

const STEPS = {
  // -- the store's own actions --
  "chat.send": (s, a) => next(s, { ...RUN, status: "running", runId: a.runId ?? null, messages: append(s.messages, message("user", a.text, { runId: a.runId })) }),
  "chat.recovered": (s, a) => next(s, { ...RUN, status: "idle", runId: a.runId, messages: withPrompt(s, a.prompt, a.runId) }),
  "chat.approve": (s, a) => {
    const approval = s.approvals.find((x) => x.approvalId === a.approvalId);
    const approvals = freeze(s.approvals.filter((x) => x !== approval));
    return next(s, { status: "running", ending: null, error: null, approvals, runId: approval?.runId ?? s.runId });
  },
  "chat.resume": (s, a) => {
    const messages = a.prompt == null ? s.messages : withPrompt(s, a.prompt, a.runId);
    return next(s, { ...(a.prompt == null ? {} : RUN), messages, status: "running", ending: null, error: null, runId: a.runId });
  },
  "chat.error": (s, a) => {
    const { name = "Error", kind = null, reason = null, message = String(a.error) } = a.error ?? {};
    const prompt = a.refused ? s.messages.at(-1) : undefined;
    if (prompt?.role !== "user") return next(s, { status: "error", error: freeze({ name, kind, reason, message }) });
    const messages = freeze(s.messages.slice(0, -1)); // the agent never took it (chat.send added it)
    return next(s, { status: "error", messages, error: freeze({ name, kind, reason, message, prompt: prompt.text }) });
  },
  "chat.reopened": (s, a) => next(s, { messages: freeze(a.messages.map((m) => freeze(message(m.role, m.text, { output: m.output })))) }),
  "chat.done": (s) => (s.status === "running" ? next(s, { status: "idle" }) : s),
  "chat.reset": () => initialState,

  // -- the agent's events --
  final_delta: (s, ev) => next(s, { answer: s.answer + ev.text }),
  output_delta: (s, ev) => next(s, { output: ev.output }),
  // the refused turn's answer (text or object) is not the answer: the next generation starts over
  retry: (s) => (s.answer || s.output !== null ? next(s, { answer: "", output: null }) : s),
  usage: (s, ev) =>
    next(s, {
      usage: freeze({
        promptTokens: s.usage.promptTokens + (ev.promptTokens ?? 0),
        completionTokens: s.usage.completionTokens + (ev.completionTokens ?? 0),
        cachedTokens: s.usage.cachedTokens + (ev.cachedTokens ?? 0),
      }),
    }),
  turn: (s, ev) => next(s, { thought: ev.thought ?? null, calls: (ev.calls ?? []).reduce((calls, c) => upsertCall(calls, c, {}), s.calls) }),
  call: (s, ev) => next(s, { calls: upsertCall(s.calls, ev, {}) }),
  result: (s, ev) => next(s, { calls: upsertCall(s.calls, { id: ev.id, tool: ev.tool }, { result: ev.text, error: !!ev.error }) }),
  artifact: (s, ev) => {
    const running = s.calls.find((c) => !("result" in c)); // results come in call order (parallel calls too), each after its artifacts
    const { id, mediaType, filename = null, size } = ev;
    return next(s, { artifacts: append(s.artifacts, { id, mediaType, filename, size, callId: running?.id ?? null }) });
  },
  subagent,
  taint: (s, ev) => next(s, { taint: freeze({ ...ev }) }),
  compact: (s) => next(s, { compactions: s.compactions + 1 }),
  waiting: (s, ev) => {
    const known = withRunId(s, ev.runId);
    const { runId, approvalId, title, body = null } = ev;
    const approvals = known.approvals.some((a) => a.approvalId === approvalId) ? known.approvals : append(known.approvals, { runId, approvalId, title, body });
    return next(known, { status: "waiting", approvals });
  },
  interrupted: (s, ev) => next(withRunId(s, ev.runId), { status: "idle" }),
  final: (s, ev) =>
    next(s, {
      status: "idle",
      answer: "",
      output: null,
      ending: freeze({ ...ev }),
      thought: ev.thought ?? s.thought,
      messages: append(s.messages, message("assistant", ev.text, { output: ev.output, runId: s.runId })),
    }),
  end: (s, ev) => next(s, { status: ev.reason === "abort" ? "idle" : "error", ending: freeze({ ...ev }) }),
};

/**
 * The state after one event (an agent's event, camelCase keys as aerix.mjs gives them) or one of
 * the store's "chat.*" actions. Pure: `state` is not changed; an unknown type (or a `text`
 * delta) returns `state` itself.
 */
export function reduce(state, event) {
  const step = STEPS[event?.type];
  return step ? step(state, event) : state;
}

/** A failure the agent threw, as plain data for the state. */
function failure(e) {
  return { name: e?.name ?? "Error", kind: e?.kind ?? null, reason: e?.reason ?? null, message: String(e?.message ?? e) };
}

function busy() {
  return Object.assign(new Error("this chat is running a run: stop it, or wait for it to end"), { name: "AerixError", kind: "busy", reason: null });
}

/**
 * What one store keeps besides its state's value: its subscribers, the recovered runs' prompts,
 * the run it reads.
 * @typedef {object} Store
 * @property {any} agent
 * @property {((event: object) => void)|undefined} onEvent
 * @property {any} state
 * @property {Set<(state: any) => void>} listeners
 * @property {Map<string, string>} prompts recovered runs: id -> prompt, for resume
 * @property {AbortController|null} controller
 * @property {Promise<any>|null} running the promise of the run whose events are being read
 */

/**
 * A store over one agent (from `ai.agent(...)`).
 *
 * @param {object} agent an agent of aerix.mjs
 * @param {object} [options]
 * @param {(event: object) => void} [options.onEvent] sees each of the agent's events, before it
 *   is reduced (a log, a transcript)
 */
export function chat(agent, { onEvent } = {}) {
  /** @type {Store} */
  const c = { agent, onEvent, state: initialState, listeners: new Set(), prompts: new Map(), controller: null, running: null };
  return {
    getState: () => c.state,
    /** Call `fn(state)` after each change; returns the function that stops it. */
    subscribe(fn) {
      c.listeners.add(fn);
      return () => c.listeners.delete(fn);
    },
    /**
     * Send a prompt: a new run of the agent (`options` as `agent.run` takes them: `signal`,
     * `attachments`, `invoker`, `runId`, `idempotencyKey`, `source`). Resolves with the state
     * once its events stop (its failures are in the state); rejects `busy` while a run goes on.
     */
    send(/** @type {string} */ prompt, /** @type {import("./runtime.mjs").RunOptions} */ { signal, ...options } = {}) {
      if (c.running) return Promise.reject(busy());
      dispatch(c, { type: "chat.send", text: String(prompt), runId: options.runId ?? null });
      return consume(c, (own) => agent.run(prompt, { ...options, signal: own }), signal, true);
    },
    /** Abort the running run: it ends `end` reason `abort`. */
    stop() {
      c.controller?.abort();
    },
    /**
     * Answer a pending approval (`yes`: approved) and continue its durable run; `reason` goes
     * with a denial. `options.approver` says who answers. Resolves like `send`.
     */
    approve: (approvalId, yes = true, reason = null, options = {}) => approve(c, approvalId, yes, reason, options),
    /**
     * After a reload: the agent's `recover()`. Runs waiting for an approval join the state (their
     * prompt as a message, their approval pending); all are returned, as `agent.recover()` gives
     * them, so a UI can offer to `resume` the interrupted ones.
     */
    recover: () => recover(c),
    /** Continue a durable run from its last checkpoint (one `recover` returned). Resolves like `send`. */
    resume(/** @type {string} */ runId, /** @type {{signal?: AbortSignal}} */ { signal } = {}) {
      if (c.running) return Promise.reject(busy());
      dispatch(c, { type: "chat.resume", runId, prompt: c.prompts.get(runId) ?? null });
      c.prompts.delete(runId);
      return consume(c, (own) => agent.resume(runId, { signal: own }), signal);
    },
    /**
     * After a reload: the agent's kept conversation (an agent with `conversationId` and a store)
     * back in `messages`, as a person reads it (prompts and answers). Resolves with the state.
     */
    async reopen() {
      if (c.running) throw busy();
      await agent.reopen();
      dispatch(c, { type: "chat.reopened", messages: await agent.transcript() });
      return c.state;
    },
    /** Stop the running run, forget the conversation (the agent's too) and start again. */
    async reset() {
      c.controller?.abort();
      await c.running;
      await agent.reset(); // a promise in worker mode
      c.prompts.clear();
      dispatch(c, { type: "chat.reset" });
    },
    /** The agent this store reads. */
    agent,
  };
}

/**
 * Reduce one action into the store's state and tell its subscribers.
 * @param {Store} c
 * @param {{type: string, [key: string]: any}} action
 */
function dispatch(c, action) {
  const after = reduce(c.state, action);
  if (after === c.state) return;
  c.state = after;
  for (const fn of [...c.listeners]) {
    try {
      fn(c.state);
    } catch (e) {
      // reported, without stopping the run or the other subscribers
      if (globalThis.reportError) globalThis.reportError(e);
      else console.error(e);
    }
  }
}

/**
 * Read one run's events into the state; resolves with the state when they stop.
 * @param {Store} c
 * @param {(signal: AbortSignal) => AsyncIterable<any>} open
 * @param {AbortSignal} [signal]
 * @param {boolean} [sent] a `send`: a failure before its first event is the prompt refused
 */
function consume(c, open, signal, sent = false) {
  const own = (c.controller = new AbortController());
  const follow = () => own.abort(signal.reason);
  if (signal?.aborted) own.abort(signal.reason);
  else signal?.addEventListener?.("abort", follow, { once: true });
  c.running = (async () => {
    await null; // the body after this assignment: a run that throws at once must not leave c.running set
    let seen = false;
    try {
      for await (const ev of open(own.signal)) {
        seen = true;
        c.onEvent?.(ev);
        dispatch(c, ev);
      }
    } catch (e) {
      dispatch(c, { type: "chat.error", error: failure(e), refused: sent && !seen });
    } finally {
      signal?.removeEventListener?.("abort", follow);
      if (c.controller === own) c.controller = null;
      c.running = null;
      dispatch(c, { type: "chat.done" });
    }
    return c.state;
  })();
  return c.running;
}

/**
 * The store's `approve`.
 * @param {Store} c
 * @param {string} approvalId
 * @param {boolean} yes
 * @param {string|null} reason
 * @param {{approver?: unknown, signal?: AbortSignal}} options
 */
function approve(c, approvalId, yes, reason, { approver, signal } = {}) {
  const approval = c.state.approvals.find((a) => a.approvalId === approvalId);
  if (!approval) return Promise.reject(Object.assign(new Error(`no pending approval ${approvalId}`), { name: "AerixError", kind: "options", reason: null }));
  if (c.running && c.state.status === "running") return Promise.reject(busy());
  const go = () => {
    if (c.running) return Promise.reject(busy());
    dispatch(c, { type: "chat.approve", approvalId });
    return consume(c, (own) => c.agent.approve(approval.runId, approvalId, !!yes, { reason: reason ?? undefined, signal: own, approver }), signal);
  };
  // the waiting run's events are closing: answer once they have
  return c.running ? c.running.then(go) : go();
}

/**
 * The store's `recover`.
 * @param {Store} c
 */
async function recover(c) {
  const runs = await c.agent.recover();
  for (const run of runs) {
    c.prompts.set(run.id, run.prompt);
    if (!run.approval) continue;
    dispatch(c, { type: "chat.recovered", runId: run.id, prompt: run.prompt });
    const { id: approvalId, title, body } = run.approval;
    dispatch(c, { type: "waiting", runId: run.id, approvalId, title, body });
  }
  return runs;
}
