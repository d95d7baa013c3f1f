// README.md shows the client in the lines test/readme-example.ts holds (and tsc checks).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { root } from "./server.js";

test("README.md's TypeScript example is test/readme-example.ts's", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const shown = /```ts\nimport \{ gatewayClient, ok \} from "\.\/clients\/typescript\/src\/index\.js";\n\n([\s\S]*?)```/.exec(readme);
  assert.ok(shown, "README.md has no TypeScript example importing clients/typescript");
  const example = readFileSync(fileURLToPath(new URL("../../test/readme-example.ts", import.meta.url)), "utf8");
  const kept = /\/\/ README begin\n([\s\S]*?)\s*\/\/ README end/.exec(example);
  assert.ok(kept);
  const dedent = (s: string) =>
    s
      .split("\n")
      .map((l) => l.replace(/^ {2}/, ""))
      .join("\n")
      .trim();
  assert.equal(dedent(kept[1]!), shown[1]!.trim());
});
