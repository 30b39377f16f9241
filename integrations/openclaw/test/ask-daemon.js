// The plugin's tools against a running engram-md daemon, as OpenClaw would call them; prints
// what they answered as one JSON object. Usage: node test/ask-daemon.js STATE_DIR QUERY
// (run by tests/test_openclaw_plugin.py against the real daemon).

import plugin from "../index.js";

const [stateDir, query] = process.argv.slice(2);
const tools = {};
const warnings = [];
plugin.register({
  pluginConfig: { stateDir, timeoutMs: 30000 },
  logger: { warn: (message) => warnings.push(message) },
  on() {},
  registerTool: (tool) => (tools[tool.name] = tool),
});
const search = await tools.memory_search.execute("1", { query });
const id = search.details.memories[0]?.id;
const got = id ? await tools.memory_get.execute("2", { id }) : null;
const missing = await tools.memory_get.execute("3", { id: "preference-19700101-000000-00000000" });
console.log(
  JSON.stringify({ search: search.content[0].text, got: got?.details, missing: missing.details, warnings }),
);
