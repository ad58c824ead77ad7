// The demo's desks and the two ways it picks one for a prompt (demo.mjs draws what they did).
//
// Two desks, two agents (travel and notes), each with the demo's five tools and the instructions
// the bundled model was trained on: their system message is exactly the trained one (a desk has a
// `name` and a `description`, which the system message does not show, and no handoffs of its own).
// - Routing by scores (the `#route` box): the model scores the desks for the prompt
//   (agent.choose) and the prompt goes to the better one, which keeps its own chat.
// - Handoffs (the `#handoff` box): a front desk, an agent with no tools of its own and
//   `handoffs: [travel desk, notes desk]`, receives the prompt and calls `handoff_travel` or
//   `handoff_notes`; the run goes on under that desk, in the front desk's conversation.
// The bundled model was trained on neither: not to score desks, and never on the front desk's
// system message, so which desk it picks is not to be relied on; the mechanism is what the demo
// shows.
import { INSTRUCTIONS } from "./demo-tools.mjs";

/** The desks, as the routing box offers them to agent.choose. */
export const DESKS = { travel: "the travel desk: weather, local time, unit conversion", notes: "the notes desk: saving notes and arithmetic" };
/** What each desk is for, as its handoff tool tells the front desk. */
const DESCRIPTIONS = { travel: "Weather, local time and unit conversion in a city.", notes: "Saving notes and arithmetic." };
const FRONT_DESK = "You are the front desk. You answer nothing yourself: pass each request to the desk that handles it, with its handoff tool.";
const LIMITS = { turns: 6, retries: 2, maxTokens: 256 };
const GREEDY = { temperature: 0 }; // the bundled model is small: greedy is what its eval measures
const TRACE = { keep: true }; // each run's spans kept in memory, for the Trace panel (demo-trace.mjs)

/**
 * The demo's agents, made once each by `aerix` (one per desk and setting of the constraint box).
 * @param {any} aerix the booted runtime (aerix.mjs's boot)
 * @param {{tools: object[], channels: object[], hooks: object, problems: string[]}} page the
 *   tools (with their trust flags), the page's channels and hooks, where to say what failed
 */
export function desks(aerix, { tools, channels, hooks, problems }) {
  const agents = new Map();
  const once = (key, make) => (agents.has(key) ? agents.get(key) : agents.set(key, make()).get(key));

  // One durable agent per desk and setting of the constraint box; runs live in IndexedDB, so a
  // reload can resume them, and so does each conversation (conversationId): a reload reopens it.
  // A long chat is compacted into a digest (the bundled model was not trained to summarise). The
  // approval box is read at each call (hooks), so a waiting run keeps its gate.
  // `more`: the tools of an MCP server the page connected to (demo-mcp.mjs), beside the desk's
  // five, in an agent (and a conversation) of their own, keyed by the connection.
  /**
   * @param {boolean} constrain
   * @param {string} [desk]
   * @param {{key: string, tools: object[]}|null} [more]
   */
  function agentFor(constrain, desk = "travel", more = null) {
    const key = `${desk}:${constrain ? "constrained" : "free"}${more ? `:${more.key}` : ""}`;
    return once(key, () =>
      aerix.agent({
        name: desk,
        description: DESCRIPTIONS[desk],
        instructions: INSTRUCTIONS,
        tools: more ? [...tools, ...more.tools] : tools,
        limits: LIMITS,
        generation: GREEDY,
        constrain,
        durable: true,
        conversationId: `demo-${key}`,
        compaction: "digest",
        channels,
        hooks,
        tracer: TRACE,
      }),
    );
  }

  // The front desk: durable (a desk's call that waits for approval waits in its run), with no
  // conversationId: each prompt starts at the front desk again (demo.mjs resets its chat before
  // each one), since the box says the front desk hands *each* prompt over; a chat that stayed with
  // the desk it was handed to would skip the front desk from the second prompt on.
  function frontDesk(constrain) {
    return once(`front:${constrain ? "constrained" : "free"}`, () =>
      aerix.agent({
        name: "front_desk",
        instructions: FRONT_DESK,
        handoffs: [agentFor(constrain, "travel"), agentFor(constrain, "notes")],
        limits: LIMITS,
        generation: GREEDY,
        constrain,
        durable: true,
        channels,
        tracer: TRACE,
      }),
    );
  }

  /** The desk for a prompt by the model's scores: `{desk, scores}`, or the travel desk if it fails. */
  async function route(prompt) {
    const names = Object.keys(DESKS);
    try {
      const scores = await agentFor(true).choose(prompt, Object.values(DESKS));
      const best = Object.entries(scores).sort((a, b) => b[1] - a[1])[0][0];
      return { desk: names[Object.values(DESKS).indexOf(best)], scores };
    } catch (e) {
      problems.push(`Routing failed (${e.message}); the travel desk takes it.`);
      return { desk: "travel", scores: null };
    }
  }

  return { agentFor, frontDesk, route };
}
