import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import type { Hex } from "viem";

export type AnvilOptions = {
  chainId?: number;
  /** Seconds between blocks (fractions allowed); omitted: mine on every transaction. */
  blockTime?: number;
  /** Mine only on evm_mine / anvil_mine. */
  noMining?: boolean;
  extraArgs?: readonly string[];
};

export type Anvil = {
  httpUrl: string;
  wsUrl: string;
  port: number;
  chainId: number;
  process: ChildProcess;
  stop: () => Promise<void>;
};

/** The well-known keys of anvil's default mnemonic (test only; never hold value). */
export const ANVIL_PRIVATE_KEYS: readonly Hex[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
];

/** How long anvil may take to answer its first request. */
const STARTUP_TIMEOUT_MS = 15_000;
/** After SIGTERM, how long before SIGKILL. */
const STOP_GRACE_MS = 2_000;

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** The anvil binary shipped inside the npm package for this platform (no download, no PATH lookup). */
export function anvilBinaryPath(): string {
  const require = createRequire(import.meta.url);
  const platform = { linux: "linux", darwin: "darwin", win32: "win32" }[process.platform as string];
  const arch = { x64: "amd64", arm64: "arm64" }[process.arch as string];
  const packageJson = require.resolve(`@foundry-rs/anvil-${platform}-${arch}/package.json`);
  return join(dirname(packageJson), "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))));
    });
  });
}

/**
 * Starts anvil on a free port (retrying if another process takes the port first) and waits until
 * it answers. The child is killed when this process exits, so no anvil outlives its owner.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const chainId = options.chainId ?? 8453;
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    try {
      return await launch(port, chainId, options);
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(`anvil did not start: ${(lastError as Error).message}`);
}

async function launch(port: number, chainId: number, options: AnvilOptions): Promise<Anvil> {
  const args = ["--port", String(port), "--host", "127.0.0.1", "--chain-id", String(chainId), "--silent"];
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  if (options.noMining) args.push("--no-mining");
  args.push(...(options.extraArgs ?? []));
  const child = spawn(anvilBinaryPath(), args, { stdio: ["ignore", "ignore", "pipe"], detached: false });
  running.add(child);
  installExitHook();
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => {
    running.delete(child);
    resolve(code);
  }));
  const httpUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`anvil exited with code ${child.exitCode}: ${stderr.trim()}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error("anvil did not answer in time");
    }
    try {
      const response = await fetch(httpUrl, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' });
      if (response.ok) break;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };
  return { httpUrl, wsUrl: `ws://127.0.0.1:${port}`, port, chainId, process: child, stop };
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of running) child.kill("SIGKILL");
  });
}
