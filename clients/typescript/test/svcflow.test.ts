// The client against the real binary: the README's tour, an external form, a webhook
// registration, an agent (its model a fake OpenAI-compatible server) and the gateway's key
// routes, every call typed by the generated document.
import assert from "node:assert/strict";
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HTTPServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { gatewayClient, ok, ProblemError, runtimeClient, type Schema } from "../src/index.js";
import { root, serve, type Server } from "./server.js";

let srv: Server;
/** The organization acme's runtime key and the account's management token. */
let key = "";
let mgmt = "";

// Bounds, so that a delivery or an agent that never comes fails the test instead of hanging
// it: building the binary may take minutes on a cold cache.
before(async () => {
  // --allow-private-targets: the webhook receiver and the model are on this machine.
  srv = await serve("--allow-private-targets");
  const signup = await ok(gatewayClient(srv.gateway).POST("/gateway/signup", { body: { email: "ops@platform.example", name: "Platform" } }));
  mgmt = signup.management_token;
  const account = gatewayClient(srv.gateway, mgmt);
  await ok(account.POST("/gateway/orgs", { body: { id: "acme", name: "Acme" } }));
  const k = await ok(account.POST("/gateway/orgs/{orgId}/keys", { params: { path: { orgId: "acme" } }, body: { kind: "runtime" } }));
  key = k.secret ?? "";
}, { timeout: 600_000 });

after(async () => {
  await srv?.stop();
});

/** The onboarding workflow of the tour (examples/workflows/onboard.json). */
function onboard(): Schema<"WorkflowRequest"> {
  return JSON.parse(readFileSync(join(root, "examples/workflows/onboard.json"), "utf8"));
}

/** The two tables the onboarding workflow writes, created once. */
let tables: Promise<void> | undefined;
function tablesOnce(): Promise<void> {
  tables ??= (async () => {
    const svc = gatewayClient(srv.gateway, key);
    await ok(svc.POST("/custom-tables", { body: { name: "customers", fields: { email: "text", name: "text", tier: "text" } } }));
    await ok(svc.POST("/custom-tables", { body: { name: "notes", fields: { text: "text" } } }));
  })();
  return tables;
}

test("the README tour through the gateway: tables, a workflow, execute with ?wait=, its status and rows", { timeout: 120_000 }, async () => {
  await tablesOnce();
  const svc = gatewayClient(srv.gateway, key);
  const wf = await ok(svc.POST("/workflows", { body: onboard() }));
  assert.match(wf.id, /^wfl-/);

  const execute = () =>
    svc.POST("/workflows/{workflowId}/execute", {
      params: { path: { workflowId: wf.id }, query: { wait: "30s" }, header: { "Idempotency-Key": "signup-42" } },
      body: { input: { email: "ada@example.com", name: "Ada", tier: "gold" } },
    });
  const { data: run, response } = await execute();
  assert.equal(response.status, 200, "?wait= answers with the status document once the run ended");
  assert.ok(run);
  assert.equal(run.status, "completed");
  const again = await ok(execute());
  assert.equal(again.id, run.id, "the same Idempotency-Key and body: the same run");

  const status = await ok(svc.GET("/runs/{runId}/status", { params: { path: { runId: run.id } } }));
  assert.equal(status.status, "completed");
  assert.deepEqual(
    status.steps?.map((s) => s.status),
    ["completed", "completed", "completed"],
  );
  const evidence = await ok(svc.GET("/runs/{runId}/evidence", { params: { path: { runId: run.id } } }));
  assert.equal(evidence.run_id, run.id);
  const events = await ok(svc.GET("/runs/{runId}/events", { params: { path: { runId: run.id } } }));
  assert.ok(events.items?.some((e) => e.event === "workflow_run_completed"), JSON.stringify(events));
  const gold = await ok(svc.GET("/runs/{runId}/context/{contextKey}", { params: { path: { runId: run.id, contextKey: "gold" }, query: { limit: 10 } } }));
  assert.equal(gold.total, 1);
  // The same key whole, as NDJSON: one element a line, read as text (parseAs), not as JSON.
  const whole = await svc.GET("/runs/{runId}/context/{contextKey}", {
    params: { path: { runId: run.id, contextKey: "gold" } },
    headers: { Accept: "application/x-ndjson" },
    parseAs: "text",
  });
  assert.equal(whole.response.status, 200);
  assert.match(whole.response.headers.get("content-type") ?? "", /^application\/x-ndjson/);
  const lines = (whole.data ?? "").split("\n").filter((l) => l !== "");
  assert.deepEqual(lines.map((l) => JSON.parse(l)), [gold.value].flat());

  const rows = await ok(
    svc.GET("/custom-tables/{tableName}/rows", { params: { path: { tableName: "customers" }, query: { where: JSON.stringify({ tier: "gold" }) } } }),
  );
  assert.equal(rows.items?.length, 1);
  const notes = await ok(svc.GET("/custom-tables/{tableName}/rows", { params: { path: { tableName: "notes" } } }));
  assert.deepEqual(
    notes.items?.map((r) => r.data?.text),
    ["Welcome Ada (gold customers: 1)"],
  );

  // The same run, read from the runtime directly as the organization (X-Org-Id set once).
  const direct = runtimeClient(srv.runtime, "acme");
  const same = await ok(direct.GET("/runs/{runId}/status", { params: { path: { runId: run.id }, query: { context: false } } }));
  assert.equal(same.status, "completed");
});

