// Recall before each prompt: the `before_prompt_build` hook.
//
// The query is the person's current message (`currentUserMessage`), not `prompt`, which a
// harness may rebuild with history and envelopes around it. An explicit empty message (an
// image alone, a continuation) asks nothing. Whatever goes wrong — no daemon, a timeout, an
// error status — the prompt goes out without memory: the hook never throws and never waits
// longer than the configured timeout.

import { keptBlock } from "./block.js";

/** @import { DaemonClient } from "./daemon.js" */
/** @import { Settings } from "./config.js" */
/** @import { FailureLog } from "./failures.js" */

/**
 * The text to recall for, or null when the turn asks nothing.
 * @param {{prompt?: string, currentUserMessage?: string}} event
 */
export function queryOf(event) {
  // Omitted (not empty) means a harness that does not supply it: its prompt is the request.
  const text = typeof event.currentUserMessage === "string" ? event.currentUserMessage : event.prompt;
  return typeof text === "string" && text.trim() ? text : null;
}

/**
 * @param {DaemonClient} client
 * @param {Settings} settings
 * @param {FailureLog} failures
 */
export function promptHook(client, settings, failures) {
  /**
   * @param {{prompt?: string, currentUserMessage?: string}} event
   * @param {{trigger?: string}} [ctx]
   */
  return async (event, ctx) => {
    // A heartbeat's prompt is OpenClaw's own poll, not something a person asked.
    if (ctx?.trigger === "heartbeat") return undefined;
    const query = queryOf(event);
    if (query === null) return undefined;
    try {
      const answer = await client.recall(query, { budget: settings.budget });
      failures.succeeded();
      const { block } = keptBlock(answer, settings.minScore);
      return block ? { prependContext: block } : undefined;
    } catch (error) {
      failures.failed(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  };
}
