import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startAnvil, type Anvil } from "../../src/devnet/anvil.js";
import { anvilConfigFiles, runCli, spawnCli } from "../helpers/cli.js";

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const ROOT = join(import.meta.dirname, "..", "..");
/** Blocks on the chain: enough that a rate-limited backfill of 10-block windows takes several seconds. */
const CHAIN_BLOCKS = 3_000;
/** Genesis two days ago, one block per second after it: the newest block is still over a day old. */
const GENESIS_TIMESTAMP_S = Math.floor(Date.now() / 1_000) - 2 * 86_400;
let anvil: Anvil;
let dir: string;

async function rpc(method: string, params: unknown[]): Promise<unknown> {
  const response = await fetch(anvil.httpUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return ((await response.json()) as { result: unknown }).result;
}

beforeAll(async () => {
  anvil = await startAnvil({
    chainId: 8453,
    extraArgs: ["--timestamp", String(GENESIS_TIMESTAMP_S)],
  });
  await rpc("anvil_mine", [`0x${CHAIN_BLOCKS.toString(16)}`, "0x1"]);
  dir = mkdtempSync(join(tmpdir(), "flashindex-progress-"));
}, 30_000);
afterAll(() => anvil?.stop());

const configFile = anvilConfigFiles(() => ({ dir, rpcUrl: anvil.httpUrl, token: USDC }));

function metricValue(body: string, name: string): number {
  const line = body.split("\n").find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

describe("seeing a backfill's progress", () => {
  test("a short backfill without a terminal logs its JSON progress line (blocks, logs/s, window, ETA)", async () => {
    const result = await runCli([
      "backfill",
      "--config",
      configFile("short"),
      "--from",
      "0",
      "--to",
      "20",
    ]);
    expect(result.code, result.stderr).toBe(0);
    const progress = result.stderr
      .split("\n")
      .filter((l) => l.includes('"Backfill progressed"'))
      .map((l) => JSON.parse(l) as Record<string, number>);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toMatchObject({
      blocks_done: 21,
      blocks_total: 21,
      eta_seconds: 0,
      window_blocks: expect.any(Number),
      logs_per_second: expect.any(Number),
    });
    expect(result.stderr).not.toContain("backfill [");
  }, 30_000);

  test("a backfill on a terminal draws a live progress bar instead of the JSON progress line", async () => {
    const command = [
      "node",
      "--import",
      "tsx",
      "src/cli/main.ts",
      "backfill",
      "--config",
      configFile("tty"),
      "--from",
      "0",
      "--to",
      "500",
    ].join(" ");
    // script(1) gives the CLI a pseudo-terminal, as when a user runs it.
    const child = spawn("script", ["-qec", command, "/dev/null"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code, output).toBe(0);
    // Drawn in place: the line starts over at column 1 (cli-progress moves the cursor there)...
    expect(output).toMatch(/\x1b\[1Gbackfill \[[█░]{30}\] \d+% \d+\/501 blocks/);
    // ...and ends full; a log line written meanwhile ends with a newline, and the bar is drawn again below it.
    expect(output, JSON.stringify(output.slice(-600))).toMatch(
      /(?:\r|\n|\x1b\[1G)backfill \[█{30}\] 100% 501\/501 blocks \| 0 logs, \d+ logs\/s \| ETA 0s \| window \d+/,
    );
    expect(output).not.toContain('"Backfill progressed"');
  }, 30_000);

  test("while catching up, /metrics reports the chain head and the lag in seconds of the newest indexed block", async () => {
    const path = configFile("metrics", {
      rpc: {
        http: [anvil.httpUrl],
        requestsPerSecond: 20,
        retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 2 },
      },
      backfill: { windowBlocks: 10, concurrency: 1 },
      metrics: { enabled: true, port: 0 },
      attribution: { enabled: false },
    });
    const daemon = spawnCli(["start", "--config", path]);
    try {
      let url: string | undefined;
      for (let i = 0; i < 200 && url === undefined; i++) {
        url = /"url":"(http:\/\/[^"]+)"/.exec(daemon.output().stdout)?.[1];
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(url, daemon.output().stdout + daemon.output().stderr).toBeDefined();
      const head = Number(await rpc("eth_blockNumber", []));
      let body = "";
      for (let i = 0; i < 100; i++) {
        body = await (await fetch(`${url}/metrics`)).text();
        if (metricValue(body, "flashindex_sync_lag_seconds") > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      // Still catching up: the checkpoint is below the head.
      expect(metricValue(body, "flashindex_backfill_checkpoint_block")).toBeLessThan(head);
      expect(metricValue(body, "flashindex_chain_head_block")).toBe(head);
      // The newest indexed block is at least a day old (genesis two days ago, one block a second).
      expect(metricValue(body, "flashindex_sync_lag_seconds")).toBeGreaterThan(86_400);
    } finally {
      daemon.kill("SIGKILL");
      await new Promise((resolve) => daemon.once("exit", resolve));
    }
  }, 60_000);
});
