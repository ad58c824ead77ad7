// Run the unit tests inside Pyodide under Node, offline, against the wheels the site ships.
//
//   node tests/pyodide/run_pytest.mjs [--root DIR] [pytest args...]
//
// Needs `python -m build.site` first. DIR (default: this repository) is the project whose
// pyproject.toml and tests/ are copied into Pyodide's in-memory file system; pytest runs
// there with the same arguments as on CPython (default: the `testpaths` of pyproject.toml).
// aerix itself is imported from its wheel, not from py/ (a wheel older than py/ is refused).
// asyncio.run cannot block here (no JSPI in Node 20): conftest.py brings its own loop.
// Exit status: pytest's, except that "no tests ran" (5) becomes 1; 2 when the run could not start.
// AERIX_PYODIDE_VERBOSE=1 shows Pyodide's loading messages.

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SITE = join(REPO, "build/site/");
const LOCK = join(SITE, "pyodide-lock-test.json");
const PACKAGES = ["aerix", "pytest", "hypothesis"];
const WORKDIR = "/project"; // cwd inside Pyodide: the copy of the project
const SKIP = new Set(["__pycache__", ".pytest_cache", ".hypothesis", "node_modules"]);
const verbose = !!process.env.AERIX_PYODIDE_VERBOSE;

function fail(message) {
  // Print a message, not an uncaught error: Node would echo the offending line of
  // pyodide.asm.mjs, which is one 1.2 MB minified line.
  process.stderr.write(`run_pytest: ${message}\n`);
  process.exit(2);
}

// Offline, and provably so: a wheel missing from packageBaseUrl would otherwise be
// fetched from the jsDelivr CDN without a word.
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const url = String(input?.url ?? input);
  if (/^https?:/i.test(url)) fail(`refused a network request: ${url}`);
  return realFetch(input, init);
};

function parseArgs(argv) {
  let root = REPO;
  const rest = [...argv];
  if (rest[0] === "--root") {
    root = resolve(rest[1] ?? fail("--root needs a folder"));
    rest.splice(0, 2);
  }
  return { root, pytestArgs: rest };
}

// Copy pyproject.toml (pytest's config) and tests/ into the in-memory FS. A copy, not a
// NODEFS mount: pytest's cache, hypothesis' database and bytecode stay out of the repo.
function copyProject(FS, root) {
  const copy = (src, dst) => {
    if (statSync(src).isDirectory()) {
      FS.mkdirTree(dst);
      for (const name of readdirSync(src)) if (!SKIP.has(name)) copy(join(src, name), `${dst}/${name}`);
    } else {
      FS.writeFile(dst, readFileSync(src));
    }
  };
  FS.mkdirTree(WORKDIR);
  for (const name of ["pyproject.toml", "tests"]) {
    if (existsSync(join(root, name))) copy(join(root, name), `${WORKDIR}/${name}`);
  }
}

// loadPackage resolves even when a wheel failed to load: check that everything arrived.
async function loadPackages(pyodide, names) {
  const errors = [];
  const started = performance.now();
  await pyodide.loadPackage(names, {
    messageCallback: (m) => verbose && process.stderr.write(`pyodide: ${m}\n`),
    errorCallback: (m) => errors.push(m),
  });
  const lock = JSON.parse(readFileSync(LOCK, "utf8")).packages;
  const wanted = new Set();
  const visit = (name) => {
    if (wanted.has(name)) return;
    wanted.add(name);
    for (const dep of lock[name]?.depends ?? []) visit(dep);
  };
  names.forEach(visit);
  const missing = [...wanted].filter((name) => !(name in pyodide.loadedPackages));
  if (errors.length || missing.length) {
    fail(`loading packages failed${missing.length ? ` (missing: ${missing.join(", ")})` : ""}\n${errors.join("\n")}`);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(`run_pytest: ${wanted.size} packages in ${seconds} s\n`);
}

// Testing a stale wheel would pass or fail for the wrong reasons.
function checkWheelIsFresh() {
  const newest = (path) =>
    statSync(path).isDirectory()
      ? Math.max(0, ...readdirSync(path).filter((n) => !SKIP.has(n) && !n.endsWith(".egg-info")).map((n) => newest(join(path, n))))
      : statSync(path).mtimeMs;
  const wheels = readdirSync(join(SITE, "wheels")).filter((n) => n.startsWith("aerix-"));
  const built = Math.max(0, ...wheels.map((n) => statSync(join(SITE, "wheels", n)).mtimeMs));
  if (Math.max(newest(join(REPO, "py")), newest(join(REPO, "pyproject.toml"))) > built) {
    fail("the aerix wheel is older than py/: run `python -m build.site`");
  }
}

async function main() {
  const { root, pytestArgs } = parseArgs(process.argv.slice(2));
  if (!existsSync(LOCK)) fail(`${relative(REPO, LOCK)} is missing: run \`python -m build.site\``);
  checkWheelIsFresh();

  const started = performance.now();
  const { loadPyodide } = await import(join(SITE, "pyodide/pyodide.mjs"));
  const pyodide = await loadPyodide({
    indexURL: join(SITE, "pyodide/"),
    lockFileURL: LOCK,
    packageBaseUrl: SITE, // under Node the CDN is the default, not the lock file's folder
  });
  // Raw bytes, unbuffered: pytest's progress dots arrive as it runs, not line by line.
  const write = (stream) => ({ write: (buf) => (stream.write(Buffer.from(buf)), buf.length) });
  pyodide.setStdout(write(process.stdout));
  pyodide.setStderr(write(process.stderr));
  process.stderr.write(`run_pytest: Pyodide ${pyodide.version} in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

  await loadPackages(pyodide, PACKAGES);
  copyProject(pyodide.FS, root);

  pyodide.globals.set("pytest_args", pyodide.toPy(pytestArgs));
  const code = pyodide.runPython(`
import os, sys
sys.dont_write_bytecode = True
os.chdir(${JSON.stringify(WORKDIR)})
import pytest
int(pytest.main(list(pytest_args)))
`);
  if (code === 5) process.stderr.write("run_pytest: no tests ran\n");
  const status = code === 5 ? 1 : code;
  process.stdout.write("", () => process.exit(status)); // let piped output drain first
}

main().catch((error) => fail(error?.stack ?? String(error)));
