import { binomialTail } from "./binomialTail.js";
import { createRefusalWindow, REFUSAL_WINDOW_MS } from "./refusalWindow.js";
import { createSendLog } from "./sendLog.js";

/**
 * Share of requests a provider may refuse at random (not for the client's rate) that the client
 * takes for strays: a burst limit on another dimension, a noisy neighbour. Note: Alchemy's guidance
 * is that retries are the answer under 30% refused; a client pacing itself acts well before that.
 */
export const STRAY_SHARE = 0.05;
/**
 * The rate is cut only when the window's refusals would come from strays at STRAY_SHARE less often
 * than this: one or two refusals among many answered calls never cut, four in a row after the
 * first answers do. At 3% of requests refused at random, a false cut comes in about one start in
 * a thousand.
 */
export const CUT_CONFIDENCE = 1e-3;
/** Share of the calls sent while probing above the limit found that ends the probe (at least MIN_PROBE_REFUSALS_TO_CUT). */
export const PROBE_CUT_SHARE = 0.1;
/**
 * Refusals of calls sent above the limit found that end a probe (the limit is then where the probe
 * left it or higher). One: against a hard limit each probe costs one refusal, not two. The trade: a
 * stray refusal early in a probe ends it as if it had found the same limit, so a limit the provider
 * has since raised takes a second probe to outgrow when strays come with it (about 80 s instead of
 * 20 s at 3% strays, rateLimiter.test.ts).
 */
export const MIN_PROBE_REFUSALS_TO_CUT = 1;
/** Pace at this share of the limit the provider showed: room for requests that bunch up in transit. */
export const PACE_SHARE = 0.95;
/** Refused again at or under a limit it showed, the provider counts otherwise: the rate is cut by this factor (CUBIC's β). */
export const DECREASE = 0.7;
/** After such a cut the rate is back just under the limit within this long (ms), on time alone. */
export const RECOVERY_MS = 3_000;
/**
 * How long the rate holds just under the limit it found before it probes above it (ms). A probe
 * against a hard limit costs about MIN_PROBE_REFUSALS_TO_CUT refusals: at 5 calls a second, one in 150.
 */
export const PROBE_AFTER_MS = 30_000;
/**
 * A probe that finds the same limit again doubles the hold before the next (TCP's retransmission
 * backoff), up to this long (ms): against a provider's hard limit, probing costs a few refusals an
 * hour instead of two every PROBE_AFTER_MS (at 1 call a second, one request in fifteen). A probe
 * that finds a higher limit, or a cut at the limit, starts again from PROBE_AFTER_MS.
 */
export const MAX_PROBE_AFTER_MS = 8 * PROBE_AFTER_MS;
/** A probe's limit above the one found by more than this share is a higher limit (the hold starts over). */
const HIGHER_LIMIT_SHARE = 1.1;
/** Probing above the limit doubles the rate after this long (ms), along a cubic: slow at first, then fast. */
export const PROBE_DOUBLING_MS = 5_000;
/**
 * Share of the rate the client must send for a probe above the limit to go on (calls in the last
 * second against the rate), besides the pacing holding calls back: a client sending less than its
 * rate allows learns nothing from raising it (RFC 7661, congestion window validation: no growth
 * while application-limited). Under it the probe neither climbs nor counts its calls; the pacing
 * still spaces them at the rate reached.
 */
export const USED_SHARE = 0.75;
/** The rate never falls below this (requests per second): a rate limit slows the client, it never stops it. */
export const MIN_REQUESTS_PER_SECOND = 0.2;
/** The span of the provider's count the client measures at a refusal (ms). */
const SHOWN_MS = 1_000;

export type AdaptiveRateState = {
  /** Calls a second the client paces at now; Infinity while nothing paces. */
  requestsPerSecond: number;
  /** The limit the provider showed at the last cut (calls a second); Infinity before any. */
  ceiling: number;
  /** Whether the rate was cut for a provider's rate limit since the client started. */
  refusedBefore: boolean;
};

