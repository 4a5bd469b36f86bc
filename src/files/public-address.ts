/**
 * Keeps fetches of addresses the service hands us on the public internet, unless the host is allowed (the
 * service's own). IP literals are refused before connecting; names at connect time, on every address DNS
 * returns for that very connection, so DNS rebinding between a check and the connect is covered.
 */
import type { LookupAddress, LookupOptions } from "node:dns";
import { lookup } from "node:dns/promises";
import { BlockList, isIP, isIPv6, type LookupFunction } from "node:net";
import type { Agent } from "undici";

import { GenerationError } from "../api/errors.js";
import { loadUndici } from "../api/http.js";

/** Resolves a host name to every address a connection could use (the `dns.lookup` contract with `all`). */
export type ResolveHost = (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>;

const REFUSED_NEXT_STEP =
  "The file was not fetched: the server fetches only from public addresses. If the user trusts this URL, " +
  "they can open it themselves in a browser.";

/** A refused fetch target; code `internal_error` like the other refusals of downloads. */
export class NonPublicAddressError extends GenerationError {
  override name = "NonPublicAddressError";

  /** `target` names what was refused (a URL without its query, or a host); `detail` says why. */
  constructor(
    target: string,
    readonly detail: string,
    readonly host: string,
    readonly address: string,
  ) {
    const message = `Refused to fetch ${target}: ${detail}, not a public address; nothing was fetched.`;
    super("internal_error", message, { nextStep: REFUSED_NEXT_STEP });
  }
}

function range(network: string, bits: number, reason: string) {
  const family = isIPv6(network) ? "ipv6" : "ipv4";
  const list = new BlockList();
  list.addSubnet(network, bits, family);
  return { family, list, reason };
}

const RANGES = [
  range("0.0.0.0", 8, "a 'this network' address (0.0.0.0/8)"),
  range("10.0.0.0", 8, "a private address (10.0.0.0/8)"),
  range("100.64.0.0", 10, "a carrier-grade NAT address (100.64.0.0/10)"),
  range("127.0.0.0", 8, "a loopback address (127.0.0.0/8)"),
  range("169.254.0.0", 16, "a link-local address (169.254.0.0/16, where cloud metadata services answer)"),
  range("172.16.0.0", 12, "a private address (172.16.0.0/12)"),
  range("192.0.0.0", 24, "an IETF protocol address (192.0.0.0/24)"),
  range("192.168.0.0", 16, "a private address (192.168.0.0/16)"),
  range("198.18.0.0", 15, "a benchmarking address (198.18.0.0/15)"),
  range("224.0.0.0", 4, "a multicast address (224.0.0.0/4)"),
  range("240.0.0.0", 4, "a reserved or broadcast address (240.0.0.0/4)"),
  range("::", 128, "the unspecified address (::)"),
  range("::1", 128, "the loopback address (::1)"),
  range("fc00::", 7, "a unique local (private) address (fc00::/7)"),
  range("fe80::", 10, "a link-local address (fe80::/10)"),
  range("ff00::", 8, "a multicast address (ff00::/8)"),
];

// IPv6 forms carrying an IPv4 address (from this 16-bit group on): the network may deliver them to it.
const EMBEDDINGS = [
  [range("::ffff:0:0", 96, "an IPv4-mapped"), 6],
  [range("::ffff:0:0:0", 96, "an IPv4-translated"), 6],
  [range("64:ff9b::", 96, "a NAT64 (64:ff9b::/96)"), 6],
  [range("::", 96, "an IPv4-compatible"), 6],
  [range("2002::", 16, "a 6to4 (2002::/16)"), 1],
] as const;

/** Why an IP address is not public ("a loopback address (127.0.0.0/8)"); undefined when it is public. */
export function nonPublicReason(address: string): string | undefined {
  const bare = stripBrackets(address).replace(/%.*$/, "");
  const family = isIPv6(bare) ? "ipv6" : isIP(bare) === 4 ? "ipv4" : undefined;
  if (family === undefined) return "not a valid IP address";
  // Ranges of the address's own family only: BlockList would read an IPv4-mapped address as IPv4.
  const own = RANGES.find((range) => range.family === family && range.list.check(bare, family));
  if (own !== undefined || family === "ipv4") return own?.reason;
  const [embedding, at] = EMBEDDINGS.find(([range]) => range.list.check(bare, "ipv6")) ?? [];
  if (embedding === undefined || at === undefined) return undefined;
  const groups = ipv6Groups(bare);
  const ipv4 = [groups[at]! >> 8, groups[at]! & 255, groups[at + 1]! >> 8, groups[at + 1]! & 255].join(".");
  const reason = nonPublicReason(ipv4);
  return reason === undefined ? undefined : `${embedding.reason} IPv6 form of ${ipv4}, ${reason}`;
}

function literalRefusal(host: string, allowed: ReadonlySet<string>): string | undefined {
  return isIP(host) !== 0 && !allowed.has(host) ? nonPublicReason(host) : undefined;
}

/**
 * Parses `url`, refused unless http(s) with a host allowed or not a non-public IP literal (names are judged
 * at connect time); `context` follows the URL in the message ("redirected from https://cdn.example/a").
 */
export function checkPublicUrl(url: URL | string, allowHosts: readonly string[] = [], context?: string): URL {
  const parsed = typeof url === "string" ? URL.parse(url) : url;
  if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new GenerationError(
      "internal_error",
      `Refused to fetch ${context ?? "the address"}: only http and https URLs are fetched; nothing was fetched.`,
      { nextStep: REFUSED_NEXT_STEP },
    );
  }
  const host = stripBrackets(parsed.hostname);
  const reason = literalRefusal(host, allowedHostSet(allowHosts));
  if (reason !== undefined) {
    const target = `${showUrl(parsed)}${context === undefined ? "" : ` (${context})`}`;
    throw new NonPublicAddressError(target, `${parsed.hostname} is ${reason}`, parsed.hostname, host);
  }
  return parsed;
}

