// The plugin as OpenClaw itself loads it: the README's set-up run by the real `openclaw` CLI
// (the devDependency) in a fresh home, then OpenClaw's own config validation and runtime
// inspection. The plugin is copied out first, as a fresh checkout holds it: OpenClaw refuses
// to link a folder whose node_modules holds the very OpenClaw that runs.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";

const PLUGIN = dirname(dirname(fileURLToPath(import.meta.url)));
const README = join(PLUGIN, "..", "..", "README.md");
const OPENCLAW = join(PLUGIN, "node_modules", "openclaw", "openclaw.mjs");
const SHIPPED = ["index.js", "src", "package.json", "openclaw.plugin.json"];

/** The README's OpenClaw set-up: the first sh block of its "Use with OpenClaw" section. */
export async function readmeSetup() {
  const text = await readFile(README, "utf8");
  const section = text.split(/^## /m).find((s) => s.startsWith("Use with OpenClaw"));
  assert.ok(section, "README.md has a 'Use with OpenClaw' section");
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(block, "the section has a sh block");
  return block[1];
}

describe(
  "through OpenClaw's loader",
  { skip: !existsSync(OPENCLAW) && "openclaw is not installed (npm ci)" },
  () => {
    let home;
    let checkout;
    const run = (args, input) => {
      const out = spawnSync(process.execPath, [OPENCLAW, ...args], {
        cwd: checkout,
        env: { PATH: process.env.PATH, HOME: home, NO_COLOR: "1" },
        input: input ?? "",
        encoding: "utf8",
        timeout: 120_000,
      });
      return { code: out.status, stdout: out.stdout, stderr: out.stderr };
    };

    before(async () => {
      home = await mkdtemp(join(tmpdir(), "openclaw-home-"));
      checkout = join(home, "engram-md");
      await mkdir(join(checkout, "integrations", "openclaw"), { recursive: true });
      for (const name of SHIPPED) {
        await cp(join(PLUGIN, name), join(checkout, "integrations", "openclaw", name), { recursive: true });
      }
      // OpenClaw logs to /tmp/openclaw unless told otherwise: keep its log in this home.
      await mkdir(join(home, ".openclaw"));
      const logging = { logging: { file: join(home, "openclaw.log") } };
      await writeFile(join(home, ".openclaw", "openclaw.json"), JSON.stringify(logging));
      // The README's commands as written, `openclaw` being this OpenClaw and `engram-md` a
      // stand-in that keeps its arguments (the daemon itself is run by the Python tests).
      const script = [
        `openclaw() { "${process.execPath}" "${OPENCLAW}" "$@"; }`,
        `engram-md() { printf '%s\\n' "$@" > "$HOME/engram-md.args"; }`,
        "set -e",
        await readmeSetup(),
      ].join("\n");
      await writeFile(join(home, "setup.sh"), script);
      const out = spawnSync("bash", [join(home, "setup.sh")], {
        cwd: checkout,
        env: { PATH: process.env.PATH, HOME: home, NO_COLOR: "1" },
        encoding: "utf8",
        timeout: 180_000,
      });
      assert.equal(out.status, 0, `the README set-up failed:\n${out.stdout}\n${out.stderr}`);
    });
    after(() => rm(home, { recursive: true, force: true }));

    test("the README's configuration validates against the manifest", () => {
      const out = run(["config", "validate", "--json"]);
      assert.equal(out.code, 0, out.stdout + out.stderr);
      assert.equal(JSON.parse(out.stdout).valid, true);
    });

    test("OpenClaw loads the plugin into the memory slot with its hooks and tools", () => {
      const out = run(["plugins", "inspect", "engram-md", "--runtime", "--json"]);
      assert.equal(out.code, 0, out.stderr);
      const report = JSON.parse(out.stdout);
      assert.equal(report.plugin.status, "loaded");
      assert.equal(report.plugin.activationReason, "selected memory slot");
      assert.deepEqual(report.typedHooks.map((h) => h.name).sort(), ["agent_end", "before_prompt_build"]);
      assert.deepEqual(report.tools.flatMap((t) => t.names).sort(), ["memory_get", "memory_search"]);
      assert.equal(report.policy.allowConversationAccess, true);
      const blocked = report.diagnostics.filter((d) => /blocked|error/i.test(`${d.level} ${d.message}`));
      assert.deepEqual(blocked, []);
    });

    test("the daemon watches the folder the plugin writes, with the state folder it reads", async () => {
      const out = run(["config", "get", "plugins.entries.engram-md.config", "--json"]);
      assert.equal(out.code, 0, out.stderr);
      const config = JSON.parse(out.stdout);
      const args = (await readFile(join(home, "engram-md.args"), "utf8")).trim().split("\n");
      const after = (flag) => args[args.indexOf(flag) + 1];
      const expand = (p) => p.replace(/^~/, home);
      assert.equal(after("--state-dir"), expand(config.stateDir));
      assert.equal(after("--watch"), expand(config.transcriptsDir));
      assert.ok(args.includes("run"));
    });

    test("a configuration the manifest does not allow is refused, key by key", () => {
      const bad = { timeoutMs: "fast", minScore: 2, budgetTokens: 500, url: "http://127.0.0.1:8765" };
      const patch = JSON.stringify({ plugins: { entries: { "engram-md": { config: bad } } } });
      const out = run(["config", "patch", "--stdin", "--dry-run"], patch);
      assert.notEqual(out.code, 0, "the patch was accepted");
      const said = out.stdout + out.stderr;
      for (const key of ["timeoutMs", "minScore", "token"]) {
        assert.match(said, new RegExp(`plugins\\.entries\\.engram-md\\.config\\.${key}`), said);
      }
      assert.match(said, /budgetTokens/, said);
    });
  },
);
