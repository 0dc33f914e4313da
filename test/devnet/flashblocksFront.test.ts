import { readdirSync, readFileSync } from "node:fs";
import { createWalletClient, http, numberToHex, pad, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import { TRANSFER_TOPIC } from "../../src/authorization/eip3009.js";
import type { RpcLogObject } from "../../src/devnet/front/rpcLogObject.js";
import type { Devnet, DevnetOptions } from "../../src/devnet/startDevnet.js";
import { httpRpc } from "../helpers/httpRpc.js";
import { useManualDevnet } from "../helpers/manualDevnet.js";
import { connectWsRpc, RpcAnswerError, type WsRpcClient } from "../helpers/wsRpcClient.js";

/** What a pre-confirmed log carries instead of a block hash (base/base flashblocks rpc/eth.rs). */
const ZERO_BLOCK_HASH = `0x${"0".repeat(64)}`;
/** Explicit gas: automine is off, so nothing may estimate against a block that is not there yet. */
const GAS = 200_000n;
/** Fresh recipients, so topic filters on them match only this file's payments. */
const RECIPIENTS = [1, 2, 3, 4].map((i) => pad(numberToHex(0xf00d00 + i), { size: 20 }) as Address);
const [R1, R2, R3, R4] = RECIPIENTS as [Address, Address, Address, Address];

type Block = { number: Hex; hash: Hex; parentHash: Hex; timestamp: Hex; transactions: Hex[] };
type LogFilter = {
  fromBlock?: string;
  toBlock?: string;
  address?: string;
  topics?: Array<string | string[] | null>;
};

const topicOf = (address: Address): Hex => pad(address.toLowerCase() as Hex);
const word = (value: bigint): Hex => numberToHex(value, { size: 32 });

/** A funded anvil key that sends token calls through the front, numbering its own nonces. */
function createSender(devnet: Devnet, keyIndex: number) {
  const account = privateKeyToAccount(devnet.privateKeys[keyIndex]!);
  const wallet = createWalletClient({ account, transport: http(devnet.httpUrl) });
  let nonce: number | undefined;
  const common = () =>
    ({ address: devnet.token, abi: flashTestTokenAbi, chain: null, gas: GAS }) as const;
  async function nextNonce(): Promise<number> {
    nonce ??= Number(
      await httpRpc<Hex>(devnet.httpUrl, "eth_getTransactionCount", [account.address, "latest"]),
    );
    return nonce++;
  }
  return {
    address: account.address,
    transfer: async (to: Address, value: bigint): Promise<Hex> =>
      wallet.writeContract({
        ...common(),
        functionName: "transfer",
        args: [to, value],
        nonce: await nextNonce(),
      }),
    emitTransfers: async (to: Address[], values: bigint[]): Promise<Hex> =>
      wallet.writeContract({
        ...common(),
        functionName: "emitTransfers",
        args: [to, values],
        nonce: await nextNonce(),
      }),
    /** After a transaction of ours was dropped, the chain's count is right again. */
    forgetNonce: () => void (nonce = undefined),
  };
}

/** A devnet in manual mode (helpers/manualDevnet.ts) shared by one describe, with this file's reads and WebSocket clients. */
function useDevnet(options: DevnetOptions = {}) {
  const base = useManualDevnet(options);
  const clients: WsRpcClient[] = [];
  const h = {
    get devnet(): Devnet {
      return base.devnet;
    },
    call: base.call,
    blockNumber: async () => Number(await h.call<Hex>("eth_blockNumber")),
    block: (number: number | "latest") =>
      h.call<Block>("eth_getBlockByNumber", [
        typeof number === "number" ? numberToHex(number) : number,
        false,
      ]),
    flashblock: () =>
      h.call<{ blockNumber: number; index: number; newLogs: number }>("devnet_flashblock"),
    mine: () => h.call<boolean>("devnet_mine"),
    getLogs: (filter: LogFilter) => h.call<RpcLogObject[]>("eth_getLogs", [filter]),
    pendingLogs: (filter: Omit<LogFilter, "fromBlock" | "toBlock"> = {}) =>
      h.getLogs({ ...filter, fromBlock: "pending", toBlock: "pending" }),
    receipt: (hash: Hex) =>
      h.call<{ blockHash: Hex; blockNumber: Hex; status: Hex } | null>(
        "eth_getTransactionReceipt",
        [hash],
      ),
    sender: (keyIndex: number) => createSender(h.devnet, keyIndex),
    connect: async () => {
      const client = await connectWsRpc(h.devnet.wsUrl);
      clients.push(client);
      return client;
    },
    stop: base.stop,
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
  });
  return h;
}

/** The fields a log keeps from pre-confirmation to its canonical block. */
const essence = (log: RpcLogObject) => ({
  address: log.address.toLowerCase(),
  topics: log.topics,
  data: log.data,
  blockNumber: log.blockNumber,
  transactionHash: log.transactionHash,
  transactionIndex: log.transactionIndex,
  logIndex: log.logIndex,
});

