/**
 * Upload links (`upload_image` with `from_user`) as every replica sees them: local/upload-links.ts keeps
 * them in this process, redis/upload-links.ts in Redis for every replica. A record never holds a key or a
 * token: it is named by a digest of its link's token, and says who asked (Caller.id) and which service key
 * the file goes to (its digest).
 */

/**
 * open: waiting for the file; receiving: a replica is taking it; received: its checked bytes are parked
 * for a replica that holds the key; done: uploaded, `url` is the hosted image.
 */
export type UploadLinkState = "open" | "receiving" | "received" | "done";

export interface UploadLink {
  /** The upload_id: a digest of the link's token, so the token itself is stored nowhere. */
  id: string;
  /** Caller.id of who asked for it: nobody else may wait on it. */
  caller: string;
  /** Digest of the service key the file goes to. */
  key: string;
  /** Epoch ms. */
  expiresAt: number;
  state: UploadLinkState;
  url?: string | undefined;
}

export interface UploadLinkStore {
  /**
   * Saves a new link, unless its caller already holds `maxOpen` unused ones (`too_many`) or asked for more
   * than `perMinute` links within a minute (`too_fast`, every request counting).
   */
  open(
    link: UploadLink,
    limits: { maxOpen: number; perMinute: number },
  ): Promise<"opened" | "too_many" | "too_fast">;
  /** The link while it lives (until `expiresAt`). */
  read(id: string): Promise<UploadLink | undefined>;
  /** Replaces the link if it is still in state `from`: of two replicas racing, one wins. */
  swap(from: UploadLinkState, next: UploadLink): Promise<boolean>;
  /** Keeps a file's checked bytes until `expiresAt`, for the replica that holds the key. */
  park(id: string, bytes: Buffer, expiresAt: number): Promise<void>;
  /** The parked bytes, handed out once. */
  take(id: string): Promise<Buffer | undefined>;
}

/** A link not used yet: it counts against its caller's open links. */
export const isOpen = (link: UploadLink) => link.state === "open" || link.state === "receiving";
