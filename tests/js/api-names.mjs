// The public names of the JavaScript agent API, read from the code itself, as JSON on stdout, for
// tests/unit/test_api_parity.py: the handles of both modes built over fakes (fake-runtime.mjs),
// so their names are what the code gives, and the option lists the handles check options against.
import { AS_TOOL_OPTIONS, MCP_OPTIONS, RUN_OPTIONS, START_OPTIONS } from "../../web/handle.mjs";
import { pageHandle, workerSide } from "./fake-runtime.mjs";

const page = pageHandle([], "names");
const side = await workerSide();
const remote = side.agent({});
await remote.ready;
const names = (value) => Object.keys(value).sort();
process.stdout.write(
  JSON.stringify({
    page: names(page),
    worker: names(remote),
    state: names(page.state),
    workerState: names(remote.state),
    collection: names(page.state.collection("c")),
    workerCollection: names(remote.state.collection("c")),
    run: [...RUN_OPTIONS],
    start: [...START_OPTIONS],
    asTool: [...AS_TOOL_OPTIONS],
    mcpTools: [...MCP_OPTIONS],
  }),
);
side.close();
