// The engram-md daemon's loopback HTTP API, as this plugin uses it.
//
// `engram-md run` serves recall on a loopback port and advertises it in <state>/daemon.json
// ({host, port, pid, token}, mode 0600); every request carries `Authorization: Bearer
// <token>`. The file is read again for every request, so a restarted daemon (new port, new
// token) is followed without restarting OpenClaw. Every failure is a DaemonError whose
// message says what to do; callers decide whether that fails open (the prompt hook) or
// reaches the model (the tools).

import { readFile } from "node:fs/promises";
import { join } from "node:path";

/** A failed request to the daemon: unreachable, timed out, refused or answered an error. */
export class DaemonError extends Error {
  name = "DaemonError";
}

/**
 * @typedef {object} Endpoint
 * @property {string} base   e.g. "http://127.0.0.1:8765"
 * @property {string} token
 */

/**
 * @typedef {object} Answer
 * @property {number} status  200 or 404; any other status is a DaemonError
 * @property {any} body       the parsed JSON answer
 */

// The token travels in clear text and answers carry memory: never to another machine.
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/**
 * Whether process `pid` exists (EPERM: it does, under another user).
 * @param {number} pid
 */
function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return /** @type {NodeJS.ErrnoException} */ (error).code === "EPERM";
  }
}

/**
 * The endpoint advertised in `stateDir`/daemon.json.
 * @param {string} stateDir
 * @param {AbortSignal} signal
 * @returns {Promise<Endpoint>}
 */
async function advertised(stateDir, signal) {
  const path = join(stateDir, "daemon.json");
  let text;
  try {
    text = await readFile(path, { encoding: "utf8", signal });
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === "ENOENT") {
      throw new DaemonError(
        `no engram-md daemon runs for ${stateDir} (no daemon.json); start \`engram-md --state-dir ${stateDir} run --watch ...\``,
      );
    }
    throw error;
  }
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new DaemonError(`${path} is not JSON`);
  }
  const { host, port, pid, token } = data ?? {};
  if (
    typeof host !== "string" ||
    !Number.isInteger(port) ||
    port < 1 ||
    port > 65535 ||
    !Number.isInteger(pid) ||
    pid < 1 ||
    typeof token !== "string" ||
    !token
  ) {
    throw new DaemonError(`${path} does not name a host, port, pid and token`);
  }
  if (!LOOPBACK.has(host)) {
    throw new DaemonError(`${path} names ${host}, not a loopback address; refusing to send the token there`);
  }
  if (!pidAlive(pid)) {
    throw new DaemonError(`the engram-md daemon of ${stateDir} (pid ${pid}) is not running`);
  }
  const hostPart = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  return { base: `http://${hostPart}:${port}`, token };
}

/**
 * Where requests go: a fixed `url` + `token`, or what `stateDir`'s daemon advertises.
 * @typedef {object} Target
 * @property {string} [stateDir]
 * @property {string} [url]
 * @property {string} [token]
 */

/** A client of one daemon; `timeoutMs` bounds each request from the file read to the answer. */
export class DaemonClient {
  /**
   * @param {Target} target
   * @param {number} timeoutMs
   */
  constructor(target, timeoutMs) {
    this.target = target;
    this.timeoutMs = timeoutMs;
  }

  /**
   * POST /recall: the daemon's answer ({query, memories, tokens, block}).
   * @param {string} query
   * @param {{budget?: number}} options
   */
  async recall(query, { budget } = {}) {
    const { body } = await this.request("POST", "/recall", { query, budget: budget ?? null });
    if (!Array.isArray(body?.memories) || typeof body.block !== "string") {
      throw new DaemonError("the engram-md daemon answered a recall without memories and block");
    }
    return body;
  }

  /**
   * GET /memory/<id>: the memory's JSON, or null when the daemon holds no such memory.
   * @param {string} id
   */
  async memory(id) {
    const { status, body } = await this.request("GET", `/memory/${encodeURIComponent(id)}`);
    return status === 404 ? null : body;
  }

  /**
   * @param {"GET" | "POST"} method
   * @param {string} path
   * @param {object} [payload]
   * @returns {Promise<Answer>}
   */
  async request(method, path, payload) {
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const endpoint = await this.endpoint(signal);
      /** @type {Record<string, string>} */
      const headers = { Authorization: `Bearer ${endpoint.token}`, Accept: "application/json" };
      if (payload !== undefined) headers["Content-Type"] = "application/json";
      const response = await fetch(endpoint.base + path, {
        method,
        headers,
        body: payload === undefined ? undefined : JSON.stringify(payload),
        signal,
      });
      const text = await response.text();
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        throw new DaemonError(`the engram-md daemon answered ${response.status} with non-JSON`);
      }
      if (response.status === 200 || response.status === 404) return { status: response.status, body };
      const reason = typeof body?.error === "string" ? body.error : response.statusText;
      if (response.status === 401) {
        throw new DaemonError(
          `the engram-md daemon refused the token (${reason}); is the configured token or state folder the running daemon's?`,
        );
      }
      throw new DaemonError(`the engram-md daemon answered ${response.status}: ${reason}`);
    } catch (error) {
      throw asDaemonError(error, this.timeoutMs);
    }
  }

  /** @param {AbortSignal} signal */
  async endpoint(signal) {
    const { stateDir, url, token } = this.target;
    if (url && token) return { base: url.replace(/\/$/, ""), token };
    if (!stateDir) {
      throw new DaemonError(
        "no engram-md daemon configured: set plugins.entries.engram-md.config.stateDir (or ENGRAM_STATE_DIR)",
      );
    }
    return advertised(stateDir, signal);
  }
}

/**
 * Any failure of a request, as one DaemonError saying what went wrong.
 * @param {unknown} error
 * @param {number} timeoutMs
 */
function asDaemonError(error, timeoutMs) {
  if (error instanceof DaemonError) return error;
  const err = /** @type {Error & {cause?: NodeJS.ErrnoException}} */ (error);
  if (err?.name === "TimeoutError" || err?.name === "AbortError") {
    return new DaemonError(`the engram-md daemon did not answer within ${timeoutMs} ms`);
  }
  const code = err?.cause?.code ?? /** @type {NodeJS.ErrnoException} */ (err)?.code;
  if (code === "ECONNREFUSED") {
    return new DaemonError(
      "the engram-md daemon is not reachable (connection refused); is `engram-md run` running?",
    );
  }
  return new DaemonError(
    `the engram-md daemon could not be asked: ${err?.cause?.message ?? err?.message ?? String(error)}`,
  );
}
