// The conversation written for the daemon: OpenClaw's session JSONL format, each message once.

import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import plugin from "../index.js";
import { TranscriptWriter } from "../src/capture.js";
import { fakeApi } from "./fake-daemon.js";

const SESSION = "88cc1995-15b3-490c-ba96-dd393bf8d954";

// Messages as `agent_end` hands them over: the session so far, tool traffic included.
const TURN_1 = [
  { role: "user", content: "Which package manager should I use?", timestamp: 1772442120000 },
  {
    role: "assistant",
    content: [
      { type: "thinking", thinking: "..." },
      { type: "text", text: "uv, as you prefer." },
    ],
    timestamp: 1772442125000,
    usage: { input: 10, output: 4 },
  },
];
const TURN_2 = [
  {
    role: "user",
    content: [{ type: "text", text: "My sister Ana lives in Porto." }],
    timestamp: 1772442200000,
  },
  { role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "ok" }], timestamp: 1772442201000 },
  { role: "assistant", content: [{ type: "text", text: "Noted." }], timestamp: 1772442202000 },
];

let dir;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "engram-transcripts-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

async function entries() {
  const text = await readFile(join(dir, `${SESSION}.jsonl`), "utf8");
  assert.ok(text.endsWith("\n"));
  return text
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
}

function endOfRun(api, messages, ctx = { sessionId: SESSION, agentId: "main" }) {
  return api.hooks.get("agent_end")({ messages, success: true }, ctx);
}

test("a run's messages become a session header and message entries", async () => {
  const api = fakeApi({ stateDir: dir, transcriptsDir: dir });
  plugin.register(api);
  await endOfRun(api, TURN_1);
  const [header, user, assistant] = await entries();
  assert.deepEqual(header, {
    type: "session",
    version: 3,
    id: SESSION,
    timestamp: "2026-03-02T09:02:00.000Z",
  });
  assert.equal(user.type, "message");
  assert.equal(user.timestamp, "2026-03-02T09:02:00.000Z");
  assert.deepEqual(user.message, {
    role: "user",
    content: "Which package manager should I use?",
    timestamp: 1772442120000,
  });
  assert.equal(assistant.message.role, "assistant");
  assert.deepEqual(assistant.message.content, TURN_1[1].content);
  assert.equal(assistant.message.usage, undefined);
  assert.match(user.id, /^[0-9a-f]{16}$/);
  assert.notEqual(user.id, assistant.id);
  assert.deepEqual(api.warnings, []);
});

test("each message is written once, across runs and across restarts", async () => {
  const api = fakeApi({ transcriptsDir: dir });
  plugin.register(api);
  await endOfRun(api, TURN_1);
  await endOfRun(api, [...TURN_1, ...TURN_2]);
  let written = await entries();
  assert.deepEqual(
    written.map((e) => e.type),
    ["session", "message", "message", "message", "message"],
  );
  assert.deepEqual(
    written.slice(3).map((e) => e.message.role),
    ["user", "assistant"],
  );

  // A restarted gateway hands the whole session over again: nothing is appended.
  const restarted = new TranscriptWriter(dir);
  assert.equal(await restarted.write(SESSION, [...TURN_1, ...TURN_2]), 0);
  written = await entries();
  assert.equal(written.length, 5);
});

test("runs of one session that end together append in turn", async () => {
  const writer = new TranscriptWriter(dir);
  const counts = await Promise.all([
    writer.write(SESSION, TURN_1),
    writer.write(SESSION, [...TURN_1, ...TURN_2]),
  ]);
  assert.deepEqual(counts, [2, 2]);
  assert.equal((await entries()).filter((e) => e.type === "session").length, 1);
});

test("a run with no conversation writes no file", async () => {
  const writer = new TranscriptWriter(dir);
  assert.equal(await writer.write(SESSION, [{ role: "toolResult", content: [], timestamp: 1 }]), 0);
  await assert.rejects(readFile(join(dir, `${SESSION}.jsonl`)), { code: "ENOENT" });
});

test("a session id is kept to one file name in the folder", async () => {
  const writer = new TranscriptWriter(dir);
  await writer.write("../../etc/x", TURN_1);
  const text = await readFile(join(dir, ".._.._etc_x.jsonl"), "utf8");
  assert.match(text, /"id":"..\/..\/etc\/x"/);
});

test("a folder that cannot be written: one warning, the run goes on", async () => {
  const blocked = join(dir, "a-file");
  await writeFile(blocked, "");
  const api = fakeApi({ transcriptsDir: join(blocked, "sessions") });
  plugin.register(api);
  await endOfRun(api, TURN_1);
  await endOfRun(api, TURN_1);
  assert.equal(api.warnings.length, 1);
  assert.match(api.warnings[0], /^engram-md: conversation not written for the daemon: /);
});

test("without transcriptsDir nothing is written and no hook is registered", () => {
  const api = fakeApi({ stateDir: dir });
  plugin.register(api);
  assert.equal(api.hooks.has("agent_end"), false);
});