describe("eth_getLogs on the pending block", () => {
  const h = useDevnet();
  beforeEach(async () => void (await h.mine()));

  test("a transaction in the pool has no pending logs until a flashblock pre-confirms it", async () => {
    const alice = h.sender(1);
    const head = await h.block("latest");
    const hash = await alice.transfer(R1, 1_234n);
    expect(await h.pendingLogs()).toEqual([]);

    expect(await h.flashblock()).toMatchObject({
      blockNumber: Number(head.number) + 1,
      newLogs: 1,
    });
    const logs = await h.pendingLogs({ address: h.devnet.token });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      address: h.devnet.token.toLowerCase(),
      topics: [TRANSFER_TOPIC, topicOf(alice.address), topicOf(R1)],
      data: word(1_234n),
      blockHash: ZERO_BLOCK_HASH,
      blockNumber: numberToHex(Number(head.number) + 1),
      transactionHash: hash,
      transactionIndex: "0x0",
      logIndex: "0x0",
      removed: false,
    });
    expect(logs[0]!.blockTimestamp).toMatch(/^0x[0-9a-f]+$/);
    expect(Number(logs[0]!.blockTimestamp)).toBeGreaterThan(Number(head.timestamp));
  });

  test("logIndex counts across flashblocks, and the mined block holds the same logs; then the pending view is empty", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    const head = await h.blockNumber();
    const first = await alice.emitTransfers([R1, R2, R3], [1n, 2n, 3n]);
    const one = await h.flashblock();
    const second = await bob.transfer(R4, 4n);
    const two = await h.flashblock();
    const three = await h.flashblock(); // nothing new: the pending block stays as it was
    expect([one, two, three].map((f) => [f.blockNumber, f.newLogs])).toEqual([
      [head + 1, 3],
      [head + 1, 1],
      [head + 1, 0],
    ]);
    expect([two.index, three.index]).toEqual([one.index + 1, one.index + 2]);

    const pending = await h.pendingLogs();
    expect(pending.map((l) => [l.transactionHash, l.transactionIndex, l.logIndex])).toEqual([
      [first, "0x0", "0x0"],
      [first, "0x0", "0x1"],
      [first, "0x0", "0x2"],
      [second, "0x1", "0x3"],
    ]);

    await h.mine();
    const block = await h.block(head + 1);
    expect(block.transactions).toEqual([first, second]);
    const canonical = await h.getLogs({
      fromBlock: numberToHex(head + 1),
      toBlock: numberToHex(head + 1),
    });
    expect(canonical.map(essence)).toEqual(pending.map(essence));
    expect(canonical.every((l) => l.blockHash === block.hash && !l.removed)).toBe(true);
    // The block is mined with the timestamp its pre-confirmations announced.
    expect(block.timestamp).toBe(pending[0]!.blockTimestamp);

    expect(await h.pendingLogs()).toEqual([]);
    expect(await h.getLogs({ fromBlock: numberToHex(head + 1), toBlock: "pending" })).toEqual(
      canonical,
    );
  });
});

describe("eth_getLogs ranges that end at pending", () => {
  const h = useDevnet();
  beforeEach(async () => void (await h.mine()));

  test("a numeric fromBlock with toBlock pending gives the canonical logs, then the pending ones", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    const confirmed = await alice.transfer(R1, 10n);
    await h.mine();
    const block = await h.blockNumber();
    const preconfirmed = await bob.transfer(R2, 20n);
    await h.flashblock();

    const logs = await h.getLogs({
      fromBlock: numberToHex(block),
      toBlock: "pending",
      address: h.devnet.token,
    });
    expect(
      logs.map((l) => [l.transactionHash, Number(l.blockNumber), l.blockHash === ZERO_BLOCK_HASH]),
    ).toEqual([
      [confirmed, block, false],
      [preconfirmed, block + 1, true],
    ]);
    // The block range bounds only the canonical part: the pending log is there even from an old block.
    const wide = await h.getLogs({ fromBlock: "0x0", toBlock: "pending", address: h.devnet.token });
    expect(
      wide.filter((l) => l.blockHash === ZERO_BLOCK_HASH).map((l) => l.transactionHash),
    ).toEqual([preconfirmed]);
    expect(wide.filter((l) => l.transactionHash === confirmed)).toHaveLength(1);
  });

  test("a pending log whose block is already canonical appears once, by (blockNumber, logIndex)", async () => {
    const alice = h.sender(1);
    const head = await h.blockNumber();
    const hash = await alice.transfer(R1, 30n);
    await h.flashblock();
    // Mined behind the sequencer's back: the canonical block arrives before the pending view moves on,
    // the race a Base node's de-duplication is for.
    await h.call("evm_mine");
    expect(await h.blockNumber()).toBe(head + 1);
    expect(
      (await h.pendingLogs()).map((l) => [l.transactionHash, Number(l.blockNumber), l.logIndex]),
    ).toEqual([[hash, head + 1, "0x0"]]);

    const logs = await h.getLogs({ fromBlock: numberToHex(head + 1), toBlock: "pending" });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      transactionHash: hash,
      blockNumber: numberToHex(head + 1),
      logIndex: "0x0",
    });
    expect(logs[0]!.blockHash).not.toBe(ZERO_BLOCK_HASH);
  });

  test("a plain numeric or latest range never includes pending logs", async () => {
    const alice = h.sender(1);
    const head = await h.blockNumber();
    const hash = await alice.transfer(R1, 40n);
    await h.flashblock();
    expect(await h.pendingLogs()).toHaveLength(1);

    for (const filter of [
      { fromBlock: "0x0", toBlock: "latest" },
      { fromBlock: numberToHex(head), toBlock: numberToHex(head) },
      // The pending block's own number is still a plain range.
      { fromBlock: "0x0", toBlock: numberToHex(head + 1) },
      { fromBlock: "0x0" },
      { fromBlock: "pending", toBlock: "latest" },
    ]) {
      const logs = await h.getLogs(filter);
      if (filter.fromBlock === "0x0")
        expect(logs.length, JSON.stringify(filter)).toBeGreaterThan(0); // the mints, at least
      expect(
        logs.filter((l) => l.transactionHash === hash || l.blockHash === ZERO_BLOCK_HASH),
      ).toEqual([]);
    }
  });

  test("the address and topics filter applies to the pending part", async () => {
    const alice = h.sender(1);
    const before = await h.blockNumber();
    const toR2 = await alice.transfer(R2, 50n);
    await h.mine();
    const toR3 = await alice.transfer(R3, 60n);
    const toR4 = await alice.transfer(R4, 70n);
    await h.flashblock();
    const hashes = (logs: RpcLogObject[]) => logs.map((l) => l.transactionHash);

    expect(hashes(await h.pendingLogs({ address: h.devnet.token }))).toEqual([toR3, toR4]);
    expect(await h.pendingLogs({ address: R1 })).toEqual([]);
    expect(hashes(await h.pendingLogs({ topics: [TRANSFER_TOPIC, null, topicOf(R4)] }))).toEqual([
      toR4,
    ]);
    expect(
      hashes(await h.pendingLogs({ topics: [null, null, [topicOf(R2), topicOf(R3)]] })),
    ).toEqual([toR3]);
    expect(await h.pendingLogs({ topics: [TRANSFER_TOPIC, topicOf(R1)] })).toEqual([]);
    const mixed = await h.getLogs({
      fromBlock: numberToHex(before),
      toBlock: "pending",
      topics: [null, null, [topicOf(R2), topicOf(R3)]],
    });
    expect(hashes(mixed)).toEqual([toR2, toR3]);
  });
});

