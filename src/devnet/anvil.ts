import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import type { Hex } from "viem";
import { FatalError } from "../errors/base.js";
import { PortTakenError } from "../errors/devnet.js";

export type AnvilOptions = {
  /** Default 8453 (Base mainnet), so presets and typed-data domains look like production. */
  chainId?: number;
  /** Seconds between blocks (fractions allowed); omitted: mine on every transaction. */
  blockTime?: number;
  /** Mine only on evm_mine / anvil_mine. */
  noMining?: boolean;
  extraArgs?: readonly string[];
  /** How long anvil may take to answer (default 15 s): loading a large `--load-state` dump takes longer. */
  startupTimeoutMs?: number;
};

export type Anvil = {
  httpUrl: string;
  wsUrl: string;
  port: number;
  chainId: number;
  process: ChildProcess;
  /** SIGTERM, SIGKILL after a grace period; resolves once the process is gone. Idempotent. */
  stop: () => Promise<void>;
};

/** The first 10 keys of anvil's default mnemonic ("test test … junk"); public, never hold value. */
export const ANVIL_PRIVATE_KEYS = [
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
] as const satisfies readonly Hex[];

const DEFAULT_CHAIN_ID = 8453;
/** How long anvil may take to answer its first eth_chainId (it usually needs ~100 ms). */
const STARTUP_TIMEOUT_MS = 15_000;
const STARTUP_POLL_INTERVAL_MS = 25;
/** After SIGTERM, how long before SIGKILL: the bound on writing a `--state` chain at the end. */
const STOP_GRACE_MS = 2_000;
/** How often the exit hook looks whether a stopped anvil has ended. */
const EXIT_POLL_INTERVAL_MS = 10;
/** Port races are rare (another process binding our just-freed port); a few tries suffice. */
const PORT_ATTEMPTS = 5;
/** Anvil exits with this code at once when its port is taken. */
const EXIT_CODE_PORT_TAKEN = 1;
const STDERR_KEEP_CHARS = 4_000;

/** Anvils started by this process that have not exited yet, with their watchdogs. */
const running = new Map<ChildProcess, ChildProcess | undefined>();
let exitHookInstalled = false;

/** Path of the anvil binary inside the npm package for this platform (no PATH lookup, no download). */
export function anvilBinaryPath(): string {
  const binary = process.platform === "win32" ? "anvil.exe" : "anvil";
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  // The platform package is an optional dependency of @foundry-rs/anvil: resolve it from there,
  // so a nested install (node_modules/@foundry-rs/anvil/node_modules/…) is found too.
  const anvilPackage = createRequire(import.meta.url).resolve("@foundry-rs/anvil/package.json");
  const fromAnvil = createRequire(anvilPackage);
  const candidates: string[] = [];
  try {
    const platformPackage = fromAnvil.resolve(
      `@foundry-rs/anvil-${process.platform}-${arch}/package.json`,
    );
    candidates.push(join(dirname(platformPackage), "bin", binary));
  } catch {
    // Not installed for this platform; the package's postinstall may have put a binary in dist/.
  }
  candidates.push(join(dirname(anvilPackage), "..", "dist", binary));
  const found = candidates.find((path) => existsSync(path));
  if (found === undefined)
    throw new FatalError("No anvil binary in node_modules", {
      details: `looked at ${candidates.join(", ")}`,
    });
  return found;
}

/**
 * Starts anvil on a free 127.0.0.1 port and resolves once it answers eth_chainId.
 * The child dies with this process, even when this process is killed by a signal.
 */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  for (let attempt = 1; ; attempt++) {
    const port = await findFreePort();
    try {
      return await launch(port, chainId, options);
    } catch (error) {
      // Between closing our probe socket and anvil binding, someone else may take the port.
      if (!(error instanceof PortTakenError) || attempt >= PORT_ATTEMPTS) throw error;
    }
  }
}

