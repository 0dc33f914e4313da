import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { requestDeadline } from "../../src/ops/requestDeadline.js";

// A real garbage collection on demand: the bug this guards against only shows when one runs mid-request.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const hanging = createServer(() => undefined);
let url: string;
beforeAll(async () => {
  await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`;
});
afterAll(() => {
  hanging.closeAllConnections();
  hanging.close();
});

/** POSTs to the server that never answers, collecting garbage every 10 ms meanwhile; what the fetch settled with. */
async function postWhileCollecting(signal: AbortSignal): Promise<string> {
  const collecting = setInterval(gc, 10);
  try {
    const outcome = fetch(url, { method: "POST", body: "{}", signal }).then(
      () => "answered",
      () => "aborted",
    );
    const stuck = new Promise<string>((resolve) =>
      setTimeout(() => resolve("still waiting"), 5_000).unref(),
    );
    return await Promise.race([outcome, stuck]);
  } finally {
    clearInterval(collecting);
  }
}

describe("a request's deadline", () => {
  test("fires through garbage collections (AbortSignal.any with AbortSignal.timeout does not, nodejs/node#57736)", async () => {
    for (let i = 0; i < 3; i++) {
      const deadline = requestDeadline(100, new AbortController().signal);
      expect(await postWhileCollecting(deadline.signal)).toBe("aborted");
      expect(deadline.timedOut()).toBe(true);
      deadline.dispose();
    }
  });

  test("follows the shutdown signal, and says it did not time out", async () => {
    const shutdown = new AbortController();
    const deadline = requestDeadline(60_000, shutdown.signal);
    setTimeout(() => shutdown.abort(new Error("shutting down")), 50);
    expect(await postWhileCollecting(deadline.signal)).toBe("aborted");
    expect(deadline.timedOut()).toBe(false);
    expect(deadline.signal.reason).toEqual(new Error("shutting down"));
    deadline.dispose();
  });
});
