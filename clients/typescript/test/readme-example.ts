// README.md's ten lines ("The OpenAPI documents and the clients"), kept here verbatim
// between the markers so that tsc checks them against the generated types; readme.test.ts
// checks that the README shows these lines.
import { gatewayClient, ok } from "../src/index.js";

export async function readmeExample(): Promise<void> {
  // README begin
  const svc = gatewayClient("http://localhost:8081", process.env.SVC_KEY); // svc_live_…
  const wf = await ok(svc.POST("/workflows", { body: { name: "hello", definition: { actions: [] } } }));
  const run = await ok(svc.POST("/workflows/{workflowId}/execute", {
    params: { path: { workflowId: wf.id }, query: { wait: "30s" } }, body: { input: { name: "Ada" } } }));
  const status = await ok(svc.GET("/runs/{runId}/status", { params: { path: { runId: run.id } } }));
  console.log(status.status, status.steps); // typed; a 4xx throws ProblemError {status, problem.code}
  // README end
}