describe('eth_getTransactionCount "pending"', () => {
  const h = useDevnet();

  test("counts pre-confirmed transactions but not pool-only ones, and latest counts neither", async () => {
    const alice = h.sender(1);
    const count = async (tag: string) =>
      Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, tag]));
    await h.mine();
    const start = await count("latest");
    expect(await count("pending")).toBe(start);

    await alice.transfer(R1, 1n);
    // anvil alone would count the pool; a Base node never looks at a mempool.
    expect(await count("pending")).toBe(start);
    await h.flashblock();
    expect([await count("latest"), await count("pending")]).toEqual([start, start + 1]);
    await alice.transfer(R1, 2n);
    await h.flashblock();
    await alice.transfer(R1, 3n);
    expect([await count("latest"), await count("pending")]).toEqual([start, start + 2]);

    await h.mine();
    expect([await count("latest"), await count("pending")]).toEqual([start + 3, start + 3]);
  });

  test("reads run beside each other and beside steps queued among them; every one answers one state", async () => {
    const alice = h.sender(1);
    await h.mine();
    const start = Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, "latest"]));
    await alice.transfer(R1, 4n);
    // Reads, a flashblock and a block interleaved: each read sees the state before or after a
    // step, never a step's middle, and no read waits on a step that waits on it.
    const reads = () =>
      Array.from({ length: 10 }, () =>
        h.call<Hex>("eth_getTransactionCount", [alice.address, "pending"]).then(Number),
      );
    const first = reads();
    const flashblock = h.flashblock();
    const second = reads();
    const mined = h.mine();
    const third = reads();
    const counts = await Promise.all([...first, ...second, ...third]);
    await Promise.all([flashblock, mined]);
    expect(counts.every((n) => n === start || n === start + 1)).toBe(true);
    expect(counts.slice(-10).every((n) => n === start + 1)).toBe(true);
  });
});

