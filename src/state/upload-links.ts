/**
 * Upload links (`upload_image` with `from_user`) as every replica sees them: local/upload-links.ts keeps them
 * in this process, redis/upload-links.ts in Redis. A record never holds a key or a token: it is named by a
 * digest of its link's token and names its caller (Caller.id) and key (a digest).
 */

/** open: no file yet; receiving: a replica is taking one; received: its bytes are parked; done: uploaded. */
export type UploadLinkState = "open" | "receiving" | "received" | "done";

export interface UploadLink {
  id: string;
  caller: string;
  key: string;
  expiresAt: number;
  state: UploadLinkState;
  url?: string | undefined;
}

export interface UploadLinkStore {
  /** Saves a new link unless its caller holds `maxOpen` open ones or asked for more than `perMinute` a minute. */
  open(
    link: UploadLink,
    limits: { maxOpen: number; perMinute: number },
  ): Promise<"opened" | "too_many" | "too_fast">;
  read(id: string): Promise<UploadLink | undefined>;
  /** Replaces the link if it is still in state `from`: of two replicas racing, one wins. */
  swap(from: UploadLinkState, next: UploadLink): Promise<boolean>;
  /** Keeps a file's checked bytes until `expiresAt`; `take` hands them out once. */
  park(id: string, bytes: Buffer, expiresAt: number): Promise<void>;
  take(id: string): Promise<Buffer | undefined>;
}

/** Not used yet: it counts against its caller's open links. */
export const isOpen = (link: UploadLink) => link.state === "open" || link.state === "receiving";
