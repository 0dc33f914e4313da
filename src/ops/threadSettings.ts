/*
 * When work moves off the main thread, and what each worker thread gets: every threshold, nice value
 * and heap limit in one place. Five threads may run: the main thread (RPC, WebSockets, live writes,
 * the HTTP server), the decode thread (sync/historical/windowDecoder.ts), the window writer, the maintenance
 * thread and the WAL checkpointer (store/sqlite/threads/). The store's map of threads and connections
 * is at the top of store/sqlite/sqliteStore.ts.
 */

/**
 * What runs beside the work at hand. `daemon`: live work shares the process (pre-confirmations,
 * heads, the HTTP server), so bulk work gives way for the CPU and never holds the event loop;
 * `batch`: nothing else waits (`flashindex backfill`, the daemon's first backfill before it goes
 * live), so bulk work takes the fastest path.
 */
export type ProcessMode = "daemon" | "batch";

// Decode thread

/**
 * A backfill that has decoded this many logs (two windows' worth) decodes the rest on a thread of
 * its own: a short catch-up is not worth starting one (`decode-thread-min-logs` in
 * scripts/bench/results/measurements.csv).
 */
export const DECODE_THREAD_MIN_LOGS = 4_000;
/**
 * An answer this large (about 400 logs) goes to the decode thread even before DECODE_THREAD_MIN_LOGS:
 * decoding it on the main thread would hold up the live path (a flashblock's burst of
 * pre-confirmations) for milliseconds.
 */
export const DECODE_THREAD_MIN_ANSWER_BYTES = 256 * 1024;
/**
 * The decode thread's heap holds one window's answer and rows at a time (the answers it receives are
 * buffers outside it); a larger heap was no faster (`decode-thread-heap` in
 * scripts/bench/results/measurements.csv).
 */
export const DECODE_THREAD_HEAP_MB = 48;
/** Its young generation: everything it makes (parsed JSON, checked logs, rows) dies within one window. */
export const DECODE_THREAD_YOUNG_MB = 12;
/**
 * Its nice value (Linux) in the daemon: on two cores, pre-confirmations waited for the CPU the thread
 * took sending and decoding windows (`decode-thread-nice` in scripts/bench/results/measurements.csv).
 * The thread still gets a core whenever live work does not need it.
 */
export const DECODE_THREAD_NICE_IN_DAEMON = 19;

// Window writer thread

/**
 * A backfill of this many blocks or more commits on the writer thread from its start; a shorter one
 * moves there once it has fetched WRITER_THREAD_MIN_LOGS logs (a few dense blocks can hold a
 * million). Decoding and writing switch at the same count.
 */
export const WRITER_THREAD_MIN_BLOCKS = 2_000;
export const WRITER_THREAD_MIN_LOGS = DECODE_THREAD_MIN_LOGS;
/**
 * A window this large goes to the writer thread even before WRITER_THREAD_MIN_LOGS: inserting it on
 * the main thread would hold up the live path, as decoding it would (the same size, about 400 logs).
 */
export const WRITER_THREAD_MIN_WINDOW_LOGS = 400;
/** The writer thread holds at most the windows in flight (a few thousand rows each): a small heap of its own. */
export const WRITER_THREAD_HEAP_MB = 64;
/** Its young generation: windows arrive as whole cloned arrays and are short-lived; a small nursery suffices. */
export const WRITER_THREAD_YOUNG_MB = 8;
/**
 * Its nice value (Linux) in the daemon, as the decode thread's: the main thread, which receives and
 * commits pre-confirmations, then waits less for a core, at a small cost to the backfill's pace
 * (`window-writer-nice` in scripts/bench/results/measurements.csv).
 */
export const WINDOW_WRITER_NICE_IN_DAEMON = 19;

// Maintenance thread

/**
 * From this many logs stored, a bulk load's end (staged attribution's move, the reader indexes'
 * build) runs on the maintenance thread even in batch mode: one index then takes over half a second
 * (minutes at hundreds of millions of logs), and on the main thread a SIGINT or SIGTERM would wait
 * unheard until the statement returns. The thread's start is then a small share of the build
 * (`maintenance-thread-start` in scripts/bench/results/measurements.csv).
 */
export const MAINTENANCE_THREAD_FROM_LOGS = 2_000_000;
/** The maintenance thread sorts on disk and holds no rows: a small heap. */
export const MAINTENANCE_THREAD_HEAP_MB = 16;

// Checkpointer thread

/** The checkpointer holds no rows: a tiny heap. */
export const CHECKPOINT_THREAD_HEAP_MB = 16;

/** The decode thread's nice value in `mode`. */
export const decodeThreadNice = (mode: ProcessMode): number =>
  mode === "daemon" ? DECODE_THREAD_NICE_IN_DAEMON : 0;

/** The window writer thread's nice value in `mode`. */
export const windowWriterNice = (mode: ProcessMode): number =>
  mode === "daemon" ? WINDOW_WRITER_NICE_IN_DAEMON : 0;

/** Whether a bulk load's end runs on the maintenance thread: in the daemon always, in batch mode past MAINTENANCE_THREAD_FROM_LOGS. */
export const maintenanceOnThread = (mode: ProcessMode, storedLogs: number): boolean =>
  mode === "daemon" || storedLogs >= MAINTENANCE_THREAD_FROM_LOGS;