async function launch(port: number, chainId: number, options: AnvilOptions): Promise<Anvil> {
  const args = [
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
    "--chain-id",
    String(chainId),
    "--silent",
  ];
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  if (options.noMining === true) args.push("--no-mining");
  args.push(...(options.extraArgs ?? []));

  // A process group of its own: a terminal's Ctrl-C or `kill -- -PGID` reaches this process (which
  // stops anvil after its last write) but not anvil, which would otherwise exit under it.
  const child = spawn(anvilBinaryPath(), args, {
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let stderr = "";
  child.stderr?.on(
    "data",
    (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_KEEP_CHARS)),
  );
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  if (child.pid !== undefined) {
    const watchdog = startOrphanWatchdog(child.pid);
    running.set(child, watchdog);
    installExitHook();
    void exited.then(() => {
      running.delete(child);
      watchdog?.kill("SIGKILL");
    });
  }

  const httpUrl = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined)
      return exited;
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };

  const outcome = await Promise.race([
    waitUntilAnswering(httpUrl, options.startupTimeoutMs ?? STARTUP_TIMEOUT_MS).then(
      () => "ready" as const,
    ),
    exited.then(() => "exited" as const),
    spawnError,
  ]);
  if (outcome === "ready")
    return { httpUrl, wsUrl: `ws://127.0.0.1:${port}`, port, chainId, process: child, stop };
  await stop();
  if (outcome instanceof Error) throw new FatalError("Could not start anvil", { cause: outcome });
  if (outcome === "exited" && child.exitCode === EXIT_CODE_PORT_TAKEN) {
    throw new PortTakenError(`Anvil could not bind port ${port}`, { details: stderr.trim() });
  }
  throw new FatalError(
    `Anvil exited during start-up (code ${child.exitCode}, signal ${child.signalCode})`,
    { details: stderr.trim() },
  );
}

async function waitUntilAnswering(httpUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
  while (Date.now() < deadline) {
    try {
      const response = await fetch(httpUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, STARTUP_POLL_INTERVAL_MS));
  }
  throw new FatalError(`Anvil did not answer within ${timeoutMs} ms`);
}

/** A port the OS just handed out for 127.0.0.1; free now, not promised to stay free. */
async function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

/**
 * Stops the anvils still running when this process exits without stopping them (process.exit, an
 * uncaught error, exitAtOnce's forced exit): SIGTERM, on which an anvil started with `--state`
 * writes its chain, then a wait of up to STOP_GRACE_MS for it to end before SIGKILL. The wait
 * blocks, as an "exit" listener must: the chain file is whole before this process is gone, so a
 * restart right after it loads the whole chain.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    const children = [...running];
    for (const [child] of children) signalAnvil(child, "SIGTERM");
    const deadline = Date.now() + STOP_GRACE_MS;
    for (const [child, watchdog] of children) {
      while (child.pid !== undefined && isRunning(child.pid) && Date.now() < deadline)
        blockFor(EXIT_POLL_INTERVAL_MS);
      signalAnvil(child, "SIGKILL");
      watchdog?.kill("SIGKILL");
    }
  });
}

/** Sends `signal` to a child that may have exited meanwhile (then there is nothing to signal). */
function signalAnvil(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    child.kill(signal);
  } catch {
    // Already gone.
  }
}

/**
 * Whether our child `pid` has not exited yet. It cannot be reaped while the event loop is blocked,
 * so an exited child stays a zombie: Linux says so in /proc/PID/stat (state Z). Elsewhere the
 * process is taken as running until the deadline.
 */
function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT" && existsSync("/proc/self/stat"))
      return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

/** Blocks the thread for `ms` (an "exit" listener cannot wait for a timer). */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * A tiny `sh` holding the read end of a pipe from us. Death by signal (vitest stops its workers
 * with SIGTERM, then SIGKILL) skips "exit" handlers, but the kernel still closes the pipe:
 * `read` sees EOF and the watchdog stops anvil. Killed by us as soon as anvil exits, so it
 * never signals a reused pid (only a pid freed within STOP_GRACE_MS of our death could be hit).
 */
function startOrphanWatchdog(pid: number): ChildProcess | undefined {
  if (process.platform === "win32") return undefined;
  // SIGTERM first: an anvil started with --state dumps its chain on SIGTERM, so a devnet survives
  // a kill -9 of the daemon; SIGKILL after STOP_GRACE_MS if it lingers.
  const script = `read _ ; kill -TERM "$0" 2>/dev/null; sleep ${STOP_GRACE_MS / 1_000}; kill -KILL "$0" 2>/dev/null`;
  // Its own process group too: a Ctrl-C to ours must not end it while anvil runs.
  const watchdog = spawn("sh", ["-c", script, String(pid)], {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  watchdog.on("error", () => {
    // No sh: fall back to the exit hook alone.
  });
  // The watchdog must not keep this process alive on its own; anvil's own handle does that.
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return watchdog;
}
