/** Local images named by a tool argument: checked before anything is sent, then uploaded. */
import { openLocalImage, type LocalImage } from "../files/local-image.js";
import type { ServerDeps, ToolContext } from "./define-tool.js";

/** Opens and checks every path (containment, type, size) before any request; closes all on failure. */
export async function openLocalImages(
  paths: string[],
  param: string,
  deps: ServerDeps,
): Promise<LocalImage[]> {
  const allowedDirs = await deps.allowedDirs();
  const opened: LocalImage[] = [];
  try {
    for (const [index, path] of paths.entries()) {
      opened.push(
        await openLocalImage(path, {
          allowedDirs,
          configuredDirs: deps.config.allowedDirs,
          param: paths.length > 1 ? `${param}[${index}]` : param,
        }),
      );
    }
    return opened;
  } catch (error) {
    await closeAll(opened);
    throw error;
  }
}

/** Uploads in turn; `deadline` (epoch ms) bounds them all, so the call still answers in time. */
export async function uploadAll(
  images: LocalImage[],
  deps: ServerDeps,
  context: ToolContext,
  deadline: number,
): Promise<string[]> {
  const urls: string[] = [];
  for (const image of images) {
    const { url } = await deps.api.upload(image, {
      signal: context.signal,
      priority: "foreground",
      deadline,
    });
    context.logger.info(`uploaded ${image.filename}`, { bytes: image.size, url });
    urls.push(url);
  }
  return urls;
}

export async function closeAll(images: LocalImage[]): Promise<void> {
  await Promise.allSettled(images.map((image) => image.close()));
}
