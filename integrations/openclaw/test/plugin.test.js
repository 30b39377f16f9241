// The plugin against a stand-in daemon: recall before the prompt, the tools, and every way
// the daemon can fail, none of which may hold a prompt back.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, afterEach, before, describe, test } from "node:test";

import plugin from "../index.js";
import { renderBlock } from "../src/block.js";
import { FakeDaemon, fakeApi, memory, recallAnswer } from "./fake-daemon.js";

const UV = memory("preference-20260302-090200-768925a5", "Dana always uses uv instead of pip.", 0.81);
const TEA = memory("preference-20260302-090300-0a1b2c3d", "Dana drinks green tea.", 0.22);

/** The plugin registered against `config`: its hook, tools and recorded warnings. */
function load(config) {
  const api = fakeApi(config);
  plugin.register(api);
  return api;
}

function beforePrompt(api, event) {
  return api.hooks.get("before_prompt_build")(event, {});
}

describe("with a daemon", () => {
  const daemon = new FakeDaemon();
  before(() => daemon.start());
  after(() => daemon.stop());
  afterEach(() => {
    daemon.requests.length = 0;
    daemon.delayMs = 0;
    daemon.failWith = null;
    daemon.recall = (query) => recallAnswer(query, []);
    return daemon.advertise({});
  });

  test("registers the prompt hook, both tools and a memory capability", () => {
    const api = load({ stateDir: daemon.stateDir });
    assert.deepEqual([...api.hooks.keys()], ["before_prompt_build"]);
    assert.deepEqual([...api.tools.keys()], ["memory_search", "memory_get"]);
    assert.equal(api.capabilities.length, 1);
    const section = api.capabilities[0].promptBuilder({ availableTools: new Set(["memory_search"]) });
    assert.match(section.join("\n"), /memory_search/);
    assert.deepEqual(api.capabilities[0].promptBuilder({ availableTools: new Set() }), []);
  });

  test("recalls the current message, not the rebuilt prompt, and prepends the block", async () => {
    daemon.recall = (query) => recallAnswer(query, [UV]);
    const api = load({ stateDir: daemon.stateDir, budget: 400 });
    const result = await beforePrompt(api, {
      prompt: "[history]\nuser: hello\n[Wed 2026-03-04 09:01 GMT+1] which package manager?",
      currentUserMessage: "which package manager?",
      messages: [],
    });
    assert.deepEqual(result, {
      prependContext: "<memory>\n[PREFERENCE 2026-03-02] Dana always uses uv instead of pip.\n</memory>",
    });
    assert.equal(daemon.requests.length, 1);
    const [request] = daemon.requests;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/recall");
    assert.equal(request.headers.authorization, `Bearer ${daemon.token}`);
    assert.deepEqual(request.body, { query: "which package manager?", budget: 400 });
    assert.deepEqual(api.warnings, []);
  });

  test("a harness without currentUserMessage recalls its prompt", async () => {
    const api = load({ stateDir: daemon.stateDir });
    await beforePrompt(api, { prompt: "which package manager?", messages: [] });
    assert.equal(daemon.requests[0].body.query, "which package manager?");
    assert.equal(daemon.requests[0].body.budget, null);
  });

  test("an empty current message asks nothing", async () => {
    const api = load({ stateDir: daemon.stateDir });
    const result = await beforePrompt(api, { prompt: "older history", currentUserMessage: "", messages: [] });
    assert.equal(result, undefined);
    assert.equal(daemon.requests.length, 0);
  });

  test("a heartbeat asks nothing", async () => {
    const api = load({ stateDir: daemon.stateDir });
    const hook = api.hooks.get("before_prompt_build");
    assert.equal(
      await hook({ prompt: "Read HEARTBEAT.md if it exists.", messages: [] }, { trigger: "heartbeat" }),
      undefined,
    );
    assert.equal(daemon.requests.length, 0);
  });

  test("a recall with no memory adds no context", async () => {
    const api = load({ stateDir: daemon.stateDir });
    assert.equal(
      await beforePrompt(api, { prompt: "x", currentUserMessage: "anything new?", messages: [] }),
      undefined,
    );
    assert.equal(daemon.requests.length, 1);
  });

  test("minScore leaves weaker memories out of the block", async () => {
    daemon.recall = (query) => recallAnswer(query, [UV, TEA]);
    const api = load({ stateDir: daemon.stateDir, minScore: 0.5 });
    const result = await beforePrompt(api, {
      prompt: "x",
      currentUserMessage: "what does Dana like?",
      messages: [],
    });
    assert.equal(result.prependContext, renderBlock([UV]));
    assert.doesNotMatch(result.prependContext, /green tea/);
    daemon.recall = (query) => recallAnswer(query, [TEA]);
    assert.equal(
      await beforePrompt(api, { prompt: "x", currentUserMessage: "tea?", messages: [] }),
      undefined,
    );
  });

  test("url and token reach the daemon without a state folder", async () => {
    daemon.recall = (query) => recallAnswer(query, [UV]);
    const api = load({ url: daemon.url, token: daemon.token });
    const result = await beforePrompt(api, {
      prompt: "x",
      currentUserMessage: "package manager?",
      messages: [],
    });
    assert.match(result.prependContext, /uv instead of pip/);
  });

  test("a timeout sends the prompt without memory, in time, with one warning", async () => {
    daemon.delayMs = 1000;
    const api = load({ stateDir: daemon.stateDir, timeoutMs: 100 });
    const started = performance.now();
    const result = await beforePrompt(api, { prompt: "x", currentUserMessage: "slow?", messages: [] });
    const took = performance.now() - started;
    assert.equal(result, undefined);
    assert.ok(took < 600, `the hook took ${took} ms`);
    assert.equal(api.warnings.length, 1);
    assert.match(api.warnings[0], /did not answer within 100 ms/);
  });

  test("a 500 sends the prompt without memory, with one warning", async () => {
    daemon.failWith = 500;
    const api = load({ stateDir: daemon.stateDir });
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.deepEqual(api.warnings, [
      "engram-md: prompt sent without memory: the engram-md daemon answered 500: recall failed: index unreadable",
    ]);
  });

  test("a wrong token sends the prompt without memory, with one warning", async () => {
    await daemon.advertise({ token: "an-older-daemons-token" });
    const api = load({ stateDir: daemon.stateDir });
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.equal(api.warnings.length, 1);
    assert.match(api.warnings[0], /refused the token/);
  });

  test("an outage is warned about once, and again after a recall worked", async () => {
    daemon.failWith = 500;
    const api = load({ stateDir: daemon.stateDir });
    const ask = () => beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] });
    await ask();
    await ask();
    await ask();
    assert.equal(api.warnings.length, 1);
    daemon.failWith = null;
    await ask();
    daemon.failWith = 500;
    await ask();
    assert.equal(api.warnings.length, 2);
  });

  test("a daemon.json naming another machine is not sent the token", async () => {
    await daemon.advertise({ host: "192.0.2.7" });
    const api = load({ stateDir: daemon.stateDir });
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.equal(daemon.requests.length, 0);
    assert.match(api.warnings[0], /not a loopback address/);
  });

  test("memory_search answers the memories with their ids", async () => {
    daemon.recall = (query) => recallAnswer(query, [UV, TEA]);
    const api = load({ stateDir: daemon.stateDir, minScore: 0.5, budget: 300 });
    const out = await api.tools.get("memory_search").execute("call-1", { query: "Dana's tools" });
    assert.equal(out.content[0].type, "text");
    const shown = {
      memories: [
        {
          id: UV.id,
          category: "preference",
          created: "2026-03-02T09:02:00Z",
          eventDate: null,
          score: 0.81,
          content: "Dana always uses uv instead of pip.",
        },
      ],
    };
    assert.deepEqual(JSON.parse(out.content[0].text), shown);
    assert.deepEqual(out.details, shown);
    assert.deepEqual(daemon.requests[0].body, { query: "Dana's tools", budget: 300 });
    await api.tools.get("memory_search").execute("call-2", { query: "q", budget: 50 });
    assert.equal(daemon.requests[1].body.budget, 50);
  });

  test("memory_search says so when nothing matches", async () => {
    const api = load({ stateDir: daemon.stateDir });
    const out = await api.tools.get("memory_search").execute("call-1", { query: "never discussed" });
    assert.equal(out.content[0].text, "No memory matches.");
    assert.deepEqual(out.details.memories, []);
  });

  test("memory_get reads one memory by id, and says when there is none", async () => {
    const stored = {
      id: UV.id,
      path: UV.path,
      category: "preference",
      status: "active",
      created: UV.created,
      text: UV.content,
    };
    daemon.memories.set(UV.id, stored);
    const api = load({ stateDir: daemon.stateDir });
    const tool = api.tools.get("memory_get");
    const found = await tool.execute("call-1", { id: UV.id });
    assert.deepEqual(found.details, { found: true, memory: stored });
    assert.match(found.content[0].text, /uv instead of pip/);
    assert.equal(daemon.requests[0].method, "GET");
    assert.equal(daemon.requests[0].url, `/memory/${UV.id}`);
    assert.equal(daemon.requests[0].headers.authorization, `Bearer ${daemon.token}`);

    const missing = await tool.execute("call-2", { id: "fact/../x y" });
    assert.deepEqual(missing.details, { found: false });
    assert.match(missing.content[0].text, /No memory has the id "fact\/..\/x y"/);
    assert.equal(daemon.requests[1].url, "/memory/fact%2F..%2Fx%20y");
  });

  test("a tool that cannot reach the daemon fails with the reason", async () => {
    daemon.failWith = 500;
    const api = load({ stateDir: daemon.stateDir });
    await assert.rejects(api.tools.get("memory_search").execute("c", { query: "q" }), /answered 500/);
    await assert.rejects(api.tools.get("memory_get").execute("c", { id: "x" }), /answered 500/);
  });
});