describe("the pendingLogs subscription", () => {
  const h = useDevnet();
  beforeEach(async () => void (await h.mine()));
  afterEach(
    async () =>
      void (await h.call("devnet_setPendingLogsMode", [{ shape: "single", repeat: false }])),
  );

  test("by default sends one log object per notification, only the newest flashblock's logs", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    const client = await h.connect();
    const sub = await client.subscribe("pendingLogs");
    const first = await alice.emitTransfers([R1, R2], [1n, 2n]);
    await h.flashblock();
    await client.barrier();
    expect(
      sub.results.map((r) => [
        Array.isArray(r),
        (r as RpcLogObject).transactionHash,
        (r as RpcLogObject).logIndex,
      ]),
    ).toEqual([
      [false, first, "0x0"],
      [false, first, "0x1"],
    ]);

    const second = await bob.transfer(R3, 3n);
    await h.flashblock();
    await h.flashblock(); // nothing new: nothing sent
    await client.barrier();
    const later = sub.results.slice(2) as RpcLogObject[];
    expect(later.map((l) => [l.transactionHash, l.logIndex, l.blockHash, l.removed])).toEqual([
      [second, "0x2", ZERO_BLOCK_HASH, false],
    ]);
  });

  test('in "array" mode sends one array per flashblock holding every pending log so far', async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    expect(await h.call("devnet_setPendingLogsMode", [{ shape: "array" }])).toEqual({
      shape: "array",
      repeat: false,
    });
    const client = await h.connect();
    const sub = await client.subscribe("pendingLogs");
    const first = await alice.transfer(R1, 1n);
    await h.flashblock();
    const second = await bob.transfer(R2, 2n);
    await h.flashblock();
    await h.flashblock();
    await client.barrier();

    expect(sub.results.every(Array.isArray)).toBe(true);
    expect(
      sub.results.map((r) => (r as RpcLogObject[]).map((l) => [l.transactionHash, l.logIndex])),
    ).toEqual([
      [[first, "0x0"]],
      [
        [first, "0x0"],
        [second, "0x1"],
      ],
      [
        [first, "0x0"],
        [second, "0x1"],
      ],
    ]);
  });

  test("with repeat on, every notification arrives twice", async () => {
    const alice = h.sender(1);
    await h.call("devnet_setPendingLogsMode", [{ shape: "single", repeat: true }]);
    const client = await h.connect();
    const sub = await client.subscribe("pendingLogs");
    const hash = await alice.emitTransfers([R1, R2], [1n, 2n]);
    await h.flashblock();
    await client.barrier();

    const keys = sub.results.map(
      (r) => `${(r as RpcLogObject).transactionHash}:${(r as RpcLogObject).logIndex}`,
    );
    expect(keys.sort()).toEqual([`${hash}:0x0`, `${hash}:0x0`, `${hash}:0x1`, `${hash}:0x1`]);
  });

  test("a filter by address and topics applies to the notifications", async () => {
    const alice = h.sender(1);
    const client = await h.connect();
    const toR2 = await client.subscribe("pendingLogs", {
      address: h.devnet.token,
      topics: [TRANSFER_TOPIC, null, topicOf(R2)],
    });
    const elsewhere = await client.subscribe("pendingLogs", { address: R1 });
    const all = await client.subscribe("pendingLogs", {});
    const hash = await alice.emitTransfers([R1, R2, R3], [1n, 2n, 3n]);
    await h.flashblock();
    await client.barrier();

    expect(all.results).toHaveLength(3);
    expect(
      toR2.results.map((r) => [(r as RpcLogObject).transactionHash, (r as RpcLogObject).logIndex]),
    ).toEqual([[hash, "0x1"]]);
    expect(elsewhere.results).toEqual([]);
  });

  test("an unknown shape is refused, and eth_subscribe over HTTP is refused", async () => {
    await expect(h.call("devnet_setPendingLogsMode", [{ shape: "batch" }])).rejects.toMatchObject({
      code: -32602,
    });
    await expect(h.call("eth_subscribe", ["pendingLogs"])).rejects.toMatchObject({ code: -32601 });
  });
});

describe("a dropped pre-confirmation", () => {
  const h = useDevnet();

  test("is never retracted: the pending view keeps it until the block, which then lacks it", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    await h.mine();
    const client = await h.connect();
    const pendingSub = await client.subscribe("pendingLogs");
    const logsSub = await client.subscribe("logs", { address: h.devnet.token });
    const head = await h.blockNumber();
    const doomed = await alice.transfer(R1, 1n);
    const kept = await bob.transfer(R2, 2n);
    await h.flashblock();

    expect(await h.call("devnet_dropPreconfirmed", [doomed])).toBe(true);
    await h.flashblock();
    await client.barrier();
    expect((await h.pendingLogs()).map((l) => l.transactionHash)).toEqual([doomed, kept]);
    // Pre-confirmed, so still counted in the pending nonce.
    expect(Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, "pending"]))).toBe(
      Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, "latest"])) + 1,
    );

    await h.mine();
    await client.barrier();
    const block = await h.block(head + 1);
    expect(block.transactions).toEqual([kept]);
    expect(await h.receipt(doomed)).toBeNull();
    expect((await h.receipt(kept))?.status).toBe("0x1");
    expect(await h.pendingLogs()).toEqual([]);

    // One pre-confirmation each, and nothing afterwards took the dropped one back.
    expect((pendingSub.results as RpcLogObject[]).map((l) => l.transactionHash)).toEqual([
      doomed,
      kept,
    ]);
    expect((logsSub.results as RpcLogObject[]).map((l) => [l.transactionHash, l.removed])).toEqual([
      [kept, false],
    ]);
    expect(
      client.notifications.some((n) => (n.result as { removed?: boolean }).removed === true),
    ).toBe(false);

    alice.forgetNonce();
    const again = await alice.transfer(R1, 1n);
    await h.mine();
    expect((await h.receipt(again))?.status).toBe("0x1");
  });
});

