/**
 * What a command prints (clig.dev): the result on stdout (with --json exactly the structuredContent);
 * errors on stderr, and progress and questions too, only on a terminal. Each exit code means one thing.
 */
import { link, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline/promises";
import type { CallToolResult } from "../tools/result.js";
import { isObject } from "../api/shapes.js";
import { isFinalStatus } from "../api/types.js";
import type { OutTarget } from "./arguments.js";

export const EXIT = { done: 0, failed: 1, usage: 2, processing: 3, refused: 4, interrupted: 130 } as const;

const stderrIsTerminal = () => process.stderr.isTTY === true;
/** NO_COLOR (no-color.org) and dumb terminals get plain text. */
const dim = (text: string) =>
  process.env["NO_COLOR"] || process.env["TERM"] === "dumb" ? text : `\u001b[2m${text}\u001b[22m`;

/** The line that shows a wait on a terminal: elapsed time, status and video_id, redrawn every second. */
export function progressLine() {
  const started = Date.now();
  let shown = "starting";
  let drawn = false;
  const draw = () => {
    if (!stderrIsTerminal()) return;
    drawn = true;
    const seconds = Math.round((Date.now() - started) / 1000);
    process.stderr.write(`\r\u001b[K${dim(`[${seconds} s] ${shown}`)}`);
  };
  const timer = setInterval(draw, 1000).unref();
  return {
    /** The tool's progress message, "video_id vid_x: processing after 12 s", shown as "processing · vid_x". */
    update(message: string) {
      const parsed = /^video_id (\S+): (.*?)(?: after \d+ s)?$/.exec(message);
      shown = parsed === null ? message : `${parsed[2]} · ${parsed[1]}`;
      draw();
    },
    stop() {
      clearInterval(timer);
      if (drawn) process.stderr.write("\r\u001b[K");
    },
  };
}

/** A y/N question on stderr; anything but yes is no. Only asked where both ends are a terminal. */
export async function askYesNo(question: string): Promise<boolean> {
  const reader = createInterface({ input: process.stdin, output: process.stderr });
  // Ctrl-C at the question: nothing has started, so nothing is left to wait for.
  reader.on("SIGINT", () => process.exit(EXIT.interrupted));
  try {
    return /^y(es)?$/i.test((await reader.question(`${question} [y/N] `)).trim());
  } catch {
    return false; // the terminal closed (Ctrl-D): no answer is no
  } finally {
    reader.close();
  }
}

export const canAsk = () => process.stdin.isTTY === true && stderrIsTerminal();

export const fieldsOf = (result: CallToolResult) =>
  isObject(result.structuredContent) ? result.structuredContent : {};
export const textOf = (result: CallToolResult) =>
  result.content.flatMap((item) => (item.type === "text" ? [item.text] : [])).join("\n");

/** What a result means for the exit code. */
export function exitCodeOf(result: CallToolResult): number {
  if (result.isError) {
    const code = /^[a-z_]+/.exec(textOf(result))?.[0];
    return code === "budget_exceeded" ? EXIT.refused : code === "validation_error" ? EXIT.usage : EXIT.failed;
  }
  const fields = fieldsOf(result);
  if (fields["declined"] === true) return EXIT.refused;
  const status = fields["status"];
  if (fields["dry_run"] === true || typeof status !== "string" || fields["video_id"] === undefined)
    return EXIT.done;
  if (status === "failed") return EXIT.failed;
  return isFinalStatus(status) ? EXIT.done : EXIT.processing;
}

/** Moves what the tool saved to where `--out` asked (the video's frame sheet beside it), paths updated. */
export async function placeMedia(result: CallToolResult, out: OutTarget | undefined): Promise<string[]> {
  if (out === undefined || !isObject(result.structuredContent) || result.isError) return [];
  const fields = result.structuredContent;
  const moved = async (from: string, index: number) => {
    if (out.file === undefined) return from;
    const { dir, name, ext } = path.parse(out.file);
    const to = index === 0 ? out.file : path.join(dir, `${name}-${index + 1}${ext}`);
    // A link never replaces a file that appeared meanwhile.
    await link(from, to);
    await unlink(from);
    for (const item of result.content) if (item.type === "text") item.text = item.text.replace(from, to);
    return to;
  };
  const notes: string[] = [];
  if (typeof fields["local_path"] === "string") {
    const saved = await moved(fields["local_path"], 0);
    fields["local_path"] = saved;
    const sheet = result.content.find((item) => item.type === "image");
    if (sheet?.type === "image") {
      const file = `${saved.replace(/\.[^./\\]*$/, "")}.frames.jpg`;
      await writeFile(file, Buffer.from(sheet.data, "base64"));
      notes.push(`Frame sheet: ${file}`);
    }
  }
  if (Array.isArray(fields["local_paths"])) {
    fields["local_paths"] = await Promise.all(
      fields["local_paths"].map((file, index) => moved(String(file), index)),
    );
  }
  return notes;
}

/** Prints the result: stdout the summary or the JSON document, stderr the error or what to do next. */
export function printResult(result: CallToolResult, options: { json: boolean; lines: string[] }): number {
  const code = exitCodeOf(result);
  const fields = fieldsOf(result);
  if (result.isError) {
    process.stderr.write(`${textOf(result)}\n`);
    return code;
  }
  if (options.json) process.stdout.write(`${JSON.stringify(fields)}\n`);
  const text = [textOf(result), ...options.lines].join("\n");
  // A failed or declined task is not the output a script waits for: what to know goes to stderr.
  const output = code === EXIT.done || code === EXIT.processing ? process.stdout : process.stderr;
  if (!options.json) output.write(`${text}\n`);
  if (code === EXIT.processing) {
    process.stderr.write(
      `Still processing: run \`generation-mcp status ${String(fields["video_id"])} --wait\` to keep waiting.\n`,
    );
  }
  return code;
}
