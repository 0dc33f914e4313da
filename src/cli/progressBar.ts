import { SingleBar } from "cli-progress";
import type { BackfillProgress } from "../sync/historical/backfill.js";

/** What a command needs from a progress display. */
export type ProgressDisplay = {
  update: (progress: BackfillProgress) => void;
  /** Draws the last state once more and ends the line. */
  stop: () => void;
};

/** A terminal is redrawn at most this often: faster only burns CPU the backfill needs. */
export const PROGRESS_REDRAW_FPS = 10;
/** Width of the bar itself, in characters. */
const BAR_WIDTH_CHARS = 30;

/**
 * A live one-line bar (blocks done / total, logs/s, ETA, window size), drawn by cli-progress: it
 * throttles redraws, rewrites the line in place, and fits it to the terminal's width.
 */
export function createTerminalProgress(stream: NodeJS.WriteStream): ProgressDisplay {
  let last: BackfillProgress | undefined;
  const bar = new SingleBar({
    stream,
    fps: PROGRESS_REDRAW_FPS,
    hideCursor: false,
    linewrap: false,
    // The line is ours (the library's own tokens cannot show logs/s or the window size).
    format: () => (last === undefined ? "" : formatProgressLine(last)),
  });
  let started = false;
  return {
    update: (progress) => {
      last = progress;
      if (!started) bar.start(progress.blocksTotal, progress.blocksDone);
      started = true;
      bar.setTotal(progress.blocksTotal);
      bar.update(progress.blocksDone);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

/** `[█████░░░░░] 45% 12,345/27,000 blocks | 1,234 logs/s | ETA 12s | window 1,000`. */
export function formatProgressLine(p: BackfillProgress): string {
  const fraction = p.blocksTotal === 0 ? 1 : Math.min(1, p.blocksDone / p.blocksTotal);
  const filled = Math.round(fraction * BAR_WIDTH_CHARS);
  const bar = `${"█".repeat(filled)}${"░".repeat(BAR_WIDTH_CHARS - filled)}`;
  const n = (x: number) => x.toLocaleString("en-US");
  return `backfill [${bar}] ${Math.floor(fraction * 100)}% ${n(p.blocksDone)}/${n(p.blocksTotal)} blocks | ${n(p.logs)} logs, ${n(p.logsPerSecond)} logs/s | ETA ${formatSeconds(p.etaSeconds)} | window ${n(p.windowBlocks)}`;
}

function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3_600)
    return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(seconds / 3_600)}h${String(Math.floor((seconds % 3_600) / 60)).padStart(2, "0")}m`;
}
