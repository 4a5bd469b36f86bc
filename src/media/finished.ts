/**
 * What a tool's result shows of finished media, read from the handler's own return value: the finished
 * images (`image_urls`), the completed video (`video_url` with `status: "completed"`) and a still of it
 * (`still_url`, which the handler returns beside its output but the output schema does not relay).
 */
import { safeId, safeUrl } from "../api/fields.js";
import { isObject } from "../api/normalize.js";
import { sanitizeBaseName } from "../files/download.js";

export interface FinishedMedia {
  kind: "video" | "image";
  url: string;
  /** A file name built from the task id, e.g. `video-<id>.mp4`, `image-<id>-2.png`. */
  name: string;
  /** From the URL's extension; absent when it names no known type. */
  mimeType?: string;
}

export interface ResultMedia {
  media: FinishedMedia[];
  /** Stills of a video (thumbnail, poster, cover ...), previewed like images but not linked. */
  stills: string[];
}

const MIME_BY_EXTENSION: Readonly<Record<string, string>> = {
  mp4: "video/mp4",
  m4v: "video/mp4",
  mov: "video/quicktime",
  webm: "video/webm",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
};

export function resultMedia(returned: unknown): ResultMedia {
  if (!isObject(returned)) return { media: [], stills: [] };
  const media: FinishedMedia[] = [];
  const video = safeUrl(returned["video_url"]);
  if (video !== undefined && returned["status"] === "completed") {
    media.push(describe("video", video, `video-${safeId(returned["video_id"]) ?? "result"}`));
  }
  const images = Array.isArray(returned["image_urls"]) ? returned["image_urls"] : [];
  const urls = images.map(safeUrl).filter((url): url is string => url !== undefined);
  const stem = `image-${imageId(returned["result"]) ?? "result"}`;
  for (const [index, url] of urls.entries()) {
    media.push(describe("image", url, urls.length > 1 ? `${stem}-${index + 1}` : stem));
  }
  const still = safeUrl(returned["still_url"]);
  return { media, stills: still === undefined ? [] : [still] };
}

function describe(kind: FinishedMedia["kind"], url: string, id: string): FinishedMedia {
  const stem = sanitizeBaseName(id);
  const extension = /\.([a-z0-9]{2,4})$/i.exec(new URL(url).pathname)?.[1]?.toLowerCase();
  const mimeType = extension === undefined ? undefined : MIME_BY_EXTENSION[extension];
  const known = mimeType !== undefined && mimeType.startsWith(`${kind}/`);
  return {
    kind,
    url,
    name: known ? `${stem}.${extension}` : stem,
    ...(known && { mimeType }),
  };
}

/** The service's id for an image result (`image_id`, `id` or `task_id` of its data), when it gave one. */
function imageId(data: unknown): string | undefined {
  if (!isObject(data)) return undefined;
  return safeId(data["image_id"] ?? data["id"] ?? data["task_id"]);
}
