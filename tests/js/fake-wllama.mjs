// What the tests that drive the engine's own code under Node share (kept-models.test.mjs,
// engine-queue.test.mjs): a fake wllama module written to a folder of its own, for
// `loadEngine({wllamaBase})`, and the page globals they stand in, put back afterwards.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * `source` (an ES module exporting what wllama does) as a package in a new folder: its URL for
 * `wllamaBase`, and `remove()`.
 */
export function fakeWllama(source) {
  const dir = mkdtempSync(join(tmpdir(), "fake-wllama-"));
  writeFileSync(join(dir, "package.json"), '{"type": "module"}');
  writeFileSync(join(dir, "index.js"), source);
  return { base: pathToFileURL(dir).href + "/", remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The globals `names` as they are now; `restore()` puts each back (or deletes one there was not). */
export function savedGlobals(names) {
  const saved = Object.fromEntries(names.map((name) => [name, Object.getOwnPropertyDescriptor(globalThis, name)]));
  return {
    restore() {
      for (const [name, descriptor] of Object.entries(saved)) {
        if (descriptor) Object.defineProperty(globalThis, name, descriptor);
        else delete globalThis[name];
      }
    },
  };
}

/** Set a global as a page has it (configurable, so `restore` can undo it). */
export function defineGlobal(name, value) {
  Object.defineProperty(globalThis, name, { value, configurable: true, writable: true });
}
