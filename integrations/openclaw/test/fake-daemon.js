// A stand-in for the engram-md daemon's recall API on 127.0.0.1: the same paths, bearer token,
// status codes and JSON shapes as engram_md/recall/server.py, answers chosen by each test.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A recall answer in the daemon's shape: memories and the block they render to. */
export function recallAnswer(query, memories) {
  const lines = memories.map((m) => `[${m.category.toUpperCase()} ${m.created.slice(0, 10)}] ${m.content}`);
  return {
    query,
    memories,
    tokens: memories.reduce((n, m) => n + Math.ceil(m.content.length / 4), 0),
    block: ["<memory>", ...lines, "</memory>"].join("\n"),
  };
}

/** One memory as POST /recall lists it. */
export function memory(id, content, score, extra = {}) {
  return {
    id,
    path: `facts/2026-03-02/${id}.md`,
    category: "preference",
    memoryKind: "fact",
    content,
    score,
    sourceTurnIds: ["t1"],
    created: "2026-03-02T09:02:00Z",
    eventDate: null,
    ...extra,
  };
}

export class FakeDaemon {
  constructor() {
    this.token = "test-token-0123456789";
    /** @type {{method: string, url: string, headers: object, body: any}[]} */
    this.requests = [];
    this.delayMs = 0;
    /** @type {number | null} answer every request with this status */
    this.failWith = null;
    /** @type {(query: string) => object} */
    this.recall = (query) => recallAnswer(query, []);
    /** @type {Map<string, object>} */
    this.memories = new Map();
    this.server = createServer((req, res) => this.handle(req, res));
  }

  async start() {
    await new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = this.server.address().port;
    this.stateDir = await mkdtemp(join(tmpdir(), "engram-state-"));
    await this.advertise({});
    return this;
  }

  /** Write daemon.json as `engram-md run` does; `overrides` replace its fields. */
  async advertise(overrides) {
    const endpoint = {
      host: "127.0.0.1",
      port: this.port,
      pid: process.pid,
      token: this.token,
      ...overrides,
    };
    await writeFile(join(this.stateDir, "daemon.json"), JSON.stringify(endpoint, null, 2) + "\n", {
      mode: 0o600,
    });
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
    await rm(this.stateDir, { recursive: true, force: true });
  }

  async handle(req, res) {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = raw ? JSON.parse(raw) : null;
    this.requests.push({ method: req.method, url: req.url, headers: req.headers, body });
    const send = (status, payload) => {
      if (res.destroyed) return;
      res.writeHead(status, { "Content-Type": "application/json" });
      res.end(JSON.stringify(payload));
    };
    if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return send(401, { error: "missing or wrong token" });
    if (this.failWith !== null) return send(this.failWith, { error: "recall failed: index unreadable" });
    if (req.method === "POST" && req.url === "/recall") return send(200, this.recall(body.query));
    const match = req.method === "GET" && /^\/memory\/(.+)$/.exec(req.url);
    if (match) {
      const found = this.memories.get(decodeURIComponent(match[1]));
      return found ? send(200, found) : send(404, { error: "no such memory" });
    }
    return send(404, { error: `no such endpoint: ${req.method} ${req.url}` });
  }
}

/** A stand-in for OpenClaw's plugin API: records what the plugin registers and warns. */
export function fakeApi(pluginConfig) {
  const api = {
    pluginConfig,
    hooks: new Map(),
    tools: new Map(),
    capabilities: [],
    warnings: [],
    logger: {
      info() {},
      warn: (message) => api.warnings.push(message),
      error: (message) => api.warnings.push(message),
    },
    on(name, handler) {
      api.hooks.set(name, handler);
    },
    registerTool(tool) {
      api.tools.set(tool.name, tool);
    },
    registerMemoryCapability(capability) {
      api.capabilities.push(capability);
    },
  };
  return api;
}
