import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";

/** A 32-byte word from a short hex string, left-padded with zeros (topics, nonces, ABI words). */
export function word(hex: string): Hex {
  return `0x${hex.replace(/^0x/, "").padStart(64, "0")}`;
}

/** A database path in a new temporary directory (the file does not exist yet). */
export function freshDbPath(prefix = "flashindex-test-", name = "index.db"): string {
  return join(mkdtempSync(join(tmpdir(), prefix)), name);
}

/** The nice value of each of this process's threads (Linux: /proc/self/task/<tid>/stat, field 19). */
export const threadNices = (): number[] =>
  readdirSync("/proc/self/task").map((tid) =>
    Number(readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ")[16]),
  );

/**
 * Polls `check` until it returns a value (anything but undefined or false) and returns it; throws
 * naming `what` after `timeoutMs`. A check that throws ends the wait with its error (see `quietly`).
 */
export async function waitFor<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  what = "condition",
  pollMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** `check` with its errors counted as "not yet" (a database that does not exist yet, a file half written). */
export function quietly<T>(check: () => T): () => T | undefined {
  return () => {
    try {
      return check();
    } catch {
      return undefined;
    }
  };
}

/** An ERC-4337 v0.7 user operation of `sender` calling `callData`, every other field empty (what attribution reads is the callData). */
export function userOperation(sender: Hex, callData: Hex) {
  return {
    sender,
    nonce: 0n,
    initCode: "0x" as Hex,
    callData,
    accountGasLimits: word("0"),
    preVerificationGas: 0n,
    gasFees: word("0"),
    paymasterAndData: "0x" as Hex,
    signature: "0x" as Hex,
  };
}