describe("reorgs seen through the logs and newHeads subscriptions", () => {
  const h = useDevnet();

  async function watch() {
    const client = await h.connect();
    const logs = await client.subscribe("logs", { address: h.devnet.token });
    const heads = await client.subscribe("newHeads");
    return { client, logs: logs.results as RpcLogObject[], heads: heads.results as Block[] };
  }

  test("devnet_reorg(1) re-sends the old block's logs with removed: true, then the new block's", async () => {
    const alice = h.sender(1);
    const { client, logs, heads } = await watch();
    const hash = await alice.emitTransfers([R1, R2], [1n, 2n]);
    await h.mine();
    await client.barrier();
    const old = await h.block("latest");
    expect(logs.map((l) => [l.transactionHash, l.blockHash, l.removed])).toEqual([
      [hash, old.hash, false],
      [hash, old.hash, false],
    ]);
    const [seenLogs, seenHeads] = [logs.length, heads.length];

    expect(await h.call("devnet_reorg", [1])).toEqual({ depth: 1, reincluded: 1 });
    await client.barrier();
    const replaced = await h.block("latest");
    expect(replaced.number).toBe(old.number);
    expect(replaced.hash).not.toBe(old.hash);
    expect(replaced.parentHash).toBe(old.parentHash);
    expect(replaced.transactions).toEqual([hash]);

    expect(
      logs
        .slice(seenLogs)
        .map((l) => [l.transactionHash, l.blockNumber, l.blockHash, l.logIndex, l.removed]),
    ).toEqual([
      [hash, old.number, old.hash, "0x0", true],
      [hash, old.number, old.hash, "0x1", true],
      [hash, old.number, replaced.hash, "0x0", false],
      [hash, old.number, replaced.hash, "0x1", false],
    ]);
    expect(heads.slice(seenHeads).map((b) => [b.number, b.hash])).toEqual([
      [old.number, replaced.hash],
    ]);
    expect((await h.receipt(hash))?.blockHash).toBe(replaced.hash);
  });

  test("devnet_reorg(2) retracts both blocks before announcing the new branch", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    const { client, logs, heads } = await watch();
    const a = await alice.transfer(R1, 1n);
    await h.mine();
    const b = await bob.transfer(R2, 2n);
    await h.mine();
    await client.barrier();
    const top = await h.blockNumber();
    const oldBlocks = [await h.block(top - 1), await h.block(top)];
    const [seenLogs, seenHeads] = [logs.length, heads.length];

    expect(await h.call("devnet_reorg", [2])).toEqual({ depth: 2, reincluded: 2 });
    await client.barrier();
    const newBlocks = [await h.block(top - 1), await h.block(top)];
    expect(newBlocks.map((x) => x.transactions)).toEqual([[a], [b]]);
    expect(newBlocks[1]!.parentHash).toBe(newBlocks[0]!.hash);
    expect(newBlocks.map((x) => x.hash)).not.toContain(oldBlocks[0]!.hash);
    expect(newBlocks.map((x) => x.hash)).not.toContain(oldBlocks[1]!.hash);

    const after = logs.slice(seenLogs);
    const removed = after.filter((l) => l.removed);
    const added = after.filter((l) => !l.removed);
    expect(after.findLastIndex((l) => l.removed)).toBeLessThan(after.findIndex((l) => !l.removed));
    expect(removed.map((l) => [l.transactionHash, l.blockHash]).sort()).toEqual(
      [
        [a, oldBlocks[0]!.hash],
        [b, oldBlocks[1]!.hash],
      ].sort(),
    );
    expect(added.map((l) => [l.transactionHash, l.blockNumber, l.blockHash])).toEqual([
      [a, newBlocks[0]!.number, newBlocks[0]!.hash],
      [b, newBlocks[1]!.number, newBlocks[1]!.hash],
    ]);
    expect(heads.slice(seenHeads).map((x) => x.hash)).toEqual(newBlocks.map((x) => x.hash));
  });

  test("devnet_reorg refuses a depth that is not a positive integer", async () => {
    const head = await h.block("latest");
    await expect(h.call("devnet_reorg", [0])).rejects.toMatchObject({ code: -32602 });
    await expect(h.call("devnet_reorg", ["1"])).rejects.toMatchObject({ code: -32602 });
    expect((await h.block("latest")).hash).toBe(head.hash);
  });
});