/**
 * The client's rate: the configured ceiling until a provider shows a rate limit, then just under
 * the limit it showed, on a clock rather than on answers.
 *
 * - A refusal counts in a window of REFUSAL_WINDOW_MS; only when its refusals are more than strays
 *   at STRAY_SHARE would explain (CUT_CONFIDENCE) is the rate cut. One refusal among many answered
 *   calls is a retry, never a new ceiling.
 * - A cut goes to what the provider showed it accepts (the calls answered in the second before the
 *   refused one left), never above the rate of the moment; refused again at or under a limit it
 *   showed, the provider counts over a longer span (Alchemy's rolling 10 s, Coinbase's 5 s): the
 *   rate drops by DECREASE and is back near the limit within RECOVERY_MS. Refusals of requests sent before a cut, or in the second after it
 *   (the provider's count still holds the calls before it), were the old rate's.
 * - Recovery follows time, not successes (AWS SDK adaptive retry, CUBIC): the rate holds just under
 *   the limit for PROBE_AFTER_MS (doubled by each probe that finds no more, up to
 *   MAX_PROBE_AFTER_MS), then probes above it along a cubic, while the client uses the rate
 *   (USED_SHARE), so a ceiling learnt too low
 *   (a stray refusal, a provider that raised its limit) is outgrown. Refusals that are a share of
 *   the calls sent above the limit found (they follow the rate: none came at the limit) set it
 *   again from what the provider accepted. Nothing ratchets down: a cut never halves blindly.
 */