/** An undici Agent that connects only to public addresses or `allowHosts` (else NonPublicAddressError). */
export async function createPublicAgent(
  options: { allowHosts?: readonly string[]; resolveHost?: ResolveHost } = {},
): Promise<Agent> {
  const { Agent, buildConnector } = await loadUndici();
  const allowed = allowedHostSet(options.allowHosts ?? []);
  const connector = buildConnector({ lookup: guardLookup(allowed, options.resolveHost ?? resolveAll) });
  return new Agent({
    connect(connectOptions, callback) {
      // Node skips the lookup hook for IP literals (which undici gives without brackets).
      const host = connectOptions.hostname;
      const reason = literalRefusal(host, allowed);
      if (reason === undefined) return connector(connectOptions, callback);
      const shown = isIPv6(host) ? `[${host}]` : host;
      callback(new NonPublicAddressError(shown, `${shown} is ${reason}`, shown, host), null);
    },
  });
}

/** A lookup hook failing the connect when any address is not public: Happy Eyeballs may try them all. */
export function guardLookup(allowed: ReadonlySet<string>, resolveHost: ResolveHost): LookupFunction {
  return (hostname, options, callback) => {
    resolveHost(hostname, { ...options, all: true }).then(
      (addresses) => {
        const checked = allowed.has(normalizeHost(hostname) ?? hostname) ? [] : addresses;
        for (const { address } of checked) {
          const reason = nonPublicReason(address);
          if (reason === undefined) continue;
          const detail = `${hostname} resolves to ${address}, ${reason}`;
          return callback(new NonPublicAddressError(hostname, detail, hostname, address), "");
        }
        const [first] = addresses;
        if (options.all === true) callback(null, addresses);
        else if (first !== undefined) callback(null, first.address, first.family);
        else
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "");
      },
      (error: NodeJS.ErrnoException) => callback(error, ""),
    );
  };
}

/** `allowHosts` normalized like URL hosts (lowercase, IPv6 without brackets, IPv4 dotted); others dropped. */
export function allowedHostSet(allowHosts: readonly string[]): Set<string> {
  return new Set(allowHosts.map(normalizeHost).filter((host): host is string => host !== undefined));
}

/** A URL for messages and logs: signed CDN addresses carry tokens in the query, so origin and path only. */
export function showUrl(url: URL): string {
  const shown = `${url.origin}${url.pathname}`;
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}

const resolveAll: ResolveHost = (hostname, options) => lookup(hostname, { ...options, all: true });

// Through the URL parser, so "LOCALHOST", "127.1" and "[0:0::1]" compare like the hosts of parsed URLs.
function normalizeHost(entry: string): string | undefined {
  const bare = stripBrackets(entry.trim());
  if (!isIPv6(bare) && (bare === "" || /[/:@?#\\\s]/.test(bare))) return undefined;
  const url = URL.parse(`http://${isIPv6(bare) ? `[${bare}]` : bare}/`);
  return url === null ? undefined : stripBrackets(url.hostname);
}

// Eight 16-bit groups of an address net.isIPv6 accepted; the URL parser writes any dotted tail in hex.
function ipv6Groups(address: string): number[] {
  const [head, tail] = new URL(`http://[${address}]/`).hostname.slice(1, -1).split("::");
  const parse = (part?: string): number[] =>
    part ? part.split(":").map((group) => parseInt(group, 16)) : [];
  const [first, last] = [parse(head), parse(tail)];
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}
