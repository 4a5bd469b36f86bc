import { afterEach } from "vitest";
import { sequentialIdGenerator, startSandbox } from "../../src/sandbox/index.js";
import type { SandboxHandle, SandboxOptions } from "../../src/sandbox/index.js";

export const T0 = Date.parse("2026-01-01T00:00:00.000Z");

export interface TestSandbox {
  sandbox: SandboxHandle;
  /** Moves the injected clock. */
  advance(ms: number): void;
  now(): number;
  /** fetch against the base URL with the paid key unless `key` is given (null = no Authorization). */
  api(path: string, init?: ApiInit): Promise<ApiAnswer>;
}

export interface ApiInit {
  method?: string;
  key?: string | null;
  json?: unknown;
  body?: NonNullable<RequestInit["body"]>;
  headers?: Record<string, string>;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body; undefined when it is not JSON. */
  body: { data: unknown; error: { message: string; code: string } | null } | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
  error: { message: string; code: string } | null | undefined;
}

const open: SandboxHandle[] = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((handle) => handle.close()));
});

/** A sandbox on an ephemeral port with a manual clock, sequential ids and a roomy rate limit. */
export async function useSandbox(options: SandboxOptions = {}): Promise<TestSandbox> {
  let now = T0;
  const sandbox = await startSandbox({
    clock: () => now,
    idGenerator: sequentialIdGenerator(),
    rateLimit: { limit: 10_000, windowMs: 60_000 },
    timings: { queuedMs: 1000, processingMs: 4000 },
    ...options,
  });
  open.push(sandbox);
  const api = async (path: string, init: ApiInit = {}): Promise<ApiAnswer> => {
    const headers: Record<string, string> = { ...init.headers };
    const key = init.key === undefined ? sandbox.keys.paid : init.key;
    if (key !== null) headers.Authorization = `Bearer ${key}`;
    let body = init.body;
    if (init.json !== undefined) {
      headers["Content-Type"] ??= "application/json";
      body = JSON.stringify(init.json);
    }
    const response = await fetch(`${sandbox.baseUrl}${path}`, {
      method: init.method ?? (body === undefined ? "GET" : "POST"),
      headers,
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    let parsed: ApiAnswer["body"];
    try {
      parsed = JSON.parse(text) as ApiAnswer["body"];
    } catch {
      parsed = undefined;
    }
    return {
      status: response.status,
      headers: response.headers,
      text,
      body: parsed,
      data: parsed?.data,
      error: parsed?.error,
    };
  };
  return {
    sandbox,
    advance: (ms) => {
      now += ms;
    },
    now: () => now,
    api,
  };
}

/** Asserts the error envelope and returns it for further checks. */
export function expectError(
  answer: ApiAnswer,
  status: number,
  code: string,
): { message: string; code: string } {
  if (answer.status !== status || answer.error?.code !== code || answer.data !== null) {
    throw new Error(`expected ${status} ${code}, got ${answer.status} ${answer.text.slice(0, 300)}`);
  }
  return answer.error;
}

export function expectOk(answer: ApiAnswer): void {
  if (answer.status !== 200 || answer.error !== null) {
    throw new Error(`expected 200 with data, got ${answer.status} ${answer.text.slice(0, 300)}`);
  }
}

export function tinyPng(): Buffer {
  return Buffer.from(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5d6f6a40000000049454e44ae426082",
    "hex",
  );
}

export function multipart(
  field: string,
  filename: string,
  bytes: Uint8Array,
  type = "application/octet-stream",
): FormData {
  const form = new FormData();
  form.append(field, new Blob([bytes], { type }), filename);
  return form;
}