export function createAdaptiveRate(options: { requestsPerSecond: number; now: () => number }) {
  const maxRate = options.requestsPerSecond;
  const clock = options.now;
  const sends = createSendLog();
  const outcomes = createRefusalWindow();
  let ceiling = Number.POSITIVE_INFINITY;
  let cutAt = Number.NEGATIVE_INFINITY;
  /** The rate right after the last cut: under the limit found when the cut was a DECREASE. */
  let startRate = Number.POSITIVE_INFINITY;
  /** Calls sent above the limit found since the probe began, and those refused: refusals that follow the rate. */
  let probe = { calls: 0, refused: 0 };
  /** How long the rate holds under the limit found before it probes (ms): doubles while probes find no more. */
  let holdMs = PROBE_AFTER_MS;
  /** Time spent probing while the rate was used (ms): what the probe's climb follows. */
  let probedMs = 0;
  /** When the last call left (ms). */
  let lastSentAt = Number.NEGATIVE_INFINITY;

  const target = () => Math.max(MIN_REQUESTS_PER_SECOND, ceiling * PACE_SHARE);

  /**
   * The pacing rate at `at` (ms): the configured ceiling, or the found limit's schedule: from the
   * rate right after the cut back up to just under the limit within RECOVERY_MS (concave, as CUBIC
   * nears its last maximum), there for the hold, then above it while the rate is used.
   */
  function rateAt(at: number): number {
    if (ceiling === Number.POSITIVE_INFINITY) return maxRate;
    const recovering = 1 - (at - cutAt) / RECOVERY_MS;
    if (recovering > 0 && startRate < target())
      return Math.min(maxRate, target() - (target() - startRate) * recovering ** 3);
    const probing = probedMs / PROBE_DOUBLING_MS;
    return Math.min(maxRate, target() * (1 + probing ** 3));
  }

  /**
   * Whether the rate limited the call that left at `at`: the pacing held it back, and the calls of
   * the last second (this one's included) are USED_SHARE of the rate or more.
   */
  const used = (at: number, held: boolean) =>
    held && sends.sentIn(at - SHOWN_MS, at) >= USED_SHARE * rateAt(at);

  /** Whether a call sent at `at` went above the limit found (the rate is probing). */
  const probing = (at: number) =>
    ceiling !== Number.POSITIVE_INFINITY && rateAt(at) > target() * 1.01;
  /** Refusals among a probe's calls that follow its rate: a share of them, never one alone. */
  const probeRefused = () =>
    probe.refused >= MIN_PROBE_REFUSALS_TO_CUT &&
    probe.refused / Math.max(MIN_PROBE_REFUSALS_TO_CUT / PROBE_CUT_SHARE, probe.calls) >=
      PROBE_CUT_SHARE;

  /** The limit the provider showed it accepts (the calls answered in the second before `sentAt`), never above `rate`. */
  function measuredLimit(sentAt: number, rate: number): number {
    const shown = sends.acceptedIn(sentAt - SHOWN_MS, sentAt);
    const limit =
      shown > 0 ? Math.min(rate, shown) : rate === Number.POSITIVE_INFINITY ? 1 : rate * DECREASE;
    return Math.max(MIN_REQUESTS_PER_SECOND, limit);
  }

  /** Cuts to the limit the refused request's second showed (a probe's never below the limit found). */
  function cut(sentAt: number, now: number): void {
    const rate = rateAt(sentAt);
    const aboveLimit = probing(sentAt);
    // Refused at or under the limit found: the provider counts over a longer span than the client's
    // second. The rate drops by DECREASE and climbs back on time (CUBIC's multiplicative decrease).
    const atLimit = ceiling !== Number.POSITIVE_INFINITY && !aboveLimit;
    const found = aboveLimit
      ? Math.max(ceiling, measuredLimit(sentAt, rate))
      : measuredLimit(sentAt, rate);
    holdMs =
      aboveLimit && found <= ceiling * HIGHER_LIMIT_SHARE
        ? Math.min(MAX_PROBE_AFTER_MS, 2 * holdMs)
        : PROBE_AFTER_MS;
    ceiling = found;
    startRate = atLimit
      ? Math.max(MIN_REQUESTS_PER_SECOND, Math.min(target(), rate * DECREASE))
      : target();
    cutAt = now;
    probedMs = 0;
    probe = { calls: 0, refused: 0 };
    outcomes.clear();
  }

  return {
    rate: (): number => rateAt(clock()),

    /**
     * A request of `cost` calls left at `at`; `held`: the pacing held it back (the rate, not the
     * client's own work, was the limit). Past the hold, the probe climbs by the time since the
     * last call only while the rate is used, and counts only those calls.
     */
    sent(at: number, cost: number, held = false): void {
      sends.forgetBefore(at - 2 * REFUSAL_WINDOW_MS);
      sends.add(at, cost);
      const since = Math.min(at - lastSentAt, SHOWN_MS, at - cutAt - holdMs);
      lastSentAt = at;
      if (ceiling === Number.POSITIVE_INFINITY || !used(at, held)) return;
      if (probing(at)) probe.calls += cost;
      if (since > 0) probedMs += since;
    },

    /** It left at `leftAt` instead, later (sent from another thread): measured from then. */
    moved(sentAt: number, leftAt: number, cost: number): void {
      sends.moved(sentAt, leftAt, cost);
    },

    answered(sentAt: number, cost: number): void {
      if (sentAt >= cutAt) outcomes.answered(sentAt, cost, clock());
    },

    /**
     * A request of `cost` calls sent at `sentAt` was refused for its rate. Returns whether the
     * rate was cut. A batch larger than the calls the provider accepted in the second before it
     * was refused for its size, not the rate: it is sent in pieces and nothing is cut.
     */
    refused(sentAt: number, cost: number): boolean {
      const now = clock();
      sends.markRefused(sentAt, cost);
      if (cost > 1 && cost > sends.acceptedIn(sentAt - SHOWN_MS, sentAt)) return false;
      // Sent before the cut, or while the provider's count still held the calls before it: the old
      // rate's. One sent before it and refused since corrects the cut's measurement (fewer were accepted).
      if (sentAt < cutAt + SHOWN_MS) {
        const shown = sends.acceptedIn(sentAt - SHOWN_MS, sentAt);
        if (sentAt < cutAt && shown > 0 && shown < ceiling)
          ceiling = Math.max(MIN_REQUESTS_PER_SECOND, shown);
        return false;
      }
      outcomes.refused(sentAt, cost, now);
      // Sent while probing above the limit found: judged among the probe's calls alone, which the
      // calls at the limit before it would otherwise dilute.
      if (probing(sentAt)) probe.refused += cost;
      const { answered, refused } = outcomes.totals(now);
      // More refusals than strays would explain (Google SRE's client-side throttling acts on the share
      // of rejections over a window, never on one): a rate limit. Above the limit found, refusals
      // that follow the rate need less evidence: a cut there never goes below it.
      const rateLimit = binomialTail(refused, answered + refused, STRAY_SHARE) < CUT_CONFIDENCE;
      if (!rateLimit && !probeRefused()) return false;
      cut(sentAt, now);
      return true;
    },

    /**
     * When the calls the provider counted in its last second leave room for one more under the
     * limit found (ms): after a cut, nothing leaves before, or it would be refused too.
     */
    roomAt(now: number): number {
      if (ceiling === Number.POSITIVE_INFINITY) return now;
      return sends.fitsAt(1, Math.max(1, Math.floor(ceiling)), SHOWN_MS, now);
    },

    state: (): AdaptiveRateState => ({
      requestsPerSecond: rateAt(clock()),
      ceiling,
      refusedBefore: ceiling !== Number.POSITIVE_INFINITY,
    }),
  };
}

export type AdaptiveRate = ReturnType<typeof createAdaptiveRate>;