describe("without a daemon", () => {
  let stateDir;
  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), "engram-state-"));
  });
  after(() => rm(stateDir, { recursive: true, force: true }));

  test("no daemon.json: no context, one warning saying how to start one", async () => {
    const api = load({ stateDir });
    const event = { prompt: "x", currentUserMessage: "q", messages: [] };
    assert.equal(await beforePrompt(api, event), undefined);
    assert.equal(await beforePrompt(api, event), undefined);
    assert.equal(api.warnings.length, 1);
    assert.match(
      api.warnings[0],
      /no engram-md daemon runs for .* \(no daemon\.json\); start `engram-md --state-dir/,
    );
  });

  test("a daemon.json left by a daemon that is gone: no context, one warning", async () => {
    const daemon = new FakeDaemon();
    await daemon.start();
    await daemon.advertise({ pid: 2 ** 22 + 12345 });
    const api = load({ stateDir: daemon.stateDir });
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.match(api.warnings[0], /is not running/);
    assert.equal(daemon.requests.length, 0);
    await daemon.stop();
  });

  test("a refused connection: no context, one warning", async () => {
    const daemon = new FakeDaemon();
    await daemon.start();
    const { url, token } = daemon;
    await daemon.stop();
    const api = load({ url, token });
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.match(api.warnings[0], /not reachable \(connection refused\)/);
  });

  test("nothing configured: no context, one warning naming the setting", async () => {
    const api = fakeApi({});
    const saved = process.env.ENGRAM_STATE_DIR;
    delete process.env.ENGRAM_STATE_DIR;
    try {
      plugin.register(api);
    } finally {
      if (saved !== undefined) process.env.ENGRAM_STATE_DIR = saved;
    }
    assert.equal(await beforePrompt(api, { prompt: "x", currentUserMessage: "q", messages: [] }), undefined);
    assert.match(api.warnings[0], /set plugins\.entries\.engram-md\.config\.stateDir/);
  });
});

test("renderBlock writes each memory as engram-md's recall block does", () => {
  const said = memory("said-1", "Caroline: I went to the support group.", 0.5, {
    category: "said",
    memoryKind: "said",
    created: "2023-05-08T13:56:00Z",
    eventDate: "2023-05-07",
  });
  const box = memory("box-1", "Moving to Lisbon: flat, visa, school.", 0.4, {
    memoryKind: "box",
    eventDate: "2026-03-02",
  });
  assert.equal(
    renderBlock([said, box]),
    [
      "<memory>",
      "[SAID 2023-05-08, event 2023-05-07] Caroline: I went to the support group.",
      "[TOPIC WINDOW 2026-03-02] Moving to Lisbon: flat, visa, school.",
      "</memory>",
    ].join("\n"),
  );
});
