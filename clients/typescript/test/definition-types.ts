// Compile-time checks of the workflow definition's types (tsc runs them with the tests):
// a built-in step kind's properties are typed, so a mistake in them does not compile.
import type { components } from "../src/integrator.js";

type Schemas = components["schemas"];

export const upsert: Schemas["CustomTableStep"] = {
  type: "custom-table",
  properties: { table: "customers", operation: "upsert", keys: ["email"], values: ["@input.email"], fields: { name: "{{input.name}}" } },
};

export const misspelt: Schemas["CustomTableStep"] = {
  type: "custom-table",
  // @ts-expect-error: operation is write, upsert or read
  properties: { table: "customers", operation: "wrte" },
};

export const form: Schemas["FormStep"] = {
  type: "PbotForm",
  // @ts-expect-error: expected_keys is an array of keys
  properties: { expected_keys: "email" },
};

export const definition: Schemas["WorkflowDefinition"] = {
  $schema: "https://gateway.example/schemas/workflow.json",
  actions: [
    upsert,
    { type: "loop", properties: { mode: "foreach", items: "@input.lines", steps: [upsert] } },
    { type: "PbotApproval", properties: { approver_role: "finance", comment: "Pay {{input.amount}}?" } },
    { type: "my_registered_action", properties: { anything: [1, 2] } }, // an action: any properties
  ],
  schedule: { every: "1d" },
};
