// The svcflow client: the types of every route (src/integrator.ts, generated from
// openapi/integrator.yaml by openapi-typescript: `make client-ts`), called through
// openapi-fetch, with the credential or the organization set once.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";

import type { components, operations, paths } from "./integrator.js";

export type { components, operations, paths };

/** A schema of the integrator's document by name: `Schema<"Problem">`. */
export type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

/** The gateway's own routes, which a runtime reached directly does not serve. */
type GatewayRoutes = Extract<
  keyof paths,
  `/gateway/${string}` | `/sdk/${string}` | `/admin/${string}` | `/licensing/${string}` | `/forms/public/${string}/auth/${string}`
>;

/** The runtime's routes, as a runtime reached directly serves them. */
export type RuntimePaths = Omit<paths, GatewayRoutes>;

/** What both clients take besides the address: another fetch, more headers. */
export type Options = Omit<ClientOptions, "baseUrl">;

/**
 * The media types a client's answers are typed by: JSON and RFC 9457 problems. A route
 * that also answers a stream (a context key as NDJSON or CSV, by Accept) keeps its JSON
 * type here; read a stream with `parseAs: "stream"` and the response's body.
 */
export type JSONMedia = "application/json" | "application/problem+json";

/**
 * A client of the gateway, sending `credential` as `Authorization: Bearer` on every request:
 * a runtime key (svc_live_…) for the runtime routes, the management token (svc_mgmt_…) for
 * /gateway/, a publishable key (svc_pk_…) or a session (svc_sess_…) for /sdk/, the operator
 * token for /admin/; none for signup, licensing and public forms.
 */
export function gatewayClient(baseUrl: string, credential?: string, options: Options = {}): Client<paths, JSONMedia> {
  const headers = new Headers(options.headers as HeadersInit | undefined);
  if (credential) headers.set("Authorization", `Bearer ${credential}`);
  return createClient<paths, JSONMedia>({ ...options, baseUrl, headers });
}

/**
 * A client of a runtime reached directly (its own network: `svcflow serve`'s runtime
 * address), sending the organization as X-Org-Id on every request. Through the gateway,
 * the key names the organization instead: use gatewayClient.
 */
export function runtimeClient(baseUrl: string, org: string, options: Options = {}): Client<RuntimePaths, JSONMedia> {
  const headers = new Headers(options.headers as HeadersInit | undefined);
  headers.set("X-Org-Id", org);
  return createClient<RuntimePaths, JSONMedia>({ ...options, baseUrl, headers });
}

/** An answer of 400 or more: its status and its RFC 9457 problem (`code` says which). */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Schema<"Problem">,
    readonly response: Response,
  ) {
    super(`${status} ${problem.code ?? ""}: ${problem.detail ?? problem.title ?? ""}`);
    this.name = "ProblemError";
  }
}

/**
 * The data of an answer, or a ProblemError: `const wf = await ok(svc.POST("/workflows", …))`.
 */
export async function ok<T, E>(call: Promise<{ data?: T; error?: E; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    const problem = (error ?? { title: response.statusText, status: response.status, code: "" }) as Schema<"Problem">;
    throw new ProblemError(response.status, problem, response);
  }
  return data as T;
}
