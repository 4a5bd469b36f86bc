/** The tool list, in the order clients show them. */
import type { ToolDefinition } from "./define-tool.js";
import { generateImage } from "./generate-image.js";
import { generateVideo } from "./generate-video.js";
import { getCredits } from "./get-credits.js";
import { getStatus } from "./get-status.js";
import { listVideos } from "./list-videos.js";
import { uploadImage } from "./upload-image.js";

export const TOOLS: readonly ToolDefinition[] = [
  generateVideo,
  getStatus,
  generateImage,
  uploadImage,
  listVideos,
  getCredits,
];
