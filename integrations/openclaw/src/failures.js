// How the plugin reports what it could not do: a warning in OpenClaw's log, never an error
// that would hold a prompt or a run back.

/**
 * One warning per outage: a daemon that stays down is not reported again every turn, and
 * the next failure after a recall that worked is.
 */
export class FailureLog {
  /**
   * @param {{warn: (message: string) => void}} logger
   * @param {string} consequence  what a failure means, e.g. "prompt sent without memory"
   */
  constructor(logger, consequence) {
    this.logger = logger;
    this.consequence = consequence;
    /** @type {string | null} */
    this.last = null;
  }

  /** @param {string} message */
  failed(message) {
    if (message === this.last) return;
    this.last = message;
    this.logger.warn(`engram-md: ${this.consequence}: ${message}`);
  }

  succeeded() {
    this.last = null;
  }
}
