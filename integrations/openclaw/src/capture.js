// The conversation, written where the engram-md daemon can tail it: the `agent_end` hook.
//
// Up to 2026.7 OpenClaw wrote each session as JSONL under ~/.openclaw/agents/<agent>/sessions,
// and `engram-md run --watch` on that folder was all the capture needed. From 2026.8.1 the
// sessions live in SQLite (agents/<agent>/agent/openclaw-agent.sqlite) and that folder stays
// empty. With `transcriptsDir` set, this hook writes after every run the messages of the
// session not written yet, in the session JSONL format OpenClaw used to write (a `session`
// header, then `message` entries), one file per session: `<transcriptsDir>/<sessionId>.jsonl`.
// engram-md reads that format already (envelopes, provenance and all), and the daemon tails
// the folder as it tailed OpenClaw's.
//
// A message's entry id is a hash of the session, role, time and content, so a gateway restart
// or a compaction that hands the same messages over again appends nothing twice.

import { createHash } from "node:crypto";
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** @import { FailureLog } from "./failures.js" */

const ROLES = new Set(["user", "assistant"]);

/**
 * The entry id of `message` in `sessionId`.
 * @param {string} sessionId
 * @param {{role: string, timestamp?: number, content: unknown}} message
 */
function entryId(sessionId, message) {
  const key = JSON.stringify([sessionId, message.role, message.timestamp ?? null, message.content]);
  return createHash("sha256").update(key).digest("hex").slice(0, 16);
}

/**
 * The session entry of a user or assistant message; null for any other (tool results, ...).
 * Only what engram-md reads is kept: role, content, time and the input's provenance.
 * @param {string} sessionId
 * @param {unknown} raw
 */
function messageEntry(sessionId, raw) {
  const m = /** @type {{role?: unknown, content?: unknown, timestamp?: number, provenance?: unknown}} */ (
    raw
  );
  if (!m || typeof m.role !== "string" || !ROLES.has(m.role)) return null;
  const message = { role: m.role, content: m.content, timestamp: m.timestamp };
  if (m.provenance !== undefined) Object.assign(message, { provenance: m.provenance });
  const id = entryId(sessionId, message);
  return { type: "message", id, timestamp: isoTime(m.timestamp), message };
}

/** @param {unknown} ms */
function isoTime(ms) {
  return new Date(typeof ms === "number" && ms > 0 ? ms : Date.now()).toISOString();
}

/**
 * Ids already in `path` (none when it does not exist yet).
 * @param {string} path
 * @returns {Promise<Set<string>>}
 */
async function writtenIds(path) {
  let text;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") return new Set();
    throw error;
  }
  const ids = new Set();
  for (const line of text.split("\n")) {
    try {
      const entry = JSON.parse(line);
      if (typeof entry?.id === "string") ids.add(entry.id);
    } catch {
      // a line cut short by a crash: its message is written again
    }
  }
  return ids;
}

export class TranscriptWriter {
  /** @param {string} dir */
  constructor(dir) {
    this.dir = dir;
    /** @type {Map<string, Promise<Set<string>>>} ids written per session, read once per process */
    this.sessions = new Map();
  }

  /**
   * Append the user and assistant messages of `sessionId` not written yet.
   * @param {string} sessionId
   * @param {unknown[]} messages
   * @returns {Promise<number>} how many were appended
   */
  async write(sessionId, messages) {
    // Session ids are UUIDs; anything else is kept to one plain file name.
    const path = join(this.dir, `${sessionId.replace(/[^A-Za-z0-9._-]/g, "_")}.jsonl`);
    // One write at a time per session: runs of one session may end close together.
    const previous = this.sessions.get(sessionId) ?? writtenIds(path);
    let appended = 0;
    const next = previous.then(async (ids) => {
      /** @type {Map<string, string>} entry id -> line, in the session's order */
      const fresh = new Map();
      for (const raw of messages) {
        const entry = messageEntry(sessionId, raw);
        if (entry && !ids.has(entry.id) && !fresh.has(entry.id)) fresh.set(entry.id, JSON.stringify(entry));
      }
      if (fresh.size === 0) return ids;
      const lines = [...fresh.values()];
      if (!ids.has(sessionId)) {
        const header = {
          type: "session",
          version: 3,
          id: sessionId,
          timestamp: isoTime(firstTime(messages)),
        };
        lines.unshift(JSON.stringify(header));
      }
      await mkdir(this.dir, { recursive: true });
      await appendFile(path, lines.join("\n") + "\n", "utf8");
      ids.add(sessionId);
      for (const id of fresh.keys()) ids.add(id);
      appended = fresh.size;
      return ids;
    });
    this.sessions.set(sessionId, next);
    try {
      await next;
    } catch (error) {
      // The next run reads the file again and writes what is missing from it.
      if (this.sessions.get(sessionId) === next) this.sessions.delete(sessionId);
      throw error;
    }
    return appended;
  }
}

/** @param {unknown[]} messages */
function firstTime(messages) {
  for (const m of messages) {
    const t = /** @type {{timestamp?: unknown}} */ (m)?.timestamp;
    if (typeof t === "number" && t > 0) return t;
  }
  return undefined;
}

/**
 * @param {TranscriptWriter} writer
 * @param {FailureLog} failures
 */
export function captureHook(writer, failures) {
  /**
   * @param {{messages?: unknown[]}} event
   * @param {{sessionId?: string}} [ctx]
   */
  return async (event, ctx) => {
    const sessionId = ctx?.sessionId;
    if (!sessionId || !Array.isArray(event.messages)) return;
    try {
      await writer.write(sessionId, event.messages);
      failures.succeeded();
    } catch (error) {
      failures.failed(error instanceof Error ? error.message : String(error));
    }
  };
}
