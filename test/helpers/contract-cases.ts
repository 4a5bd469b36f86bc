/**
 * The input rules of CONTRACT.md as a table, shared by the in-process tests (test/tools) and the stdio
 * end-to-end tests (test/e2e): each case must answer `validation_error` and send nothing.
 */
import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { tinyPng } from "./harness.js";

export type Case = [string, string, Record<string, unknown>, RegExp];

export const VALIDATION_CASES: Case[] = [
  ["generate_video", "missing prompt", {}, /prompt/],
  ["generate_video", "blank prompt", { prompt: "   " }, /prompt: must not be empty/],
  ["generate_video", "prompt too long", { prompt: "x".repeat(2001) }, /prompt: must be at most 2000/],
  ["generate_video", "prompt not a string", { prompt: 42 }, /prompt/],
  ["generate_video", "unknown model", { prompt: "a", model: "vendor-video-9" }, /model/],
  ["generate_video", "image model for video", { prompt: "a", model: "image-2" }, /model/],
  [
    "generate_video",
    "unknown generation_type",
    { prompt: "a", generation_type: "video_to_video" },
    /generation_type/,
  ],
  [
    "generate_video",
    "image_to_video without image",
    { prompt: "a", generation_type: "image_to_video" },
    /image_url: image_to_video needs/,
  ],
  [
    "generate_video",
    "text_to_video with image",
    { prompt: "a", generation_type: "text_to_video", image_url: "https://x.test/a.png" },
    /generation_type/,
  ],
  [
    "generate_video",
    "image_url not http",
    { prompt: "a", image_url: "file:///etc/passwd" },
    /image_url: must be an http\(s\) URL/,
  ],
  ["generate_video", "image_url javascript", { prompt: "a", image_url: "javascript:alert(1)" }, /image_url/],
  [
    "generate_video",
    "both image_url and image_path",
    { prompt: "a", image_url: "https://x.test/a.png", image_path: "/tmp/a.png" },
    /image_path: give image_url or image_path/,
  ],
  [
    "generate_video",
    "aspect ratio with x",
    { prompt: "a", aspect_ratio: "16x9" },
    /aspect_ratio: must be W:H/,
  ],
  ["generate_video", "aspect ratio zero", { prompt: "a", aspect_ratio: "0:9" }, /aspect_ratio/],
  ["generate_video", "aspect ratio three terms", { prompt: "a", aspect_ratio: "16:9:1" }, /aspect_ratio/],
  ["generate_video", "duration zero", { prompt: "a", duration: 0 }, /duration: must be more than 0/],
  ["generate_video", "duration negative", { prompt: "a", duration: -5 }, /duration/],
  ["generate_video", "duration over max", { prompt: "a", duration: 21 }, /duration: must be at most 20/],
  ["generate_video", "duration as string", { prompt: "a", duration: "5" }, /duration/],
  ["generate_video", "duration huge", { prompt: "a", duration: 1e308 }, /duration/],
  [
    "generate_video",
    "unknown resolution",
    { prompt: "a", model: "vendor-video-2-0", resolution: "4k" },
    /resolution/,
  ],
  [
    "generate_video",
    "resolution with lite model",
    { prompt: "a", resolution: "720p" },
    /resolution: is only accepted with model vendor-video-2-0/,
  ],
  [
    "generate_video",
    "resolution with fast model",
    { prompt: "a", model: "vendor-video-2-0-fast", resolution: "720p" },
    /resolution/,
  ],
  ["generate_video", "timeout negative", { prompt: "a", timeout_seconds: -1 }, /timeout_seconds/],
  ["generate_video", "timeout too long", { prompt: "a", timeout_seconds: 3601 }, /timeout_seconds/],
  ["generate_video", "wait not boolean", { prompt: "a", wait: "yes" }, /wait/],
  ["generate_video", "unknown parameter", { prompt: "a", durration: 5 }, /unknown parameter\(s\) durration/],
  ["generate_image", "missing prompt", {}, /prompt/],
  ["generate_image", "video model for image", { prompt: "a", model: "vendor-video-2-0" }, /model/],
  ["generate_image", "unknown resolution", { prompt: "a", resolution: "8k" }, /resolution/],
  ["generate_image", "unknown output_format", { prompt: "a", output_format: "gif" }, /output_format/],
  [
    "generate_image",
    "images not URLs",
    { prompt: "a", images: ["not a url"] },
    /images\.0: must be an http\(s\) URL/,
  ],
  ["generate_image", "images not an array", { prompt: "a", images: "https://x.test/a.png" }, /images/],
  // An empty image_paths counts as not given (test/mcp/form-defaults.test.ts); an empty path in it does not.
  [
    "generate_image",
    "empty path in image_paths",
    { prompt: "a", image_paths: [""] },
    /image_paths\.0: must not be empty/,
  ],
  [
    "generate_image",
    "too many references",
    { prompt: "a", images: Array.from({ length: 11 }, (_, i) => `https://x.test/${i}.png`) },
    /images: must hold at most 10/,
  ],
  ["generate_image", "bad aspect ratio", { prompt: "a", aspect_ratio: "wide" }, /aspect_ratio/],
  [
    "upload_image",
    "nothing given",
    {},
    /path: give exactly one of path, data_base64, from_user: true or upload_id/,
  ],
  [
    "upload_image",
    "both given",
    { path: "/tmp/a.png", data_base64: "AAAA", filename: "a.png" },
    /give exactly one/,
  ],
  [
    "upload_image",
    "base64 without filename",
    { data_base64: "AAAA" },
    /filename: is required with data_base64/,
  ],
  ["upload_image", "invalid base64", { data_base64: "!!!not base64!!!", filename: "a.png" }, /data_base64/],
  [
    "upload_image",
    "base64 of text",
    { data_base64: Buffer.from("hello world, plain text").toString("base64"), filename: "a.png" },
    /data_base64.*(JPG|PNG|WebP|image)/i,
  ],
  ["get_status", "missing video_id", {}, /video_id/],
  ["get_status", "empty video_id", { video_id: "" }, /video_id: must not be empty/],
  ["get_status", "dot-dot video_id", { video_id: ".." }, /video_id: is not a task id/],
  [
    "get_status",
    "control characters in id",
    { video_id: "a\u0000b" },
    /video_id: must not contain control characters/,
  ],
  ["get_status", "id too long", { video_id: "x".repeat(257) }, /video_id/],
  ["list_videos", "page zero", { page: 0 }, /page: must be 1 or more/],
  ["list_videos", "page fractional", { page: 1.5 }, /page: must be a whole number/],
  ["list_videos", "limit zero", { limit: 0 }, /limit: must be from 1 to 50/],
  ["list_videos", "limit 51", { limit: 51 }, /limit: must be from 1 to 50/],
  ["list_videos", "limit as string", { limit: "10" }, /limit/],
  ["get_credits", "unexpected parameter", { verbose: true }, /unknown parameter/],
  ["no_such_tool", "unknown tool", {}, /Unknown tool/],
];

