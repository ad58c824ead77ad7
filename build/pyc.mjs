// Compile the pure-Python files of wheels to bytecode for Pyodide's own Python (3.14), under
// Node, offline: the page then imports them without compiling (bench/README.md, P4: imports).
//
//   node build/pyc.mjs OUT_DIR WHEEL...
//
// Each WHEEL is written to OUT_DIR under the same name with `__pycache__/*.cpython-314.pyc`
// beside its modules, listed in its RECORD. The .pyc are "unchecked-hash" (PEP 552): Python uses
// them without looking at the source's time stamp, which a wheel's unpacking does not keep. The
// sources stay (tracebacks, inspect). Entries keep the wheel's order and a fixed date, so the
// same input gives the same bytes. build/site.py runs this for the page's wheels.

import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const [out, ...wheels] = process.argv.slice(2);
if (!out || wheels.length === 0) {
  process.stderr.write("usage: node build/pyc.mjs OUT_DIR WHEEL...\n");
  process.exit(2);
}
globalThis.fetch = () => Promise.reject(new Error("build/pyc.mjs makes no network request"));

const { loadPyodide } = await import(join(REPO, "node_modules/pyodide/pyodide.mjs"));
const pyodide = await loadPyodide({ indexURL: join(REPO, "node_modules/pyodide/"), stdout: () => {}, stderr: (m) => process.stderr.write(`${m}\n`) });

const COMPILE = `
import base64, hashlib, importlib.util, io, sys, zipfile
from importlib._bootstrap_external import _code_to_hash_pyc  # what py_compile uses for hash-based pycs
from pathlib import PurePosixPath

def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()

def compiled(wheel):
    src = zipfile.ZipFile(io.BytesIO(wheel.to_bytes()))  # a Uint8Array from JavaScript
    names = src.namelist()
    record = next(n for n in names if n.endswith(".dist-info/RECORD") and n.count("/") == 1)
    added = {}
    for name in names:
        if not name.endswith(".py") or ".dist-info/" in name or ".data/" in name:
            continue
        path = PurePosixPath(name)
        source = src.read(name)
        code = compile(source, name, "exec", dont_inherit=True)
        pyc = _code_to_hash_pyc(code, importlib.util.source_hash(source), checked=False)
        added[str(path.parent / "__pycache__" / f"{path.stem}.{sys.implementation.cache_tag}.pyc")] = bytes(pyc)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == record:
                continue
            dst.writestr(info, src.read(info.filename))
        for name, data in added.items():
            dst.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
        lines = src.read(record).decode().splitlines()
        lines += [f"{name},{record_hash(data)},{len(data)}" for name, data in added.items()]
        rec = zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0))
        dst.writestr(rec, "\\n".join(lines) + "\\n", zipfile.ZIP_DEFLATED)
    return buf.getvalue(), len(added)
`;
pyodide.runPython(COMPILE);
const compiled = pyodide.globals.get("compiled");
const tag = pyodide.runPython("import sys; sys.implementation.cache_tag");
for (const wheel of wheels) {
  try {
    const [bytes, count] = compiled(new Uint8Array(readFileSync(wheel))).toJs();
    writeFileSync(join(out, basename(wheel)), bytes);
    process.stdout.write(`pyc: ${basename(wheel)}: ${count} modules compiled for ${tag}\n`);
  } catch (error) {
    // the message only: Node would print the offending line of pyodide.asm.mjs, 1.2 MB of it
    process.stderr.write(`pyc: ${basename(wheel)}: ${error.message}\n`);
    process.exit(1);
  }
}
