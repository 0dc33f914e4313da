/**
 * The requests a client sent over the last seconds (when each left, in ms, never decreasing, and its
 * calls), with those a provider refused: what a provider counting over a sliding second has counted.
 * Sums over a span are two binary searches on running totals, so pacing stays cheap however high a
 * configured ceiling is.
 */
export function createSendLog() {
  const at: number[] = [];
  /** Calls sent up to and including each entry, since the log started. */
  const total: number[] = [];
  let head = 0;
  /** Calls of the entries already spliced off the front. */
  let dropped = 0;
  let refused: Array<{ at: number; cost: number }> = [];

  const totalBefore = (i: number) => (i === 0 ? dropped : total[i - 1]!);
  /** First kept entry that left after `time`. */
  function firstAfter(time: number): number {
    let lo = head;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (at[mid]! > time) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
  /** Calls of the entries that left in (from, to]. */
  const sentIn = (from: number, to: number) =>
    Math.max(0, totalBefore(firstAfter(to)) - totalBefore(firstAfter(from)));

  return {
    add(time: number, cost: number): void {
      at.push(time);
      total.push(totalBefore(at.length - 1) + cost);
    },

    /**
     * The request of `cost` calls recorded as leaving at `from` left at `to` instead (another thread
     * sent it, later): it moves, and what it counts toward moves with it. Nothing, if none left at `from`.
     */
    moved(from: number, to: number, cost: number): void {
      let i = firstAfter(from) - 1;
      while (i >= head && at[i] === from && total[i]! - totalBefore(i) !== cost) i--;
      if (i < head || at[i] !== from) return;
      for (let j = i + 1; j < at.length; j++) total[j]! -= cost;
      at.splice(i, 1);
      total.splice(i, 1);
      const k = firstAfter(to);
      at.splice(k, 0, to);
      total.splice(k, 0, totalBefore(k) + cost);
      for (let j = k + 1; j < at.length; j++) total[j]! += cost;
      for (const r of refused) if (r.at === from && r.cost === cost) r.at = to;
    },

    /** Notes that the request of `cost` calls that left at `time` was refused (nothing, if none left then). */
    markRefused(time: number, cost: number): void {
      const i = firstAfter(time) - 1;
      if (i >= head && at[i] === time) refused.push({ at: time, cost });
    },

    /** Calls that left in (from, to], refused or not. */
    sentIn,

    /** Calls that left in (from, to] and were not refused. */
    acceptedIn(from: number, to: number): number {
      let calls = sentIn(from, to);
      for (const r of refused) if (r.at > from && r.at <= to) calls -= r.cost;
      return Math.max(0, calls);
    },

    /**
     * When `needed` more calls fit, at `now` or later, if at most `calls` may leave in any span of
     * `spanMs` (refused requests count: many providers count them too). `needed` is at most `calls`.
     */
    fitsAt(needed: number, calls: number, spanMs: number, now: number): number {
      if (at.length === head) return now;
      const last = total[at.length - 1]!;
      const start = firstAfter(now - spanMs);
      if (last - totalBefore(start) + needed <= calls) return now;
      // The entry whose leaving the span makes room: the first with at most `calls - needed` calls after it.
      const threshold = last + needed - calls;
      let lo = start;
      let hi = at.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (total[mid]! >= threshold) hi = mid;
        else lo = mid + 1;
      }
      return at[lo]! + spanMs;
    },

    /** Forgets what left before `time`. */
    forgetBefore(time: number): void {
      while (head < at.length && at[head]! < time) head++;
      if (refused.length > 0 && refused[0]!.at < time)
        refused = refused.filter((r) => r.at >= time);
      if (head > 1_024 && head * 2 > at.length) {
        dropped = total[head - 1]!;
        at.splice(0, head);
        total.splice(0, head);
        head = 0;
      }
    },
  };
}

export type SendLog = ReturnType<typeof createSendLog>;
