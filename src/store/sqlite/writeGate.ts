/**
 * Who writes next, between the main thread's connection (live writes: pre-confirmations, head
 * blocks, finality, orders) and the window writer thread's (bulk backfill windows). SQLite has one
 * write lock per file; left to SQLite's busy handler, a live write would sleep on the main thread
 * until a whole window committed (hundreds of milliseconds at 20,000 rows). With the gate, a live
 * write raises its flag; the writer thread sees it within WINDOW_YIELD_EVERY_ROWS rows, commits the
 * rows it has so far, and waits until the live write is done.
 *
 * Two 32-bit cells of shared memory, each written by one side only (Dekker's handshake: each side
 * raises its own flag, then reads the other's; sequentially consistent atomics guarantee that at
 * least one of them sees the other, and the writer thread is the one that always steps back), and a
 * third that counts live writes, so the writer thread knows when live writes are running.
 */
const LIVE_WRITE_WAITING = 0;
const WINDOW_IN_TRANSACTION = 1;
/** How many live writes went through the gate so far (wraps around; only its changes matter). */
const LIVE_WRITES = 2;

/**
 * How often, in rows, a window being inserted looks for a waiting live write (a look is an atomic
 * load), so looking often costs the backfill nothing measurable. 50 instead of 250 cut a live
 * write's wait for the writer to step aside to a fraction of a millisecond at the median
 * (`write-gate-50-rows` in scripts/bench/results/measurements.csv).
 */
export const WINDOW_YIELD_EVERY_ROWS = 50;
/**
 * A live write waits at most this long for the writer thread to step back; past it (a writer thread
 * stuck in one long statement), it goes ahead and SQLite's busy timeout takes over.
 */
export const LIVE_WRITE_MAX_WAIT_MS = 5_000;
/** The writer thread waits for the live write in slices of this length, re-checking the flag. */
const WINDOW_WAIT_SLICE_MS = 100;

export type WriteGateMemory = SharedArrayBuffer;

export const createWriteGateMemory = (): WriteGateMemory =>
  new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT);

/** The main thread's side: every write of its connection runs through `hold`. */
export function createLiveWriteGate(memory: WriteGateMemory) {
  const cells = new Int32Array(memory);
  let depth = 0;
  /** How long a write that began waiting at `since` may still wait for the window's transaction to end (0: go ahead). */
  const waitLeft = (since: number): number =>
    Atomics.load(cells, WINDOW_IN_TRANSACTION) === 1
      ? Math.max(0, since + LIVE_WRITE_MAX_WAIT_MS - performance.now())
      : 0;
  const done = () => {
    Atomics.store(cells, LIVE_WRITE_WAITING, 0);
    Atomics.notify(cells, LIVE_WRITE_WAITING);
  };
  return {
    memory,
    /** The window writer's thread has exited: a transaction it held open is gone with its connection. */
    windowWriterGone: () => {
      Atomics.store(cells, WINDOW_IN_TRANSACTION, 0);
      Atomics.notify(cells, WINDOW_IN_TRANSACTION);
    },
    hold<T>(work: () => T): T {
      // A write inside a write (one transaction calling a helper that also holds) is already first in line.
      if (depth > 0) return work();
      depth++;
      Atomics.add(cells, LIVE_WRITES, 1);
      Atomics.store(cells, LIVE_WRITE_WAITING, 1);
      try {
        const since = performance.now();
        for (let left = waitLeft(since); left > 0; left = waitLeft(since))
          Atomics.wait(cells, WINDOW_IN_TRANSACTION, 1, left);
        return work();
      } finally {
        depth--;
        done();
      }
    },
    /**
     * As `hold`, for work that writes from another thread (maintenance.ts): the window writer steps
     * aside until `work` settles, and this thread waits for it without blocking its event loop. The
     * caller keeps this thread's own writes out meanwhile (they would wait on SQLite's lock).
     */
    async holdWhile<T>(work: () => Promise<T>): Promise<T> {
      Atomics.store(cells, LIVE_WRITE_WAITING, 1);
      try {
        const since = performance.now();
        for (let left = waitLeft(since); left > 0; left = waitLeft(since)) {
          const wait = Atomics.waitAsync(cells, WINDOW_IN_TRANSACTION, 1, left);
          if (wait.async) await wait.value;
        }
        return await work();
      } finally {
        done();
      }
    },
  };
}

export type LiveWriteGate = ReturnType<typeof createLiveWriteGate>;

/** The window writer's side (on its thread): brackets each transaction it opens, and polls between rows. */
export type WindowGate = {
  /** Before BEGIN: waits while a live write is waiting or writing, then marks the window's transaction open. */
  enter: () => void;
  /** After COMMIT or ROLLBACK. */
  leave: () => void;
  /** Whether a live write is waiting for the lock (checked every WINDOW_YIELD_EVERY_ROWS rows). */
  liveWriteWaiting: () => boolean;
  /** How many live writes went through the gate so far: a change means live writes are running. */
  liveWrites: () => number;
};

export function createWindowGate(memory: WriteGateMemory): WindowGate {
  const cells = new Int32Array(memory);
  const leave = () => {
    Atomics.store(cells, WINDOW_IN_TRANSACTION, 0);
    Atomics.notify(cells, WINDOW_IN_TRANSACTION);
  };
  return {
    enter() {
      for (;;) {
        Atomics.store(cells, WINDOW_IN_TRANSACTION, 1);
        if (Atomics.load(cells, LIVE_WRITE_WAITING) === 0) return;
        leave();
        Atomics.wait(cells, LIVE_WRITE_WAITING, 1, WINDOW_WAIT_SLICE_MS);
      }
    },
    leave,
    liveWriteWaiting: () => Atomics.load(cells, LIVE_WRITE_WAITING) === 1,
    liveWrites: () => Atomics.load(cells, LIVE_WRITES),
  };
}

/** A gate for a writer with no other side (a window committed on the main thread itself). */
export const UNSHARED_WINDOW_GATE: WindowGate = {
  enter: () => undefined,
  leave: () => undefined,
  liveWriteWaiting: () => false,
  liveWrites: () => 0,
};
