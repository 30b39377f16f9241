// The <memory> block of a recall answer, after leaving out memories under the minimum score.
//
// The daemon renders the block itself (its "block" field); that block is used as it comes
// whenever every memory is kept, so the daemon stays the one owner of the format. Only when
// minScore leaves some out is the block rendered here, line for line as engram-md's
// recall/wire.py render_block does: `[CATEGORY day] content`, the event's day after the day
// it was said when it is another, a box as TOPIC WINDOW.

/**
 * A memory as the daemon's POST /recall answers it.
 * @typedef {object} Memory
 * @property {string} id
 * @property {string} path
 * @property {string} category
 * @property {string} memoryKind
 * @property {string} content
 * @property {number} score
 * @property {string} created     "YYYY-MM-DDTHH:MM:SSZ", when it was said
 * @property {string | null} [eventDate]  "YYYY-MM-DD", when the event happened
 */

/**
 * @typedef {object} RecallAnswer
 * @property {string} query
 * @property {Memory[]} memories
 * @property {number} tokens
 * @property {string} block
 */

/**
 * @param {Memory[]} memories
 * @returns {string}
 */
export function renderBlock(memories) {
  const lines = ["<memory>"];
  for (const m of memories) {
    const label = m.memoryKind === "box" ? "TOPIC WINDOW" : m.category.toUpperCase();
    const said = m.created.slice(0, 10);
    const event = m.eventDate ?? null;
    const when = event === null || event === said ? said : `${said}, event ${event}`;
    lines.push(`[${label} ${when}] ${m.content}`);
  }
  lines.push("</memory>");
  return lines.join("\n");
}

/**
 * The memories scoring at least `minScore`, and their block; an empty block when none is.
 * @param {RecallAnswer} answer
 * @param {number} minScore
 * @returns {{memories: Memory[], block: string}}
 */
export function keptBlock(answer, minScore) {
  const memories = answer.memories.filter((m) => m.score >= minScore);
  if (memories.length === 0) return { memories, block: "" };
  const block = memories.length === answer.memories.length ? answer.block : renderBlock(memories);
  return { memories, block };
}
