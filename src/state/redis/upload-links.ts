/**
 * Upload links in Redis, so any replica serves a link: `<prefix>upload:<id>` (the record), `...:bytes` (the
 * parked bytes), and per caller its open links and its requests this minute. Records are not sealed (the
 * replica that receives a file may not hold the key a seal needs): each is read back field by field.
 */
import type { Redis } from "ioredis";
import * as z from "zod";
import { GenerationError } from "../../api/errors.js";
import { isOpen, type UploadLink, type UploadLinkState, type UploadLinkStore } from "../upload-links.js";

const STATE = z.enum(["open", "receiving", "received", "done"]);
const LINK = z.lazy(() =>
  z.object({
    id: z.string().regex(/^[A-Za-z0-9_-]{22}$/),
    caller: z.string().regex(/^[0-9a-f]{64}$/),
    key: z.string().regex(/^[0-9a-f]{64}$/),
    expiresAt: z.number(),
    state: STATE,
    url: z.string().max(4096).optional(),
  }),
);

// KEYS: link, caller's open links, its asks this minute. ARGV: record, ttl ms, max open, per min, id, now.
const OPEN = `
local asked = redis.call('INCR', KEYS[3])
if asked == 1 then redis.call('PEXPIRE', KEYS[3], 60000) end
if asked > tonumber(ARGV[4]) then return 'too_fast' end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[6])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 'too_many' end
redis.call('ZADD', KEYS[2], tonumber(ARGV[6]) + tonumber(ARGV[2]), ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 'opened'`;
// KEYS: link, caller's open links. ARGV: expected state, record, "1" when it no longer counts as open, id.
const SWAP = `
local raw = redis.call('GET', KEYS[1])
local ok, held = pcall(cjson.decode, raw or '')
if not ok or type(held) ~= 'table' or held.state ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
if ARGV[3] == '1' then redis.call('ZREM', KEYS[2], ARGV[4]) end
return 1`;

export function redisUploadLinks(commands: Redis, prefix: string): UploadLinkStore {
  const key = (id: string) => `${prefix}upload:${id}`;
  const held = (caller: string) => `${prefix}upload-open:${caller}`;
  // A command that fails says so in the tool's or the page's words: the link could not be kept.
  const run = <T>(work: () => Promise<T>) =>
    work().catch((error: unknown) => {
      throw new GenerationError(
        "internal_error",
        `This server's shared state (Redis) did not answer (${error instanceof Error ? error.message : "error"}), so the upload link could not be kept or read.`,
        { transient: true, nextStep: "Try again in a minute; nothing was sent to the service." },
      );
    });
  return {
    open: (link, limits) =>
      run(async () => {
        const args = [JSON.stringify(link), Math.max(1, link.expiresAt - Date.now()), limits.maxOpen];
        const keys = [key(link.id), held(link.caller), `${prefix}upload-asked:${link.caller}`];
        const answer = await commands.eval(OPEN, 3, ...keys, ...args, limits.perMinute, link.id, Date.now());
        return answer === "opened" || answer === "too_many" ? answer : "too_fast";
      }),
    read: (id) =>
      run(async () => {
        const text = await commands.get(key(id));
        if (text === null) return undefined;
        const link: UploadLink | undefined = LINK.safeParse(safeJson(text)).data;
        return link !== undefined && link.expiresAt > Date.now() ? link : undefined;
      }),
    swap: (from: UploadLinkState, next) =>
      run(async () => {
        const done = isOpen(next) ? "0" : "1";
        const keys = [key(next.id), held(next.caller)];
        return (await commands.eval(SWAP, 2, ...keys, from, JSON.stringify(next), done, next.id)) === 1;
      }),
    park: (id, bytes, expiresAt) =>
      run(
        async () =>
          void (await commands.set(`${key(id)}:bytes`, bytes, "PX", Math.max(1, expiresAt - Date.now()))),
      ),
    take: (id) => run(async () => (await commands.getdelBuffer(`${key(id)}:bytes`)) ?? undefined),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
