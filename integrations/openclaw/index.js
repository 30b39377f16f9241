// engram-md for OpenClaw: the plugin's entry.
//
// It owns the memory slot (`plugins.slots.memory: "engram-md"`), recalls from the engram-md
// daemon before each prompt and gives the agent memory_search and memory_get. The daemon
// captures the conversation by tailing session files (`engram-md run --watch FOLDER`):
// OpenClaw's own sessions folder up to 2026.7, and from 2026.8.1, when OpenClaw keeps its
// sessions in SQLite, the files this plugin writes into `transcriptsDir` (src/capture.js).
//
// The entry is a plain object of the shape OpenClaw's `definePluginEntry` returns, so the
// plugin needs no runtime dependency and no build step.

import { captureHook, TranscriptWriter } from "./src/capture.js";
import { readSettings } from "./src/config.js";
import { DaemonClient } from "./src/daemon.js";
import { FailureLog } from "./src/failures.js";
import { promptHook } from "./src/prompt.js";
import { memoryGetTool, memorySearchTool } from "./src/tools.js";

/**
 * What the plugin uses of OpenClaw's plugin API (`OpenClawPluginApi`).
 * @typedef {object} PluginApi
 * @property {Record<string, unknown>} [pluginConfig]
 * @property {{warn: (message: string) => void}} logger
 * @property {(hookName: string, handler: (event: any, ctx?: any) => unknown) => void} on
 * @property {(tool: object) => void} registerTool
 * @property {(capability: object) => void} [registerMemoryCapability]
 */

/**
 * The system prompt's memory section, when the agent may call the tools.
 * @param {{availableTools: Set<string>}} params
 */
function memoryPromptSection({ availableTools }) {
  const search = availableTools.has("memory_search");
  const get = availableTools.has("memory_get");
  if (!search && !get) return [];
  return [
    "## Memory",
    "Memories recalled for the current message arrive in a <memory> block before it; each line reads [CATEGORY day it was said] memory.",
    ...(search
      ? [
          "For anything else about past conversations, people, preferences, decisions or commitments, call memory_search.",
        ]
      : []),
    ...(get ? ["memory_get reads one memory in full by the id memory_search gives."] : []),
    "",
  ];
}

export default {
  id: "engram-md",
  name: "engram-md",
  description:
    "Long-term memory from the engram-md daemon: recall before each prompt, memory_search and memory_get tools.",
  /** @param {PluginApi} api */
  register(api) {
    const settings = readSettings(api.pluginConfig);
    const client = new DaemonClient(settings, settings.timeoutMs);
    const unrecalled = new FailureLog(api.logger, "prompt sent without memory");
    api.on("before_prompt_build", promptHook(client, settings, unrecalled));
    if (settings.transcriptsDir) {
      const writer = new TranscriptWriter(settings.transcriptsDir);
      const uncaptured = new FailureLog(api.logger, "conversation not written for the daemon");
      api.on("agent_end", captureHook(writer, uncaptured));
    }
    api.registerTool(memorySearchTool(client, settings));
    api.registerTool(memoryGetTool(client));
    api.registerMemoryCapability?.({ promptBuilder: memoryPromptSection });
  },
};