test("an external form: public read and submit without a key start its workflow", { timeout: 120_000 }, async () => {
  await tablesOnce();
  const svc = gatewayClient(srv.gateway, key);
  const wf = await ok(svc.POST("/workflows", { body: { ...onboard(), name: "onboard-from-form" } }));
  const form = await ok(
    svc.POST("/external-forms", {
      body: {
        name: "Sign up",
        is_public: true,
        trigger_workflow_id: wf.id,
        schema: {
          version: "form_schema_v1",
          pages: [
            {
              id: "p1",
              fields: [
                { key: "email", type: "email", label: "Email", required: true },
                { key: "name", type: "text", label: "Name" },
              ],
            },
          ],
        },
        settings: { successMessage: "Thanks!" },
      },
    }),
  );
  assert.match(form.id, /^frm-/);

  const visitor = gatewayClient(srv.gateway); // no credential
  const shown = await ok(visitor.GET("/forms/public/{formId}", { params: { path: { formId: form.id } } }));
  assert.equal(shown.name, "Sign up");
  // The form comes back as a FormSchema: its pages and fields typed, as stored (normalised).
  assert.equal(form.schema.version, "form_schema_v1");
  assert.deepEqual(
    shown.schema.pages[0]?.fields.map((f) => [f.key, f.type, f.required ?? false]),
    [
      ["email", "email", true],
      ["name", "text", false],
    ],
  );
  const sent = await ok(
    visitor.POST("/forms/public/{formId}/submit", { params: { path: { formId: form.id } }, body: { email: "bob@example.com", name: "Bob" } }),
  );
  assert.equal(sent.success_message, "Thanks!");
  assert.ok(sent.triggered_run_id);

  const subs = await ok(svc.GET("/external-forms/{formId}/submissions", { params: { path: { formId: form.id } } }));
  assert.equal(subs.items?.length, 1);
  assert.equal(subs.items?.[0]?.triggered_run_id, sent.triggered_run_id);
});

/** receiver is a webhook target on this machine: each delivery's headers and raw body. */
function receiver(): Promise<{ url: string; next: () => Promise<{ headers: IncomingMessage["headers"]; body: string }>; close: () => void }> {
  const waiting: ((d: { headers: IncomingMessage["headers"]; body: string }) => void)[] = [];
  const got: { headers: IncomingMessage["headers"]; body: string }[] = [];
  const server: HTTPServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const d = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      const w = waiting.shift();
      if (w) w(d);
      else got.push(d);
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        next: () => {
          const d = got.shift();
          return d ? Promise.resolve(d) : new Promise((r) => waiting.push(r));
        },
        close: () => server.close(),
      });
    });
  });
}

test("a webhook registration: a completed run is delivered, signed with the secret", { timeout: 120_000 }, async () => {
  await tablesOnce();
  const hook = await receiver();
  try {
    const svc = gatewayClient(srv.gateway, key);
    const secret = "whsec-typescript-client-test";
    const reg = await ok(svc.POST("/webhooks", { body: { event: "workflow.completed", url: hook.url, secret } }));
    assert.equal(reg.event, "workflow_run_completed");
    assert.equal(reg.has_secret, true);

    const wf = await ok(svc.POST("/workflows", { body: { ...onboard(), name: "onboard-hooked" } }));
    const run = await ok(
      svc.POST("/workflows/{workflowId}/execute", { params: { path: { workflowId: wf.id } }, body: { input: { email: "cy@example.com", name: "Cy", tier: "silver" } } }),
    );
    const d = await hook.next();
    const ts = String(d.headers["x-svc-timestamp"]);
    const want = "sha256=" + createHmac("sha256", secret).update(`${ts}.${d.body}`).digest("hex");
    const sig = String(d.headers["x-svc-signature-timestamped"]);
    assert.ok(sig.length === want.length && timingSafeEqual(Buffer.from(sig), Buffer.from(want)), "X-Svc-Signature-Timestamped verifies");
    const delivery = JSON.parse(d.body) as { delivery_id: string; event: string; payload: { run_id?: string } };
    assert.equal(delivery.event, "workflow_run_completed");
    assert.equal(delivery.payload.run_id, run.id);

    const list = await ok(svc.GET("/webhooks/{webhookId}/deliveries", { params: { path: { webhookId: reg.id } } }));
    assert.ok(list.items?.some((x) => x.delivery_id === delivery.delivery_id), JSON.stringify(list));
  } finally {
    hook.close();
  }
});

/**
 * fakeModel speaks OpenAI's chat completions: it asks a person first, and completes once
 * the conversation holds a tool result (the person's answer).
 */
