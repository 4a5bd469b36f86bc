/**
 * The duplicate guard across replicas (Redis): the replica that claims a request's fingerprint starts (or
 * settles) the task; one that finds it claimed waits for the started task the claimant mirrors, copied into
 * its own journal so the usual guard (starter.ts) answers with it as reused. A claimant that died lets its
 * claim expire; the next one settles the intent it left, as its own.
 */
import { GenerationError } from "../api/errors.js";
import type { Sleep } from "../sleep.js";
import type { StartClaims } from "../state/shared-state.js";
import type { Journal } from "./journal.js";
import type { TaskLogger } from "./logger.js";

/**
 * How long a replica's claim on starting a fingerprint lasts at most: longer than a start and its settling
 * take, short enough that the claim of a replica that died mid-start lapses within a tool call or two.
 */
const CLAIM_TTL_MS = 60_000;
/** How often a replica waiting on another's claim looks for the started task. */
const CLAIM_RETRY_MS = 200;

export interface ReplicaGuardOptions {
  claims: StartClaims;
  journal: Journal;
  now: () => number;
  sleep: Sleep;
  logger: TaskLogger;
}

export class ReplicaGuard {
  private readonly claims: StartClaims;
  private readonly journal: Journal;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  private readonly logger: TaskLogger;

  constructor(options: ReplicaGuardOptions) {
    this.claims = options.claims;
    this.journal = options.journal;
    this.now = options.now;
    this.sleep = options.sleep;
    this.logger = options.logger;
  }

  /**
   * Runs `steps.start` under the claim on the fingerprint, or answers with what `steps.earlier` finds once
   * another replica's start is journaled; gives up at the deadline (or after one claim's lifetime).
   */
  async start<T>(
    kind: "video" | "image",
    options: {
      fingerprint: string;
      signal?: AbortSignal | undefined;
      deadline?: number | undefined;
    },
    steps: { earlier: () => Promise<T | undefined>; start: () => Promise<T> },
  ): Promise<T> {
    const fingerprint = options.fingerprint;
    const giveUpAt = options.deadline ?? this.now() + CLAIM_TTL_MS;
    for (;;) {
      await this.adoptShared(fingerprint, "started");
      const earlier = await steps.earlier();
      if (earlier !== undefined) return earlier;
      if (await this.claims.claim(fingerprint, CLAIM_TTL_MS)) {
        try {
          // Between our look and our claim, the last claimant may have finished: look again, now alone.
          await this.adoptShared(fingerprint, "both");
          return await steps.start();
        } finally {
          await this.claims.unclaim(fingerprint);
        }
      }
      if (this.now() + CLAIM_RETRY_MS > giveUpAt) throw claimedElsewhere(kind);
      await this.sleep(CLAIM_RETRY_MS, options.signal);
    }
  }

  /** Whether the shared store holds a started task of this kind for the fingerprint (any replica's). */
  async hasStarted(kind: "video" | "image", fingerprint: string): Promise<boolean> {
    return (await this.claims.read(fingerprint)).started?.kind === kind;
  }

  /** Copies what another replica recorded for this fingerprint into our journal, so the usual guard sees it. */
  private async adoptShared(fingerprint: string, what: "started" | "both"): Promise<void> {
    const shared = await this.claims.read(fingerprint);
    const adopt = what === "both" ? [shared.started, shared.intent] : [shared.started];
    for (const entry of adopt) {
      if (entry === undefined || this.journal.knows(entry)) continue;
      try {
        await this.journal.append(entry);
      } catch (error) {
        this.logger("warning", "Could not copy another replica's start into the journal.", {
          error: String(error),
        });
      }
    }
  }
}

/**
 * An identical start held by another replica did not finish within this call's time. This call sent nothing:
 * what that replica's start did, its own caller hears; an identical call in a moment returns it.
 */
function claimedElsewhere(kind: "video" | "image"): GenerationError {
  const tool = kind === "video" ? "generate_video" : "generate_image";
  return new GenerationError(
    "timeout",
    `An identical ${tool} request is being started by another replica of this server and did not finish within this call's time. This call sent nothing and charged nothing.`,
    {
      transient: true,
      nextStep: `Call ${tool} again with the same arguments in a moment: it returns that result instead of paying again.`,
    },
  );
}