describe("injected faults", () => {
  const h = useDevnet();
  afterEach(async () => void (await h.call("devnet_setFaults", [{}])));

  /** The status and body of one plain HTTP JSON-RPC request. */
  async function post(method: string, params: unknown[] = []) {
    const response = await fetch(h.devnet.httpUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
    });
    return { status: response.status, body: await response.text() };
  }

  test("maxBlockRange refuses a wider eth_getLogs with reth's message and serves a narrow one", async () => {
    while ((await h.blockNumber()) < 8) await h.mine();
    const head = await h.blockNumber();
    await h.call("devnet_setFaults", [{ maxBlockRange: 5 }]);
    await expect(
      h.getLogs({ fromBlock: numberToHex(head - 5), toBlock: numberToHex(head) }),
    ).rejects.toMatchObject({
      code: -32602,
      message: "query exceeds max block range 5",
    });
    await expect(h.getLogs({ fromBlock: "0x0", toBlock: "latest" })).rejects.toThrow(
      "query exceeds max block range 5",
    );
    expect(
      await h.getLogs({ fromBlock: numberToHex(head - 4), toBlock: numberToHex(head) }),
    ).toBeInstanceOf(Array);
    expect(await h.getLogs({ fromBlock: numberToHex(head - 4) })).toBeInstanceOf(Array);
  });

  test("maxResults refuses a large answer and suggests a range that is then served", async () => {
    const alice = h.sender(1);
    const first = (await h.blockNumber()) + 1;
    for (let i = 0; i < 4; i++) {
      await alice.emitTransfers([R1, R2], [1n, 2n]);
      await h.mine();
    }
    const all = await h.getLogs({
      fromBlock: numberToHex(first),
      toBlock: "latest",
      address: h.devnet.token,
    });
    expect(all).toHaveLength(8);

    await h.call("devnet_setFaults", [{ maxResults: 5 }]);
    const error = await h
      .getLogs({ fromBlock: numberToHex(first), toBlock: "latest", address: h.devnet.token })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RpcAnswerError);
    const match = /^query exceeds max results 5, retry with the range (\d+)-(\d+)$/.exec(
      (error as Error).message,
    );
    expect(match, (error as Error).message).not.toBeNull();
    const [from, to] = [Number(match![1]), Number(match![2])];
    expect(from).toBe(first);
    expect(to).toBeGreaterThanOrEqual(from);

    const served = await h.getLogs({
      fromBlock: numberToHex(from),
      toBlock: numberToHex(to),
      address: h.devnet.token,
    });
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(5);
    expect(served).toEqual(all.slice(0, served.length));
  });

  test("errorRate 1 answers every HTTP request with 429 or 503 while admin calls still work", async () => {
    await h.call("devnet_setFaults", [{ errorRate: 1 }]);
    const head = await h.blockNumber().catch(() => undefined);
    expect(head).toBeUndefined();
    const statuses = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const { status, body } = await post("eth_blockNumber");
      statuses.add(status);
      if (status === 429) expect(JSON.parse(body)).toMatchObject({ error: { code: 429 } });
    }
    expect([...statuses].every((s) => s === 429 || s === 503)).toBe(true);

    const mined = await post("devnet_mine");
    expect(mined.status).toBe(200);
    expect(JSON.parse(mined.body)).toMatchObject({ result: true });
    expect((await post("devnet_setFaults", [{}])).status).toBe(200);
    expect((await post("eth_blockNumber")).status).toBe(200);
  });

  test("proxyErrors answers range and size limits as Base's public endpoint does: an HTTP error status with a JSON-RPC body", async () => {
    const alice = h.sender(1);
    for (let i = 0; i < 3; i++) {
      await alice.emitTransfers([R1, R2], [1n, 2n]);
      await h.mine();
    }
    const head = await h.blockNumber();
    await h.call("devnet_setFaults", [{ maxBlockRange: 2, proxyErrors: true }]);
    const wide = await post("eth_getLogs", [
      { fromBlock: numberToHex(head - 2), toBlock: numberToHex(head) },
    ]);
    expect(wide.status).toBe(400);
    expect(JSON.parse(wide.body)).toMatchObject({
      id: 7,
      error: { code: -32602, message: "block range greater than 2 max" },
    });
    expect(
      (
        await post("eth_getLogs", [
          { fromBlock: numberToHex(head - 1), toBlock: numberToHex(head) },
        ])
      ).status,
    ).toBe(200);

    await h.call("devnet_setFaults", [{ maxResults: 1, proxyErrors: true }]);
    const large = await post("eth_getLogs", [
      { fromBlock: numberToHex(head), toBlock: numberToHex(head), address: h.devnet.token },
    ]);
    expect(large.status).toBe(500);
    expect(JSON.parse(large.body)).toMatchObject({
      error: { code: -32020, message: "backend response too large" },
    });

    await h.call("devnet_setFaults", [{ errorRate: 1, proxyErrors: true }]);
    const outage = await post("eth_blockNumber");
    expect([429, 503]).toContain(outage.status);
    expect(JSON.parse(outage.body).error.message).toMatch(
      /no backend is currently healthy to serve traffic|over rate limit/,
    );
    await expect(h.call("devnet_setFaults", [{ proxyErrors: "yes" }])).rejects.toMatchObject({
      code: -32602,
    });
  });

  test("latencyMs delays every HTTP answer by at least that long", async () => {
    await h.call("devnet_setFaults", [{ latencyMs: 250 }]);
    const started = performance.now();
    expect(await h.call("eth_chainId")).toBe("0x2105");
    expect(performance.now() - started).toBeGreaterThanOrEqual(245);
  });

  test("an unknown fault or an out-of-range value is refused and the faults in force stay", async () => {
    await h.call("devnet_setFaults", [{ maxBlockRange: 1 }]);
    await expect(h.call("devnet_setFaults", [{ errorRat: 1 }])).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining("unknown fault errorRat"),
    });
    await expect(h.call("devnet_setFaults", [{ errorRate: 1.5 }])).rejects.toMatchObject({
      code: -32602,
    });
    await expect(h.call("devnet_setFaults", [[]])).rejects.toMatchObject({ code: -32602 });
    await expect(h.getLogs({ fromBlock: "0x0", toBlock: "0x1" })).rejects.toThrow(
      "query exceeds max block range 1",
    );
  });

  test("devnet_disconnectWebSockets closes every open socket, and a new connection works", async () => {
    const [one, two] = [await h.connect(), await h.connect()];
    await one.subscribe("newHeads");
    await two.subscribe("logs");
    expect(await h.call("devnet_disconnectWebSockets")).toBe(2);
    await Promise.all([one.closed, two.closed]);
    await expect(one.request("eth_chainId")).rejects.toThrow();

    const three = await h.connect();
    const heads = await three.subscribe("newHeads");
    await h.mine();
    await heads.waitFor((results) => results.length === 1);
    expect((heads.results[0] as Block).number).toBe(numberToHex(await h.blockNumber()));
  });
});

