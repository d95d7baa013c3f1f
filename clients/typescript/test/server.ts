// The real binary for the tests: built once with `go build` into a temporary directory and
// started as `svcflow serve` on a SQLite file there, both listeners on port 0; their
// addresses are read from its log, as hosts/svcflow's tests do.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The repository's root (this file is compiled to clients/typescript/dist/test/). */
export const root = fileURLToPath(new URL("../../../../", import.meta.url));

export interface Server {
  /** The runtime's base URL (X-Org-Id, the deployment's own network). */
  runtime: string;
  /** The gateway's base URL (keys). */
  gateway: string;
  /** Everything the process logged so far. */
  logs: string[];
  stop(): Promise<void>;
}

/** serve builds svcflow and starts `svcflow serve` with args added; stop() ends it. */
export async function serve(...args: string[]): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "svcflow-ts-"));
  const bin = join(dir, "svcflow");
  execFileSync(process.env.GO ?? "go", ["build", "-o", bin, "./hosts/svcflow"], { cwd: root, stdio: "inherit" });
  // No master key from the environment: serve makes one beside the SQLite file.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? "", HOME: dir };
  const child: ChildProcess = spawn(
    bin,
    ["serve", "--db", `sqlite:${join(dir, "svcflow.db")}`, "--runtime-addr", "127.0.0.1:0", "--gateway-addr", "127.0.0.1:0", ...args],
    { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"] },
  );
  const logs: string[] = [];
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const addrs = await new Promise<{ runtime: string; gateway: string }>((resolve, reject) => {
    let runtime = "";
    let gateway = "";
    createInterface({ input: child.stderr! }).on("line", (line) => {
      logs.push(line);
      const rt = /runtime listening"? addr=(\S+)/.exec(line);
      const gw = /gateway listening"? addr=(\S+)/.exec(line);
      if (rt) runtime = `http://${rt[1]}`;
      if (gw) gateway = `http://${gw[1]}`;
      if (runtime && gateway) resolve({ runtime, gateway });
    });
    child.once("exit", (code) => reject(new Error(`svcflow serve exited (${code}) before listening:\n${logs.join("\n")}`)));
  });
  return {
    ...addrs,
    logs,
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
