/**
 * Upload links (`upload_image` with `from_user`): one picture from the person's machine, the token in the
 * link its only permission. Tools make and wait on links (`forCaller`), the route (receive.ts) hands in
 * checked files: uploaded at once where the link's key is held, else parked for the call that waits on it.
 */
import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { NotFoundError, RateLimitError, ValidationError } from "../api/errors.js";
import { imageFromBytes, type LocalImage } from "../files/local-image.js";
import { LOCAL_STATE } from "../state/records.js";
import type { UploadLink, UploadLinkStore } from "../state/upload-links.js";

/** Uploads a checked picture with a key held here; resolves with the hosted URL. */
export type Uploader = (image: LocalImage) => Promise<string>;

/** Where links are served (stdio: a listener that lives while a link it holds is open). */
export interface LinkServing {
  base(): Promise<string>;
  hold(id: string, expiresAt: number): void;
  release(id: string): void;
}

/** Per caller: links open at once, and links asked for per minute. */
export const LINK_LIMITS = { maxOpen: 10, perMinute: 30 };

/** The upload_id: a digest of the link's token (256 random bits), so the token is kept nowhere. */
const linkId = (token: string) => createHash("sha256").update(token).digest("base64url").slice(0, 22);

export class UploadDesk {
  readonly store: UploadLinkStore;
  private serving: LinkServing | undefined;
  private readonly uploaders = new Map<string, Set<Uploader>>();

  constructor(
    store: UploadLinkStore | undefined,
    readonly ttlMs: number,
  ) {
    this.store = store ?? LOCAL_STATE.uploadLinks;
  }

  serveAt(serving: LinkServing): void {
    this.serving = serving;
  }

  /** Uploads the files of links to the key with digest `key`, until the returned function is called. */
  register(key: string, uploader: Uploader): () => void {
    const held = this.uploaders.get(key) ?? new Set();
    this.uploaders.set(key, held.add(uploader));
    return () => held.delete(uploader) && held.size === 0 && this.uploaders.delete(key);
  }

  /** What a tool uses, for a caller (Caller.id) whose files go to the key with digest `key`. */
  forCaller(caller: string, key: string) {
    return {
      create: () => this.create(caller, key),
      /** The link once uploaded (with `url`), else as it is at `deadline`. */
      wait: (id: string, options: WaitOptions) => this.wait(caller, id, options),
    };
  }

  /** The open link a token names; `gone` once used; undefined when unknown or expired. */
  async lookup(token: string): Promise<UploadLink | "gone" | undefined> {
    const link = await this.store.read(linkId(token));
    return link === undefined || link.state === "open" ? link : "gone";
  }

  /** A checked file: its URL when uploaded here, undefined when parked, `gone` when another came first. */
  async deliver(link: UploadLink, image: LocalImage, bytes: Buffer): Promise<string | "gone" | undefined> {
    if (!(await this.store.swap("open", { ...link, state: "receiving" }))) return "gone";
    const uploader = this.uploaders.get(link.key)?.values().next().value;
    try {
      const url = uploader && (await uploader(image));
      if (url === undefined) await this.store.park(link.id, bytes, link.expiresAt);
      await this.store.swap("receiving", { ...link, state: url === undefined ? "received" : "done", url });
      this.serving?.release(link.id);
      return url;
    } catch (error) {
      await this.store.swap("receiving", link).catch(() => undefined);
      throw error;
    }
  }

  private async create(caller: string, key: string) {
    const serving = this.serving;
    if (serving === undefined) throw new ValidationError("from_user: this server serves no upload links.");
    const token = randomBytes(32).toString("base64url");
    const expiresAt = Date.now() + this.ttlMs;
    const link: UploadLink = { id: linkId(token), caller, key, expiresAt, state: "open" };
    const opened = await this.store.open(link, LINK_LIMITS);
    if (opened === "too_many") {
      const message = `from_user: you have ${LINK_LIMITS.maxOpen} upload links open, the most at once.`;
      const nextStep = `Wait on one of them (upload_id, wait: true), or ask again once they expire (${this.ttlMs / 60_000} min after they were made).`;
      throw new ValidationError(message, { nextStep });
    }
    if (opened === "too_fast") {
      const message = `from_user: more than ${LINK_LIMITS.perMinute} upload links were asked for within a minute.`;
      const nextStep = "Wait a minute, then ask again; nothing was sent to the service.";
      throw new RateLimitError(message, { nextStep });
    }
    // Held first: the stdio listener must not close between starting and handing out its address.
    serving.hold(link.id, link.expiresAt);
    return { id: link.id, url: `${await serving.base()}/upload/${token}`, expiresAt: link.expiresAt };
  }

  private async wait(caller: string, id: string, options: WaitOptions): Promise<UploadLink> {
    for (let told = Date.now(), started = told; ;) {
      const link = await this.store.read(id);
      if (link?.caller !== caller) {
        throw new NotFoundError(`upload_id "${id}" is not an upload link of yours, or it has expired.`, {
          nextStep: "Ask for a new link with upload_image and from_user: true.",
        });
      }
      const url = link.state === "received" ? await this.uploadParked(link, options.upload) : link.url;
      const now = Date.now();
      if (url !== undefined || now >= options.deadline) return { ...link, url };
      if (now - told >= 5000) options.progress(Math.round(((told = now) - started) / 1000));
      await sleep(Math.min(250, options.deadline - now), undefined, { signal: options.signal });
    }
  }

  /** Parked bytes, checked again (they come back from a store), uploaded with the waiting caller's key. */
  private async uploadParked(link: UploadLink, upload: Uploader): Promise<string | undefined> {
    // Taken once: of two calls waiting, the other sees the link done.
    const bytes = await this.store.take(link.id);
    if (bytes === undefined) return undefined;
    try {
      const url = await upload(imageFromBytes(bytes, "upload", "upload_id", "the picture received"));
      await this.store.swap("received", { ...link, state: "done", url });
      return url;
    } catch (error) {
      await this.store.park(link.id, bytes, link.expiresAt).catch(() => undefined);
      throw error;
    }
  }
}

export interface WaitOptions {
  deadline: number;
  signal: AbortSignal;
  /** Sends parked bytes with the waiting caller's key. */
  upload: Uploader;
  progress(waitedSeconds: number): void;
}

export type CallerUploads = ReturnType<UploadDesk["forCaller"]>;