describe("pending state spanning several blocks (devnet_setPendingLag)", () => {
  const h = useDevnet();
  beforeEach(async () => void (await h.mine()));
  afterEach(async () => {
    await h.call("devnet_setPendingLag", [0]);
    await h.mine();
  });

  test("the pending view keeps the earlier block's pre-confirmed logs until the canonical chain catches up with the newest", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    const head = await h.blockNumber();
    expect(await h.call("devnet_setPendingLag", [1])).toBe(1);
    const first = await alice.transfer(R1, 1n);
    await h.flashblock();
    await h.mine(); // block head+1 is sealed, but the canonical chain stays behind
    expect(await h.blockNumber()).toBe(head);
    const second = await bob.transfer(R2, 2n);
    expect(await h.flashblock()).toMatchObject({ blockNumber: head + 2, index: 0, newLogs: 1 });
    const view = async () =>
      (await h.pendingLogs()).map((l) => [
        l.transactionHash,
        Number(l.blockNumber),
        l.logIndex,
        l.blockHash,
      ]);
    expect(await view()).toEqual([
      [first, head + 1, "0x0", ZERO_BLOCK_HASH],
      [second, head + 2, "0x0", ZERO_BLOCK_HASH],
    ]);
    // Both pending blocks count in the pending nonce.
    expect(Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, "pending"]))).toBe(
      Number(await h.call<Hex>("eth_getTransactionCount", [alice.address, "latest"])) + 1,
    );

    await h.mine(); // block head+1 becomes canonical; head+2 is still pending
    expect(await h.blockNumber()).toBe(head + 1);
    const block = await h.block(head + 1);
    expect(block.transactions).toEqual([first]);
    expect(await view()).toEqual([
      [first, head + 1, "0x0", ZERO_BLOCK_HASH],
      [second, head + 2, "0x0", ZERO_BLOCK_HASH],
    ]);
    // A range ending at pending shows the canonical log once, by (blockNumber, logIndex).
    const mixed = await h.getLogs({
      fromBlock: numberToHex(head + 1),
      toBlock: "pending",
      address: h.devnet.token,
    });
    expect(mixed.map((l) => [l.transactionHash, l.blockHash])).toEqual([
      [first, block.hash],
      [second, ZERO_BLOCK_HASH],
    ]);

    await h.call("devnet_setPendingLag", [0]);
    await h.mine(); // catches up with the newest pending block (head+3, empty): the pending view empties
    expect(await h.blockNumber()).toBe(head + 3);
    expect((await h.block(head + 2)).transactions).toEqual([second]);
    expect(await h.pendingLogs()).toEqual([]);
  });

  test("a lag that is not a non-negative integer is refused", async () => {
    await expect(h.call("devnet_setPendingLag", [-1])).rejects.toMatchObject({ code: -32602 });
    await expect(h.call("devnet_setPendingLag", ["1"])).rejects.toMatchObject({ code: -32602 });
  });
});

describe("a pending view cleared after a flashblock gap (devnet_clearPending)", () => {
  const h = useDevnet();

  test("answers [] in the middle of the block with no notification; the block still holds what was pre-confirmed", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    await h.mine();
    const head = await h.blockNumber();
    const client = await h.connect();
    const sub = await client.subscribe("pendingLogs");
    const first = await alice.transfer(R1, 1n);
    await h.flashblock();
    expect(await h.pendingLogs()).toHaveLength(1);

    expect(await h.call("devnet_clearPending")).toBe(true);
    expect(await h.pendingLogs()).toEqual([]);
    expect(await h.receipt(first)).toBeNull();
    const second = await bob.transfer(R2, 2n);
    await h.flashblock();
    await client.barrier();
    expect(await h.pendingLogs()).toEqual([]);
    expect((sub.results as RpcLogObject[]).map((l) => l.transactionHash)).toEqual([first]);
    expect(
      client.notifications.some((n) => (n.result as { removed?: boolean }).removed === true),
    ).toBe(false);

    await h.mine();
    expect((await h.block(head + 1)).transactions).toEqual([first, second]);
    // The next block is pre-confirmed as usual.
    const third = await alice.transfer(R3, 3n);
    await h.flashblock();
    expect((await h.pendingLogs()).map((l) => l.transactionHash)).toEqual([third]);
    await h.mine();
  });
});

