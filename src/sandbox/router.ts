import type { ApiHandler } from "./routes.js";
import { credits, generateImage, generateVideo, listVideos, upload, videoStatus } from "./routes.js";
import type { MediaHandler } from "./media/routes.js";
import { serveImage, servePoster, serveUpload, serveVideo } from "./media/routes.js";
import type { SandboxRoute } from "./types.js";

export const API_PREFIX = "/api/v1";

export type RouteTarget =
  | {
      kind: "api";
      route: SandboxRoute;
      methods: readonly string[];
      handler: ApiHandler;
      params: Record<string, string>;
    }
  | { kind: "media"; route: "media"; methods: readonly string[]; handler: MediaHandler; file: string };

/** One path segment: no slash, not empty. Paths are matched as received, so "/api/v1/../x" is a 404. */
const SEGMENT = "([^/]+)";

const API_ROUTES: readonly {
  pattern: RegExp;
  route: SandboxRoute;
  methods: readonly string[];
  handler: ApiHandler;
}[] = [
  { pattern: /^\/generate$/, route: "generate", methods: ["POST"], handler: generateVideo },
  { pattern: /^\/generate-image$/, route: "generate-image", methods: ["POST"], handler: generateImage },
  { pattern: /^\/videos$/, route: "videos", methods: ["GET"], handler: listVideos },
  {
    pattern: new RegExp(`^/videos/${SEGMENT}$`),
    route: "video-status",
    methods: ["GET"],
    handler: videoStatus,
  },
  { pattern: /^\/upload$/, route: "upload", methods: ["POST"], handler: upload },
  { pattern: /^\/credits$/, route: "credits", methods: ["GET"], handler: credits },
];

const MEDIA_ROUTES: readonly { pattern: RegExp; handler: MediaHandler }[] = [
  { pattern: new RegExp(`^/media/videos/${SEGMENT}$`), handler: serveVideo },
  { pattern: new RegExp(`^/media/images/${SEGMENT}$`), handler: serveImage },
  { pattern: new RegExp(`^/media/uploads/${SEGMENT}$`), handler: serveUpload },
  { pattern: new RegExp(`^/media/posters/${SEGMENT}$`), handler: servePoster },
];

const MEDIA_METHODS = ["GET", "HEAD"] as const;

/** Matches a raw path (no query); the method is checked by the caller so it can answer 405 with Allow. */
export function matchRoute(path: string): RouteTarget | undefined {
  if (path.startsWith(`${API_PREFIX}/`)) {
    const rest = path.slice(API_PREFIX.length);
    for (const def of API_ROUTES) {
      const match = def.pattern.exec(rest);
      if (!match) continue;
      const params: Record<string, string> = {};
      if (match[1] !== undefined) params.rawId = match[1];
      return { kind: "api", route: def.route, methods: def.methods, handler: def.handler, params };
    }
    return undefined;
  }
  for (const def of MEDIA_ROUTES) {
    const match = def.pattern.exec(path);
    if (match?.[1] !== undefined)
      return { kind: "media", route: "media", methods: MEDIA_METHODS, handler: def.handler, file: match[1] };
  }
  return undefined;
}

export function isMediaPath(path: string): boolean {
  return path.startsWith("/media/");
}
