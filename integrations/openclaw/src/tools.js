// The agent's memory tools, answered by the daemon: memory_search (POST /recall) and
// memory_get (GET /memory/<id>).
//
// Unlike the prompt hook, a tool that cannot reach the daemon throws: OpenClaw reports a
// thrown error to the model as the tool's failure, which is what happened.

import { keptBlock } from "./block.js";

/** @import { DaemonClient } from "./daemon.js" */
/** @import { Settings } from "./config.js" */

/**
 * @param {string} text
 * @param {unknown} details
 */
function result(text, details) {
  return { content: [{ type: /** @type {const} */ ("text"), text }], details };
}

/**
 * @param {DaemonClient} client
 * @param {Settings} settings
 */
export function memorySearchTool(client, settings) {
  return {
    name: "memory_search",
    label: "Memory search",
    description:
      "Search long-term memory (engram-md): facts, preferences, decisions, commitments and what was said in past conversations. Returns the matching memories as JSON, most relevant first, each with its id, category, the time it was said (created), the day its event happened when known (eventDate), and its score.",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["query"],
      properties: {
        query: { type: "string", minLength: 1, description: "What to look for, in plain words." },
        budget: {
          type: "integer",
          minimum: 1,
          description: "At most this many tokens of memory (default: the configured budget).",
        },
      },
    },
    /**
     * @param {string} _toolCallId
     * @param {{query: string, budget?: number}} params
     */
    async execute(_toolCallId, params) {
      const answer = await client.recall(params.query, { budget: params.budget ?? settings.budget });
      const { memories } = keptBlock(answer, settings.minScore);
      if (memories.length === 0) return result("No memory matches.", { memories: [] });
      // JSON rather than the <memory> block: the model needs each memory's id for memory_get.
      const found = memories.map(({ id, category, created, eventDate, score, content }) => ({
        id,
        category,
        created,
        eventDate: eventDate ?? null,
        score,
        content,
      }));
      return result(JSON.stringify({ memories: found }, null, 2), { memories: found });
    },
  };
}

/** @param {DaemonClient} client */
export function memoryGetTool(client) {
  return {
    name: "memory_get",
    label: "Memory get",
    description:
      "Read one memory of long-term memory (engram-md) by its id, as memory_search lists it: its full text, category, status and when it was said.",
    parameters: {
      type: "object",
      additionalProperties: false,
      required: ["id"],
      properties: {
        id: { type: "string", minLength: 1, description: "The memory's id." },
      },
    },
    /**
     * @param {string} _toolCallId
     * @param {{id: string}} params
     */
    async execute(_toolCallId, params) {
      const memory = await client.memory(params.id);
      if (memory === null)
        return result(`No memory has the id ${JSON.stringify(params.id)}.`, { found: false });
      return result(JSON.stringify(memory, null, 2), { found: true, memory });
    },
  };
}