describe("a pre-confirmed transaction that lands a block later (devnet_deferPreconfirmed)", () => {
  const h = useDevnet();

  test("the block is mined without it, and the rebuilt pending block pre-confirms it again", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    await h.mine();
    const head = await h.blockNumber();
    const kept = await alice.transfer(R1, 1n);
    const late = await bob.transfer(R2, 2n);
    await h.flashblock();
    expect(
      (await h.pendingLogs()).map((l) => [l.transactionHash, Number(l.blockNumber), l.logIndex]),
    ).toEqual([
      [kept, head + 1, "0x0"],
      [late, head + 1, "0x1"],
    ]);
    const client = await h.connect();
    const sub = await client.subscribe("pendingLogs");
    expect(await h.call("devnet_deferPreconfirmed", [late])).toBe(true);

    await h.mine();
    expect((await h.block(head + 1)).transactions).toEqual([kept]);
    expect(await h.blockNumber()).toBe(head + 1);
    const rebuilt = await h.pendingLogs();
    expect(
      rebuilt.map((l) => [l.transactionHash, Number(l.blockNumber), l.logIndex, l.blockHash]),
    ).toEqual([[late, head + 2, "0x0", ZERO_BLOCK_HASH]]);
    expect(await h.receipt(late)).toMatchObject({
      blockHash: ZERO_BLOCK_HASH,
      blockNumber: numberToHex(head + 2),
    });
    await client.barrier();
    // Announced again for the later block; nothing retracted the first announcement.
    expect(
      (sub.results as RpcLogObject[]).map((l) => [l.transactionHash, Number(l.blockNumber)]),
    ).toEqual([[late, head + 2]]);

    await h.mine();
    expect((await h.block(head + 2)).transactions).toEqual([late]);
    expect(await h.receipt(late)).toMatchObject({
      blockNumber: numberToHex(head + 2),
      status: "0x1",
    });
    expect(await h.call("devnet_deferPreconfirmed", [late])).toBe(false);
  });

  test("the sender's later transactions wait with it, none lost: they land together in the next block, in nonce order", async () => {
    const alice = h.sender(3);
    const bob = h.sender(4);
    await h.mine();
    const head = await h.blockNumber();
    const late = await alice.transfer(R1, 1n);
    const next = await alice.transfer(R2, 2n);
    const last = await alice.transfer(R3, 3n);
    const other = await bob.transfer(R4, 4n);
    await h.flashblock();
    expect(await h.call("devnet_deferPreconfirmed", [late])).toBe(true);

    await h.mine();
    // Without its predecessor, neither later transaction of alice's can be in the block.
    expect((await h.block(head + 1)).transactions).toEqual([other]);
    await h.mine();
    expect((await h.block(head + 2)).transactions).toEqual([late, next, last]);
  });
});

describe("the newFlashblocks subscription", () => {
  const h = useDevnet();

  test("sends the whole pending block at every flashblock, header hash zero, the same number repeating", async () => {
    const [alice, bob] = [h.sender(1), h.sender(2)];
    await h.mine();
    const latest = await h.block("latest");
    const client = await h.connect();
    const sub = await client.subscribe("newFlashblocks");
    const first = await alice.transfer(R1, 1n);
    await h.flashblock();
    const second = await bob.transfer(R2, 2n);
    await h.flashblock();
    await h.flashblock();
    await client.barrier();

    const blocks = sub.results as Array<
      Omit<Block, "transactions"> & {
        transactions: Array<{ hash: Hex; blockHash: Hex; blockNumber: Hex }>;
      }
    >;
    expect(
      blocks.map((b) => [b.number, b.hash, b.parentHash, b.timestamp === blocks[0]!.timestamp]),
    ).toEqual(
      Array(3).fill([numberToHex(Number(latest.number) + 1), ZERO_BLOCK_HASH, latest.hash, true]),
    );
    expect(blocks.map((b) => b.transactions.map((t) => t.hash))).toEqual([
      [first],
      [first, second],
      [first, second],
    ]);
    expect(
      blocks[2]!.transactions.every(
        (t) => t.blockHash === ZERO_BLOCK_HASH && t.blockNumber === blocks[2]!.number,
      ),
    ).toBe(true);
    await h.mine();
  });
});

describe("with real timers", () => {
  const h = useDevnet({ blockTimeMs: 600, flashblockIntervalMs: 100 });

  test("a payment is pre-confirmed first, then mined into the block it was announced for", async () => {
    const alice = h.sender(1);
    const client = await h.connect();
    const pending = await client.subscribe("pendingLogs", { address: h.devnet.token });
    const logs = await client.subscribe("logs", { address: h.devnet.token });
    const hash = await alice.transfer(R1, 5n);
    const ofHash = (results: unknown[]) =>
      (results as RpcLogObject[]).filter((l) => l.transactionHash === hash);
    await logs.waitFor((results) => ofHash(results).length === 1);

    const [pre] = ofHash(pending.results);
    const [mined] = ofHash(logs.results);
    expect(pre).toBeDefined();
    expect(pre!.blockHash).toBe(ZERO_BLOCK_HASH);
    expect(mined!.blockHash).not.toBe(ZERO_BLOCK_HASH);
    expect(essence(mined!)).toEqual(essence(pre!));
    const order = client.notifications.map((n) => n.result);
    expect(order.indexOf(pre)).toBeLessThan(order.indexOf(mined));
  });
});

describe("stop()", () => {
  const h = useDevnet();

  test.skipIf(process.platform !== "linux")(
    "closes open sockets, stops serving, and leaves no anvil process",
    async () => {
      const anvilPort = Number(new URL(h.devnet.anvilUrl).port);
      const pids = anvilPidsOnPort(anvilPort);
      expect(pids).toHaveLength(1);
      const pid = pids[0]!;
      expect(() => process.kill(pid, 0)).not.toThrow();
      const client = await h.connect();
      await client.subscribe("newHeads");

      await h.stop();
      await client.closed;
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
      expect(anvilPidsOnPort(anvilPort)).toEqual([]);
      await expect(fetch(h.devnet.httpUrl, { method: "POST", body: "{}" })).rejects.toThrow();
      await expect(fetch(h.devnet.anvilUrl, { method: "POST", body: "{}" })).rejects.toThrow();
    },
  );
});

/** Anvil processes started with `--port <port>` (Linux /proc), to find the one behind a devnet. */
function anvilPidsOnPort(port: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    const portAt = args.indexOf("--port");
    if (args[0]?.endsWith("anvil") === true && portAt >= 0 && args[portAt + 1] === String(port))
      pids.push(Number(entry));
  }
  return pids;
}
