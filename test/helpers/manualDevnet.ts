import { afterAll, beforeAll, expect } from "vitest";
import { startDevnet, type Devnet, type DevnetOptions } from "../../src/devnet/startDevnet.js";
import { httpRpc } from "./httpRpc.js";

/**
 * A devnet in manual mode (no timers: time moves only by devnet_flashblock / devnet_mine) for the
 * tests of one file or describe: started before them, stopped after, and nothing the front
 * swallowed (a failed head sync, a bad simulation: `onError`) may have happened meanwhile.
 * `stop()`: a test that stops the devnet itself; nothing is checked after it.
 */
export function useManualDevnet(options: DevnetOptions = {}) {
  const errors: unknown[] = [];
  let devnet: Devnet | undefined;
  let stopped = false;
  beforeAll(async () => {
    devnet = await startDevnet({
      blockTimeMs: 0,
      flashblockIntervalMs: 0,
      port: 0,
      onError: (error) => errors.push(error),
      ...options,
    });
  });
  afterAll(async () => {
    if (stopped) return;
    await devnet?.stop();
    expect(errors).toEqual([]);
  });
  const h = {
    get devnet(): Devnet {
      if (devnet === undefined) throw new Error("devnet not started");
      return devnet;
    },
    /** One JSON-RPC call to the front over plain HTTP (helpers/httpRpc.ts). */
    call: <T = unknown>(method: string, params: unknown[] = []) =>
      httpRpc<T>(h.devnet.httpUrl, method, params),
    stop: async () => {
      stopped = true;
      await devnet?.stop();
    },
  };
  return h;
}