export interface FileFixtures {
  imagesDir: string;
  /** A valid PNG inside the allowed folder. */
  png: string;
  /** A PNG in a sibling folder whose name shares the allowed folder's prefix. */
  outside: string;
  /** Text named .png, inside the allowed folder. */
  textAsPng: string;
}

/** Where the fixtures live around an allowed `imagesDir` (nothing is written yet). */
export function fixturePaths(imagesDir: string): FileFixtures {
  return {
    imagesDir,
    png: path.join(imagesDir, "ok.png"),
    textAsPng: path.join(imagesDir, "notes.png"),
    outside: path.join(`${imagesDir}-evil`, "cat.png"),
  };
}

/** Writes the files the local-path cases need; `imagesDir` must exist. */
export async function prepareFileFixtures(f: FileFixtures): Promise<void> {
  await writeFile(f.png, tinyPng());
  await writeFile(f.textAsPng, "this is text, not an image");
  await mkdir(path.dirname(f.outside), { recursive: true });
  await writeFile(f.outside, tinyPng());
  await symlink(f.outside, path.join(f.imagesDir, "link-out.png"));
}

/** generate_video arguments naming a local file that must be refused, with the expected message. */
export function fileCases(f: FileFixtures): [string, Record<string, unknown>, RegExp][] {
  const { imagesDir, outside, textAsPng } = f;
  return [
    [
      "a file outside the allowed folders (sibling prefix)",
      { prompt: "a", image_path: outside },
      /image_path: .*outside the allowed folders/,
    ],
    [
      "a symlink escaping the allowed folder",
      { prompt: "a", image_path: path.join(imagesDir, "link-out.png") },
      /image_path/,
    ],
    [
      "a path that does not exist",
      { prompt: "a", image_path: path.join(imagesDir, "missing.png") },
      /image_path/,
    ],
    [
      "a text file named .png",
      { prompt: "a", image_path: textAsPng },
      /image_path: .*(JPG, PNG or WebP|not an? .*image)/i,
    ],
    ["a relative path", { prompt: "a", image_path: "images/ok.png" }, /image_path/],
    ["a directory", { prompt: "a", image_path: imagesDir }, /image_path/],
    [
      "a traversal out of the folder",
      { prompt: "a", image_path: `${imagesDir}/../../etc/passwd` },
      /image_path/,
    ],
  ];
}