function fakeModel(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages: { role: string }[] };
      const answered = body.messages.some((m) => m.role === "tool");
      const call = answered
        ? { name: "__complete__", arguments: JSON.stringify({ answer: "written off", confidence: 0.9, match_claim: "none" }) }
        : { name: "__pause_for_human__", arguments: JSON.stringify({ question: "Write the 1.50 off?", options: ["write off", "chase"] }) };
      res.writeHead(200, { "Content-Type": "application/json" }).end(
        JSON.stringify({
          id: "chatcmpl-1",
          object: "chat.completion",
          created: 1741569952,
          model: "gpt-4o-mini",
          choices: [
            {
              index: 0,
              finish_reason: "tool_calls",
              message: { role: "assistant", content: "thinking", tool_calls: [{ id: "call_1", type: "function", function: call }] },
            },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
        }),
      );
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}/v1`, close: () => server.close() });
    });
  });
}

test("an agent: it asks a person, is resumed and completes (the organization's model a fake)", { timeout: 120_000 }, async () => {
  const model = await fakeModel();
  try {
    const svc = gatewayClient(srv.gateway, key);
    await ok(svc.POST("/org-config", { body: { key: "api:llm_api_key", value: "sk-typescript-test-key" } }));
    await ok(svc.POST("/org-config", { body: { key: "api:llm_base_url", value: model.url } }));

    const started = await svc.POST("/agents/execute", {
      body: { objective: "Reconcile the statement and explain the differences", tools: [] },
    });
    assert.equal(started.response.status, 200, "without ?async=true the answer waits for the result");
    const paused = started.data;
    assert.ok(paused);
    assert.equal(paused.status, "paused");
    assert.equal(paused.pause?.question, "Write the 1.50 off?");

    await ok(svc.POST("/agents/{agentId}/resume", { params: { path: { agentId: paused.agent_run_id } }, body: { human_input: "write it off", approved: true } }));
    let status: Schema<"AgentRun"> | undefined;
    for (let i = 0; i < 1200; i++) {
      status = await ok(svc.GET("/agents/{agentId}/status", { params: { path: { agentId: paused.agent_run_id } } }));
      if (status.status === "completed") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(status?.status, "completed", JSON.stringify(status));
    assert.equal(status?.final_answer, "written off");
    const trace = await ok(svc.GET("/agents/{agentId}/trace", { params: { path: { agentId: paused.agent_run_id } } }));
    assert.ok(trace.trace.length >= 2, JSON.stringify(trace));
  } finally {
    model.close();
  }
});

test("the gateway's keys: signup, management token, organization, runtime key, a runtime call, refusals", { timeout: 120_000 }, async () => {
  const anon = gatewayClient(srv.gateway);
  const signup = await ok(anon.POST("/gateway/signup", { body: { email: "dev@saas.example", name: "SaaS" } }));
  assert.match(signup.management_token, /^svc_mgmt_/);
  const account = gatewayClient(srv.gateway, signup.management_token);
  assert.equal((await ok(account.GET("/gateway/account"))).email, "dev@saas.example");

  const org = await ok(account.POST("/gateway/orgs", { body: { name: "Customer B" } }));
  assert.ok(org.id);
  const live = await ok(account.POST("/gateway/orgs/{orgId}/keys", { params: { path: { orgId: org.id } }, body: { kind: "runtime" } }));
  assert.match(live.secret ?? "", /^svc_live_/);
  const keys = await ok(account.GET("/gateway/orgs/{orgId}/keys", { params: { path: { orgId: org.id } } }));
  assert.deepEqual(
    keys.items?.map((k) => k.id),
    [live.id],
  );
  assert.equal(keys.items?.[0]?.secret, undefined, "a key is shown once");

  // A runtime call through the gateway, as the key's organization.
  const svc = gatewayClient(srv.gateway, live.secret);
  const wf = await ok(svc.POST("/workflows", { body: { name: "via-gateway", definition: { actions: [] } } }));
  const listed = await ok(svc.GET("/workflows"));
  assert.deepEqual(
    listed.items?.map((w) => w.id),
    [wf.id],
    "another organization's workflows are not this key's",
  );

  // Refusals, each with its code.
  await assert.rejects(ok(gatewayClient(srv.gateway, signup.management_token).GET("/workflows")), (e: ProblemError) => {
    assert.equal(e.status, 403);
    assert.equal(e.problem.code, "management_token_on_runtime_route");
    return true;
  });
  await assert.rejects(ok(gatewayClient(srv.gateway).GET("/workflows")), (e: ProblemError) => e.status === 401 && e.problem.code === "unauthorized");

  // Rotation: the new key works, the old one stops (no grace).
  const rotated = await ok(
    account.POST("/gateway/orgs/{orgId}/keys/{keyId}/rotate", { params: { path: { orgId: org.id, keyId: live.id } }, body: {} }),
  );
  await ok(gatewayClient(srv.gateway, rotated.secret).GET("/workflows"));
  await assert.rejects(ok(svc.GET("/workflows")), (e: ProblemError) => e.status === 401 && e.problem.code === "key_expired");

  const usage = await ok(account.GET("/gateway/orgs/{orgId}/usage", { params: { path: { orgId: org.id } } }));
  assert.ok(usage.items.some((u) => u.route_class === "workflows" && u.requests >= 2), JSON.stringify(usage));
});
