// The plugin's JSDoc types hold: TypeScript checks index.js and src/ (jsconfig.json, strict).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const PLUGIN = dirname(dirname(fileURLToPath(import.meta.url)));
const TSC = join(PLUGIN, "node_modules", "typescript", "bin", "tsc");

test("tsc finds no type error", { skip: !existsSync(TSC) && "typescript is not installed (npm ci)" }, () => {
  const out = spawnSync(process.execPath, [TSC, "-p", "jsconfig.json"], { cwd: PLUGIN, encoding: "utf8" });
  assert.equal(out.status, 0, out.stdout + out.stderr);
});
