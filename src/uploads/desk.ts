/**
 * Upload links (`upload_image` with `from_user`): a link for one file from the person's machine, the token
 * in its address the only permission. One desk per process: tools make and wait on links through it
 * (`forCaller`), the page's route (receive.ts) hands it checked files. A file goes to the service at once
 * from the replica that receives it when that replica holds the link's key (an uploader is registered
 * here for it); otherwise its checked bytes are parked and the replica whose call waits on the link (it
 * holds the key) uploads them. Links live in the state store (local or Redis), so every replica serves every
 * link.
 */
import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError, RateLimitError, ValidationError } from "../api/errors.js";
import { imageFromBytes, type LocalImage } from "../files/local-image.js";
import { LOCAL_STATE } from "../state/records.js";
import type { UploadLink, UploadLinkStore } from "../state/upload-links.js";

/** Uploads a checked image with a key held here; resolves with the hosted URL. */
export type Uploader = (image: LocalImage, signal: AbortSignal) => Promise<string>;

/** Where links are served: their base address (stdio: a listener started on demand, held while links are open). */
export interface LinkServing {
  base(): Promise<string>;
  hold(id: string, expiresAt: number): void;
  release(id: string): void;
}

/** Per caller: links waiting for a file at once, and links asked for per minute. */
export const LINK_LIMITS = { maxOpen: 10, perMinute: 30 };
const POLL_MS = 250;
/** 256 random bits, base64url. */
export const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** The upload_id of a link: its token's digest, so the token is kept nowhere. */
export const linkId = (token: string) => createHash("sha256").update(token).digest("base64url").slice(0, 22);

export interface WaitOptions {
  deadline: number;
  signal: AbortSignal;
  /** Uploads parked bytes with the caller's key (the tool's own API client). */
  upload(image: LocalImage): Promise<string>;
  progress(waitedSeconds: number): void;
}

export class UploadDesk {
  private serving: LinkServing | undefined;
  private readonly uploaders = new Map<string, Set<Uploader>>();

  readonly store: UploadLinkStore;

  /** `store`: where links live (Redis with GENERATION_REDIS_URL); by default in this process. */
  constructor(
    store: UploadLinkStore | undefined,
    readonly ttlMs: number,
  ) {
    this.store = store ?? LOCAL_STATE.uploadLinks;
  }

  serveAt(serving: LinkServing): void {
    this.serving = serving;
  }

  /** Uploads files of links to the key with digest `key`, until the returned function is called. */
  register(key: string, uploader: Uploader): () => void {
    const held = this.uploaders.get(key) ?? new Set();
    this.uploaders.set(key, held.add(uploader));
    return () => {
      held.delete(uploader);
      if (held.size === 0 && this.uploaders.get(key) === held) this.uploaders.delete(key);
    };
  }

  /** What a tool uses, for one caller (Caller.id) whose files go to the key with digest `key`. */
  forCaller(caller: string, key: string) {
    return {
      create: async () => {
        const serving = this.serving;
        if (serving === undefined) {
          throw new ValidationError("from_user: this server does not serve upload links.", {
            nextStep: "Pass the image's URL as image_url, or a local file's path, instead.",
          });
        }
        const token = randomBytes(32).toString("base64url");
        const link: UploadLink = {
          id: linkId(token),
          caller,
          key,
          expiresAt: Date.now() + this.ttlMs,
          state: "open",
        };
        const opened = await this.store.open(link, LINK_LIMITS);
        if (opened === "too_many") {
          throw new ValidationError(
            `from_user: you already have ${LINK_LIMITS.maxOpen} upload links waiting for a file, the most at once.`,
            {
              nextStep: `Use one already handed out (upload_image with its upload_id and wait: true), or wait until they expire (${Math.round(this.ttlMs / 60_000)} min after they were made).`,
            },
          );
        }
        if (opened === "too_fast") {
          throw new RateLimitError(
            `from_user: more than ${LINK_LIMITS.perMinute} upload links were asked for within a minute.`,
            { nextStep: "Wait a minute before asking for another link; nothing was sent to the service." },
          );
        }
        // Held first: the stdio listener must not close between starting and handing out the address.
        serving.hold(link.id, link.expiresAt);
        return { id: link.id, url: `${await serving.base()}/upload/${token}`, expiresAt: link.expiresAt };
      },
      /** The link once its file is uploaded (`url`), or as it is when `deadline` comes first. */
      wait: async (id: string, options: WaitOptions): Promise<UploadLink> => {
        const started = Date.now();
        let told = started;
        for (;;) {
          const link = await this.store.read(id);
          if (link?.caller !== caller) {
            throw new NotFoundError(`upload_id "${id}" is not an upload link of yours, or it has expired.`, {
              nextStep: "Ask for a new link with upload_image and from_user: true.",
            });
          }
          if (link.state === "done") return link;
          if (link.state === "received") {
            const url = await this.uploadParked(link, options);
            if (url !== undefined) return { ...link, state: "done", url };
          }
          const now = Date.now();
          if (now >= options.deadline) return link;
          if (now - told >= 5000) {
            told = now;
            options.progress(Math.round((now - started) / 1000));
          }
          await sleep(Math.min(POLL_MS, options.deadline - now), undefined, { signal: options.signal });
        }
      },
    };
  }

  /** The link a token opens, while it waits for a file; `gone` once used, undefined when unknown or expired. */
  async lookup(token: string): Promise<UploadLink | "gone" | undefined> {
    if (!TOKEN.test(token)) return undefined;
    const link = await this.store.read(linkId(token));
    return link === undefined || link.state === "open" ? link : "gone";
  }

  /**
   * A checked file for `link`: uploaded now where its key is held here (the hosted URL), else parked for the
   * replica whose call waits on it (undefined). `gone` when another file was taken first. An upload that
   * fails leaves the link open for another try, and throws.
   */
  async deliver(link: UploadLink, image: LocalImage, bytes: Buffer, signal: AbortSignal) {
    const receiving = { ...link, state: "receiving" as const };
    if (!(await this.store.swap("open", receiving))) return "gone";
    const uploader = this.uploaders.get(link.key)?.values().next().value;
    try {
      if (uploader === undefined) {
        await this.store.park(link.id, bytes, link.expiresAt);
        await this.store.swap("receiving", { ...link, state: "received" });
        return undefined;
      }
      const url = await uploader(image, signal);
      await this.store.swap("receiving", { ...link, state: "done", url });
      return url;
    } catch (error) {
      await this.store.swap("receiving", link).catch(() => undefined);
      throw error;
    } finally {
      this.serving?.release(link.id);
    }
  }

  /** Parked bytes, checked again (they came back from a store) and uploaded with the caller's key. */
  private async uploadParked(link: UploadLink, options: WaitOptions): Promise<string | undefined> {
    const bytes = await this.store.take(link.id);
    // Another call took them first: its upload ends the link.
    if (bytes === undefined) return undefined;
    try {
      const url = await options.upload(imageFromBytes(bytes, "upload", "upload_id", "the file received"));
      await this.store.swap("received", { ...link, state: "done", url });
      return url;
    } catch (error) {
      await this.store.park(link.id, bytes, link.expiresAt).catch(() => undefined);
      throw error;
    }
  }
}

export type CallerUploads = ReturnType<UploadDesk["forCaller"]>;
