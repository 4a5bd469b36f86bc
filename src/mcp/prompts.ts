/**
 * MCP prompts for the common jobs: each walks the model through the steps the agent skill
 * (skills/generation-mcp/SKILL.md) gives a shell agent: the cost first, the person's yes before spending, the
 * wait without a second start, and a look at the result before saying it is done.
 */
import { ProtocolError, ProtocolErrorCode, type Prompt } from "@modelcontextprotocol/server";
import { cleanText } from "../redact.js";

interface Job extends Prompt {
  steps(args: Record<string, string>): string;
}

const arg = (name: string, description: string, required = false) => ({ name, description, required });

/** The steps every job shares, around the job's own request. */
function walk(goal: string, request: string, look: string): string {
  return [
    `Goal: ${goal}`,
    "",
    "Work through these steps with the generation tools, in order:",
    "1. Call get_credits. Keep to models whose `usable` is true, and note the remaining credits.",
    `2. Call ${request} with dry_run: true. It starts nothing; tell the person estimated_credits and what would be sent.`,
    "3. Ask the person to confirm the cost before anything paid starts, and wait for their yes. (Above a spend limit the server asks them too; a decline is final, not an error to retry.)",
    `4. Make the same call without dry_run. If the answer has a video_id but no video_url yet, the task keeps running: call get_status with that video_id and wait: true, and never start it again (an identical request within 10 minutes returns the same task anyway).`,
    `5. ${look} Then give the person the URL (with download: true the file is saved and local_path says where).`,
  ].join("\n");
}

const VIDEO_LOOK =
  "Look at the sheet of frames that comes with a completed video (an image item, described in structuredContent.frames): say whether the motion matches what was asked, and offer one revision if it does not.";

const JOBS: Job[] = [
  {
    name: "animate_picture",
    title: "Animate a picture",
    description:
      "Turn one still picture into a short video clip (image_to_video), with the cost confirmed first.",
    arguments: [
      arg("image", "The picture: an absolute local path or an http(s) URL.", true),
      arg("motion", "What should move, e.g. 'the waves roll in, the camera pushes in slowly'."),
    ],
    steps: ({ image = "", motion }) =>
      walk(
        `animate the picture ${JSON.stringify(image)}${motion ? ` so that: ${motion}` : ""}.`,
        `generate_video with the picture (image_path for a local file, image_url for a URL), a prompt that describes the motion, duration 5 unless the person asked otherwise`,
        VIDEO_LOOK,
      ),
  },
  {
    name: "storyboard",
    title: "Storyboard of short shots",
    description: "Plan a story as a few short shots, price them all, then make each as its own video.",
    arguments: [
      arg("story", "What happens, in a sentence or two.", true),
      arg("shots", "How many shots (2-6; default 3)."),
    ],
    steps: ({ story = "", shots }) =>
      `${walk(
        `a storyboard of ${shots ?? "3"} short shots for: ${story}`,
        "generate_video once per shot (one prompt each: subject, action, camera; the same aspect_ratio for all; duration 3-5 s)",
        `${VIDEO_LOOK.replace("a completed video", "each completed shot")} Check that the shots follow one another.`,
      )}\nBefore step 2, write the shot list (one line per shot) and show it to the person; add the shots' estimated_credits into one total for step 3.`,
  },
  {
    name: "product_shot",
    title: "Product shot",
    description:
      "A clean product image (and, if asked, a short turntable video) from a description or a photo.",
    arguments: [
      arg("product", "The product, as it should appear.", true),
      arg("image", "A photo of the product: an absolute local path or an http(s) URL (edit mode)."),
      arg("style", "Background and light, e.g. 'white seamless, soft studio light'."),
    ],
    steps: ({ product = "", image, style }) =>
      walk(
        `a product shot of ${product}${style ? `, ${style}` : ""}${image ? `, from the photo ${JSON.stringify(image)}` : ""}.`,
        `generate_image${image ? " with the photo (image_paths for a local file, images for a URL)" : ""}, aspect_ratio 1:1 or 4:5, a prompt naming the product, the background and the light`,
        "Look at the image preview that comes with the result: check the product is whole, sharp and true to the description.",
      ),
  },
];

/** `prompts/list`: every job, without its steps. */
export function listPrompts(): { prompts: Prompt[] } {
  return { prompts: JOBS.map(({ steps: _steps, ...prompt }) => prompt) };
}

/** `prompts/get`: the job's steps for these arguments, as one user message; -32602 naming what is wrong. */
export function getPrompt(name: string, args: Record<string, string> = {}) {
  const job = JOBS.find((candidate) => candidate.name === name);
  const refuse = (message: string): never => {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, message);
  };
  if (job === undefined) {
    return refuse(
      `Unknown prompt ${JSON.stringify(cleanText(name, 80))}; the prompts are ${JOBS.map((j) => j.name).join(", ")}.`,
    );
  }
  const missing = job.arguments?.find((argument) => argument.required && !args[argument.name]?.trim());
  if (missing !== undefined) return refuse(`The prompt ${job.name} needs the argument "${missing.name}".`);
  const text = job.steps(
    Object.fromEntries(Object.entries(args).map(([key, value]) => [key, cleanText(value, 2000)])),
  );
  return {
    description: job.description,
    messages: [{ role: "user" as const, content: { type: "text" as const, text } }],
  };
}
