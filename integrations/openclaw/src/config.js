// The plugin's settings, from `plugins.entries.engram-md.config`.
//
// OpenClaw validates that object against openclaw.plugin.json's configSchema (and fills its
// defaults) before the plugin loads; the defaults are repeated here for a host that passes
// the config as written.

import { homedir } from "node:os";
import { join } from "node:path";

export const DEFAULT_TIMEOUT_MS = 300;

/**
 * `path` with a leading `~` made the home folder.
 * @param {string} path
 */
function expandHome(path) {
  return path === "~" || path.startsWith("~/") ? join(homedir(), path.slice(1)) : path;
}

/**
 * @typedef {object} Settings
 * @property {string} [stateDir]  where daemon.json is; $ENGRAM_STATE_DIR when unset
 * @property {string} [url]       a fixed daemon address, with token
 * @property {string} [token]
 * @property {number} [budget]    tokens per recall; unset: the daemon's own budget
 * @property {number} timeoutMs
 * @property {number} minScore
 * @property {string} [transcriptsDir]  where the conversation is written for the daemon to tail
 */

/**
 * @param {Record<string, unknown> | undefined} config
 * @param {NodeJS.ProcessEnv} env
 * @returns {Settings}
 */
export function readSettings(config, env = process.env) {
  const c = config ?? {};
  const text = (/** @type {unknown} */ v) => (typeof v === "string" && v ? v : undefined);
  const number = (/** @type {unknown} */ v) => (typeof v === "number" ? v : undefined);
  const path = (/** @type {unknown} */ v) => {
    const p = text(v);
    return p === undefined ? undefined : expandHome(p);
  };
  return {
    stateDir: path(c.stateDir) ?? path(env.ENGRAM_STATE_DIR),
    url: text(c.url),
    token: text(c.token),
    budget: number(c.budget),
    timeoutMs: number(c.timeoutMs) ?? DEFAULT_TIMEOUT_MS,
    minScore: number(c.minScore) ?? 0,
    transcriptsDir: path(c.transcriptsDir),
  };
}
