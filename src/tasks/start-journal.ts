/**
 * The task starter's lines in the journal: a start's intent, synced before the start may leave (the line is
 * the proof the start was ours, and keeps its Idempotency-Key), and the line that settles
 * it: the task that was started (with its owner, for a caller of a shared key) or "void" when nothing was.
 * Each line is mirrored to the other replicas. A line that cannot be written is logged, never a reason to
 * refuse a start.
 */
import { randomUUID } from "node:crypto";
import { safeId } from "../api/shapes.js";
import type { GenerateImageBody, GenerateVideoBody, ImageResult, JsonObject } from "../api/types.js";
import { resolveVideoModel } from "../models.js";
import type { StartClaims } from "../state/shared-state.js";
import type { Journal, JournalEntry } from "./journal.js";
import type { TaskLogger } from "./logger.js";
import type { Ownership } from "./ownership.js";

/** A video task as its start's answer or the history gave it. */
export interface StartedTask {
  video_id: string;
  status: string | undefined;
  raw: JsonObject;
}

export interface StartJournalOptions {
  journal: Journal;
  /** Where the lines are mirrored for other replicas; undefined: this process alone. */
  claims: StartClaims | undefined;
  /** Who started which task, recorded for a caller of a shared key. */
  ownership: Ownership | undefined;
  duplicateWindowMs: number;
  now: () => number;
  logger: TaskLogger;
}

export class StartJournal {
  private readonly journal: Journal;
  private readonly claims: StartClaims | undefined;
  private readonly ownership: Ownership | undefined;
  private readonly duplicateWindowMs: number;
  private readonly now: () => number;
  private readonly logger: TaskLogger;
  /** Intents this process wrote: they are not an earlier run's lost answers. */
  private readonly ownKeys = new Set<string>();

  constructor(options: StartJournalOptions) {
    this.journal = options.journal;
    this.claims = options.claims;
    this.ownership = options.ownership;
    this.duplicateWindowMs = options.duplicateWindowMs;
    this.now = options.now;
    this.logger = options.logger;
  }

  /** Whether this process wrote the intent with this key. */
  isOwnIntent(key: string): boolean {
    return this.ownKeys.has(key);
  }

  /** Syncs the intent to disk before the start may leave; the journal line is the proof it was ours. */
  async writeIntent(
    kind: "video" | "image",
    body: GenerateVideoBody | GenerateImageBody,
    start: { fingerprint: string; scope?: string | undefined },
  ): Promise<JournalEntry> {
    const intent: JournalEntry = {
      kind,
      phase: "intent",
      key: randomUUID(),
      id: undefined,
      fingerprint: start.fingerprint,
      started_at: this.now(),
      request: { ...body },
      ...(start.scope !== undefined && { scope: start.scope }),
    };
    this.ownKeys.add(intent.key ?? "");
    await this.record(intent);
    return intent;
  }

  /** Journals a started (or adopted) video task, settling its intent, before anyone hears of it. */
  async recordVideo(
    task: StartedTask,
    context: { entry: JournalEntry; body: GenerateVideoBody },
  ): Promise<void> {
    const scope = context.entry.scope;
    await this.record({
      kind: "video",
      phase: "started",
      ...(context.entry.key !== undefined && { key: context.entry.key }),
      id: task.video_id,
      fingerprint: context.entry.fingerprint,
      started_at: context.entry.started_at,
      request: { ...context.body },
      ...(task.status === undefined ? {} : { status: task.status }),
      ...(scope !== undefined && { scope }),
    });
    if (scope !== undefined) {
      await this.ownership?.record({
        video_id: task.video_id,
        scope,
        started_at: context.entry.started_at,
        prompt: context.body.prompt,
        model: resolveVideoModel(context.body.model) ?? context.body.model,
      });
    }
  }

  /** Journals a started image task with its URLs (the service keeps no image history to find them in). */
  async recordImage(
    result: ImageResult,
    context: { entry: JournalEntry; body: GenerateImageBody },
  ): Promise<void> {
    await this.record({
      kind: "image",
      phase: "started",
      ...(context.entry.key !== undefined && { key: context.entry.key }),
      id: safeId(firstString(result.raw, ["image_id", "id", "task_id"])),
      fingerprint: context.entry.fingerprint,
      started_at: context.entry.started_at,
      request: { ...context.body },
      result: { image_urls: result.image_urls },
    });
  }

  async record(entry: JournalEntry): Promise<void> {
    try {
      await this.journal.append(entry);
      // Other replicas see the open intent and the started task; the local journal stays the record of ours.
      await this.claims?.mirror(entry, this.duplicateWindowMs);
    } catch (error) {
      // A start is not refused for it: the task id still reaches the caller in the answer.
      this.logger("error", "Could not write the task journal; this start is not protected against a crash.", {
        id: entry.id,
        path: this.journal.path,
        error: String(error),
      });
    }
  }

  async refresh(): Promise<void> {
    try {
      await this.journal.refresh();
    } catch (error) {
      this.logger("warning", "Could not re-read the task journal.", { error: String(error) });
    }
  }
}

/** The line that settles an intent (or declares a task stale) without a task of its own. */
export function voidOf(entry: JournalEntry): JournalEntry {
  return {
    kind: entry.kind,
    phase: "void",
    ...(entry.key !== undefined && { key: entry.key }),
    id: undefined,
    fingerprint: entry.fingerprint,
    started_at: entry.started_at,
    request: {},
  };
}

function firstString(record: JsonObject, keys: string[]): string | undefined {
  for (const key of keys) {
    const value = record[key];
    if (typeof value === "string" && value !== "") return value;
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
  }
  return undefined;
}
