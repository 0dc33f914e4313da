/** The span over which refusals are weighed against answers (ms): providers count over 1 to 10 s. */
export const REFUSAL_WINDOW_MS = 10_000;
/** Outcomes are kept per slice of this many ms of their send time. */
const SLICE_MS = 500;

/**
 * The outcomes (calls answered, calls refused for the rate) of the requests sent over the last
 * REFUSAL_WINDOW_MS, by when they were sent: the share a client-side throttle acts on (Google SRE
 * book, "Handling Overload": client-side adaptive throttling weighs requests against accepts over
 * a window instead of acting on each rejection). `clear` starts over (after a cut, the old rate's
 * outcomes say nothing about the new one).
 */
export function createRefusalWindow() {
  let slices = new Map<number, { answered: number; refused: number }>();
  const sliceOf = (sentAt: number) => {
    const key = Math.floor(sentAt / SLICE_MS);
    let slice = slices.get(key);
    if (slice === undefined) slices.set(key, (slice = { answered: 0, refused: 0 }));
    return slice;
  };
  const forgetBefore = (now: number) => {
    const oldest = Math.floor((now - REFUSAL_WINDOW_MS) / SLICE_MS);
    for (const key of slices.keys()) if (key < oldest) slices.delete(key);
  };
  return {
    answered(sentAt: number, cost: number, now: number): void {
      forgetBefore(now);
      if (sentAt >= now - REFUSAL_WINDOW_MS) sliceOf(sentAt).answered += cost;
    },
    refused(sentAt: number, cost: number, now: number): void {
      forgetBefore(now);
      if (sentAt >= now - REFUSAL_WINDOW_MS) sliceOf(sentAt).refused += cost;
    },
    /** Calls answered and refused in the window. */
    totals(now: number): { answered: number; refused: number } {
      forgetBefore(now);
      let answered = 0;
      let refused = 0;
      for (const slice of slices.values()) {
        answered += slice.answered;
        refused += slice.refused;
      }
      return { answered, refused };
    },
    clear(): void {
      slices = new Map();
    },
  };
}

export type RefusalWindow = ReturnType<typeof createRefusalWindow>;
