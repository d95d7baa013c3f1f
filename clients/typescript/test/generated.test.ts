// The committed types (src/integrator.ts) are what openapi-typescript makes of the committed
// document (openapi/integrator.yaml): after `make openapi`, `make client-ts` regenerates them.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { root } from "./server.js";

const pkg = fileURLToPath(new URL("../../", import.meta.url));

test("src/integrator.ts is generated from openapi/integrator.yaml", () => {
  const dir = mkdtempSync(join(tmpdir(), "svcflow-ts-gen-"));
  try {
    const out = join(dir, "integrator.ts");
    execFileSync(
      process.execPath,
      [join(pkg, "node_modules/openapi-typescript/bin/cli.js"), join(root, "openapi/integrator.yaml"), "--output", out],
      { cwd: pkg, stdio: ["ignore", "ignore", "inherit"] },
    );
    const committed = readFileSync(join(pkg, "src/integrator.ts"), "utf8");
    assert.ok(committed === readFileSync(out, "utf8"), "clients/typescript/src/integrator.ts is out of date with openapi/integrator.yaml: run `make client-ts` and commit it");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the generated types: no array is `| null`, every status set is one union type", () => {
  const types = readFileSync(join(pkg, "src/integrator.ts"), "utf8");
  // A workflow definition's parts (engine/core/definition.schema.json's $defs) are answered as
  // written: where the engine accepts a null array, it comes back null (as hosts/runtime's
  // TestResponseArraysAreNotNullable says).
  const asWritten = new Set(Object.keys(JSON.parse(readFileSync(join(root, "engine/core/definition.schema.json"), "utf8")).$defs));
  assert.ok(asWritten.size > 0);
  let schema = "";
  const nullable = types.split("\n").filter((l) => {
    const named = /^ {8}(\w+): /.exec(l);
    if (named) schema = named[1]!;
    return !asWritten.has(schema) && /\[\]\s*\|\s*null|Array<.*>\s*\|\s*null|null\s*\|.*\[\]/.test(l);
  });
  assert.deepEqual(nullable, [], "arrays typed as possibly null");
  for (const set of ["RunStatus", "StepStatus", "AgentRunStatus", "ApprovalStatus", "FormPauseStatus", "DeliveryStatus", "GenerationStatus", "BundleStatus", "AccountStatus"]) {
    assert.match(types, new RegExp(`\\n\\s+${set}: "[a-z_]+"( \\| "[a-z_]+")*;\\n`), `${set} is a union of its statuses`);
  }
  // That no answer's status is a plain string is hosts/runtime's TestResponseStatusesAreNamedEnums
  // (two webhook payloads, LLMGenerationStatusEvent and WorkflowCreationStatusEvent, still have one).
});

// Compile-time checks: a status is its set, an answer's array is never null.
type Schemas = import("../src/integrator.js").components["schemas"];
const _completed: Schemas["RunAccepted"]["status"] = "completed";
const _steps: null extends Schemas["RunStatusDocument"]["steps"] ? never : true = true;
// A stored form is a FormSchema (its pages and fields typed), an agent's tool an
// AgentToolDeclaration, an SDK route that relays a runtime answer the runtime's type.
type FormFields = Schemas["ExternalForm"]["schema"]["pages"][number]["fields"];
const _field: FormFields[number] = { key: "email", type: "email", label: "Email" };
// @ts-expect-error: a field's type is one of form_schema_v1's
const _badField: FormFields[number] = { key: "x", type: "colour", label: "X" };
const _pauseForm: Schemas["FormPause"]["schema"] = { version: "form_schema_v1", pages: [] };
const _taskForm: NonNullable<Schemas["Task"]["schema"]>["pages"] = [];
const _tool: NonNullable<Schemas["ExecuteAgentRequest"]["tools"]>[number] = { type: "workflow", id: "wfl-1" };
// @ts-expect-error: a tool is a name or a declaration, not a number
const _badTool: NonNullable<Schemas["ExecuteAgentRequest"]["tools"]>[number] = 42;
type Paths = import("../src/integrator.js").paths;
const _sdkPause: Paths["/sdk/forms/run/{runId}/{stepId}"]["get"]["responses"][200]["content"]["application/json"]["status"] = "open";
void _completed;
void _steps;
void [_field, _badField, _pauseForm, _taskForm, _tool, _badTool, _sdkPause];
