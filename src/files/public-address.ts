/**
 * Keeps server-side fetches of addresses the service hands us (media URLs, their redirects, previews) on the
 * public internet: a URL pointing into the deployment's own network (loopback, private ranges, cloud
 * metadata at 169.254.169.254) is refused unless its host is one the caller allows, such as the configured
 * service's own host (the sandbox serves media on 127.0.0.1, like its API).
 *
 * IP-literal hosts are refused before any connection; names are checked at connect time, on every address
 * DNS returns for that very connection, so a name resolving to 127.0.0.1 and DNS rebinding between a check
 * and the connect are both covered.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP, isIPv4, isIPv6 } from "node:net";
import type { LookupFunction } from "node:net";
import type { Agent } from "undici";

import { GenerationError } from "../api/errors.js";
import { loadUndici } from "../api/load-undici.js";

/** Resolves a host name to every address a connection could use (the `dns.lookup` contract with `all`). */
export type ResolveHost = (hostname: string, options: LookupOptions) => Promise<LookupAddress[]>;

export interface PublicAgentOptions {
  /**
   * Hosts that may be reached even on a non-public address: host names or IP literals, without scheme or
   * port (the allowance covers every port). Compared case-insensitively after URL normalization, IPv6 with
   * or without brackets (`::1` and `[::1]` are the same entry). Entries that are not a bare host are ignored.
   */
  allowHosts?: readonly string[] | undefined;
  /** undici's timeouts, in milliseconds. */
  headersTimeout?: number | undefined;
  bodyTimeout?: number | undefined;
  /** Deadline for DNS plus the TCP/TLS handshake; undici's default (10 s) when absent. */
  connectTimeout?: number | undefined;
  /** The resolver whose answers are checked; `dns.lookup` by default. */
  resolveHost?: ResolveHost | undefined;
}

const REFUSED_NEXT_STEP =
  "The file was not fetched: the server fetches only from public addresses. If the user trusts this URL, " +
  "they can open it themselves in a browser.";

/** A refused fetch target; code `internal_error` like the other refusals of downloads. */
export class NonPublicAddressError extends GenerationError {
  override name = "NonPublicAddressError";
  /** The host as written in the URL (IPv6 in brackets). */
  readonly host: string;
  /** The address that made it refused (the host itself for IP literals). */
  readonly address: string;
  /** Why, e.g. "localhost resolves to 127.0.0.1, a loopback address (127.0.0.0/8)". */
  readonly detail: string;

  /** `target` names what was refused: a URL without its query, or a host. */
  constructor(target: string, detail: string, host: string, address: string) {
    super(
      "internal_error",
      `Refused to fetch ${target}: ${detail}, not a public address; nothing was fetched.`,
      {
        nextStep: REFUSED_NEXT_STEP,
      },
    );
    this.host = host;
    this.address = address;
    this.detail = detail;
  }
}

/**
 * Why an IP address is not public, as a phrase ("a loopback address (127.0.0.0/8)"), or undefined when it
 * is public. Anything that does not parse as an IP address counts as not public.
 */
export function nonPublicReason(address: string): string | undefined {
  const bare = stripBrackets(address).replace(/%.*$/, "");
  if (isIPv4(bare)) return ipv4Reason(parseIPv4(bare));
  if (isIPv6(bare)) return ipv6Reason(parseIPv6(bare));
  return "not a valid IP address";
}

export function isPublicAddress(address: string): boolean {
  return nonPublicReason(address) === undefined;
}

/**
 * Parses `url` and refuses it unless it is http(s) and its host is allowed or not an IP literal in a
 * non-public range. Names are left to the connect-time check of `createPublicAgent`: call this before each
 * request (and each redirect hop) and send the request through such an agent. `context` prefixes the
 * message, e.g. "the redirect from https://cdn.example/a".
 */
export function checkPublicUrl(url: URL | string, allowHosts: readonly string[] = [], context?: string): URL {
  const parsed = typeof url === "string" ? parseUrl(url) : url;
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    throw new GenerationError(
      "internal_error",
      `Refused to fetch ${context ?? "the address"}: only http and https URLs are fetched; nothing was fetched.`,
      { nextStep: REFUSED_NEXT_STEP },
    );
  }
  const host = stripBrackets(parsed.hostname);
  if (isIP(host) !== 0 && !allowedHostSet(allowHosts).has(host)) {
    const reason = nonPublicReason(host);
    if (reason !== undefined) {
      const target = `${showUrl(parsed)}${context === undefined ? "" : ` (${context})`}`;
      throw new NonPublicAddressError(target, `${parsed.hostname} is ${reason}`, parsed.hostname, host);
    }
  }
  return parsed;
}

/**
 * An undici Agent that connects only to public addresses, except for `allowHosts`: IP-literal hosts are
 * refused before the socket is created, names after DNS and before the connect, on every address returned.
 * Refusals surface from `agent.request` as `NonPublicAddressError`. The caller destroys the agent.
 */
export async function createPublicAgent(options: PublicAgentOptions = {}): Promise<Agent> {
  const { Agent, buildConnector } = await loadUndici();
  const allowed = allowedHostSet(options.allowHosts ?? []);
  const connector = buildConnector({
    lookup: guardLookup(allowed, options.resolveHost ?? defaultResolveHost),
    ...(options.connectTimeout !== undefined && { timeout: options.connectTimeout }),
  });
  return new Agent({
    ...(options.headersTimeout !== undefined && { headersTimeout: options.headersTimeout }),
    ...(options.bodyTimeout !== undefined && { bodyTimeout: options.bodyTimeout }),
    connect(connectOptions, callback) {
      // undici gives IPv6 literals without brackets; Node skips the lookup hook for any IP literal.
      const host = connectOptions.hostname;
      const reason = isIP(host) !== 0 && !allowed.has(host) ? nonPublicReason(host) : undefined;
      if (reason !== undefined) {
        const shown = showHost(host);
        callback(new NonPublicAddressError(shown, `${shown} is ${reason}`, shown, host), null);
        return;
      }
      connector(connectOptions, callback);
    },
  });
}

/**
 * Wraps a resolver as a `net.connect` lookup hook that fails the connect when any returned address is not
 * public (unless the host is allowed). Every address is checked, not only the first: with Happy Eyeballs
 * Node may try them all.
 */
export function guardLookup(allowed: ReadonlySet<string>, resolveHost: ResolveHost): LookupFunction {
  return (hostname, options, callback) => {
    resolveHost(hostname, { ...options, all: true }).then(
      (addresses) => {
        if (!allowed.has(normalizeHost(hostname) ?? hostname)) {
          for (const { address } of addresses) {
            const reason = nonPublicReason(address);
            if (reason === undefined) continue;
            const detail = `${hostname} resolves to ${address}, ${reason}`;
            callback(new NonPublicAddressError(hostname, detail, hostname, address), "");
            return;
          }
        }
        const first = addresses[0];
        if (first === undefined) {
          callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), "");
        } else if (options.all === true) {
          callback(null, addresses);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, ""),
    );
  };
}

/** The set form of `allowHosts`: normalized (lowercase, IPv6 without brackets, IPv4 in dotted decimal). */
export function allowedHostSet(allowHosts: readonly string[]): Set<string> {
  const hosts = new Set<string>();
  for (const entry of allowHosts) {
    const host = normalizeHost(entry);
    if (host !== undefined) hosts.add(host);
  }
  return hosts;
}

const defaultResolveHost: ResolveHost = (hostname, options) => dnsLookup(hostname, { ...options, all: true });

// Through the URL parser, so "LOCALHOST", "127.1" and "[0:0::1]" compare like the hosts of parsed URLs.
function normalizeHost(entry: string): string | undefined {
  const bare = stripBrackets(entry.trim());
  if (isIPv6(bare)) return stripBrackets(new URL(`http://[${bare}]/`).hostname);
  if (bare === "" || /[/:@?#\\\s]/.test(bare)) return undefined;
  const url = parseUrl(`http://${bare}/`);
  return url === undefined ? undefined : url.hostname;
}

interface Range {
  base: number;
  bits: number;
  reason: string;
}

const IPV4_RANGES: readonly Range[] = [
  ipv4Range("0.0.0.0", 8, "a 'this network' address (0.0.0.0/8)"),
  ipv4Range("10.0.0.0", 8, "a private address (10.0.0.0/8)"),
  ipv4Range("100.64.0.0", 10, "a carrier-grade NAT address (100.64.0.0/10)"),
  ipv4Range("127.0.0.0", 8, "a loopback address (127.0.0.0/8)"),
  ipv4Range("169.254.0.0", 16, "a link-local address (169.254.0.0/16, where cloud metadata services answer)"),
  ipv4Range("172.16.0.0", 12, "a private address (172.16.0.0/12)"),
  ipv4Range("192.0.0.0", 24, "an IETF protocol address (192.0.0.0/24)"),
  ipv4Range("192.168.0.0", 16, "a private address (192.168.0.0/16)"),
  ipv4Range("198.18.0.0", 15, "a benchmarking address (198.18.0.0/15)"),
  ipv4Range("224.0.0.0", 4, "a multicast address (224.0.0.0/4)"),
  ipv4Range("240.0.0.0", 4, "a reserved or broadcast address (240.0.0.0/4)"),
];

function ipv4Range(address: string, bits: number, reason: string): Range {
  return { base: parseIPv4(address), bits, reason };
}

function ipv4Reason(address: number): string | undefined {
  for (const range of IPV4_RANGES) {
    const mask = (0xffffffff << (32 - range.bits)) >>> 0;
    if ((address & mask) >>> 0 === range.base) return range.reason;
  }
  return undefined;
}

// The forms that carry an IPv4 address in their last 32 bits: the network may deliver them to that address.
const EMBEDDING_PREFIXES: readonly { groups: readonly number[]; name: string }[] = [
  { groups: [0, 0, 0, 0, 0, 0xffff], name: "an IPv4-mapped" },
  { groups: [0, 0, 0, 0, 0xffff, 0], name: "an IPv4-translated" },
  { groups: [0x64, 0xff9b, 0, 0, 0, 0], name: "a NAT64 (64:ff9b::/96)" },
  { groups: [0, 0, 0, 0, 0, 0], name: "an IPv4-compatible" },
];

function ipv6Reason(groups: readonly number[]): string | undefined {
  if (groups.every((group) => group === 0)) return "the unspecified address (::)";
  if (groups.slice(0, 7).every((group) => group === 0) && groups[7] === 1)
    return "the loopback address (::1)";
  const first = groups[0] ?? 0;
  if ((first & 0xfe00) === 0xfc00) return "a unique local (private) address (fc00::/7)";
  if ((first & 0xffc0) === 0xfe80) return "a link-local address (fe80::/10)";
  if ((first & 0xff00) === 0xff00) return "a multicast address (ff00::/8)";
  for (const prefix of EMBEDDING_PREFIXES) {
    if (prefix.groups.every((group, index) => groups[index] === group)) {
      return embeddedReason(prefix.name, groups[6] ?? 0, groups[7] ?? 0);
    }
  }
  if (first === 0x2002) return embeddedReason("a 6to4 (2002::/16)", groups[1] ?? 0, groups[2] ?? 0);
  return undefined;
}

function embeddedReason(name: string, high: number, low: number): string | undefined {
  const ipv4 = ((high << 16) | low) >>> 0;
  const reason = ipv4Reason(ipv4);
  return reason === undefined ? undefined : `${name} IPv6 form of ${formatIPv4(ipv4)}, ${reason}`;
}

// Callers pass only strings net.isIPv4 accepted: four decimal octets.
function parseIPv4(address: string): number {
  return address.split(".").reduce((value, octet) => ((value << 8) | Number(octet)) >>> 0, 0);
}

function formatIPv4(address: number): string {
  return [24, 16, 8, 0].map((shift) => (address >>> shift) & 0xff).join(".");
}

// Callers pass only strings net.isIPv6 accepted (zone already removed): eight 16-bit groups.
function parseIPv6(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1] !== undefined) {
    const ipv4 = parseIPv4(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(ipv4 >>> 16).toString(16)}:${(ipv4 & 0xffff).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const toGroups = (part: string): number[] =>
    part === "" ? [] : part.split(":").map((g) => parseInt(g, 16));
  const headGroups = toGroups(head);
  if (tail === undefined) return headGroups;
  const tailGroups = toGroups(tail);
  const zeros = new Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  return [...headGroups, ...zeros, ...tailGroups];
}

function stripBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

function showHost(host: string): string {
  return isIPv6(host) ? `[${host}]` : host;
}

function parseUrl(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

// Signed CDN addresses carry tokens in the query; messages get origin and path only.
function showUrl(url: URL): string {
  const shown = `${url.origin}${url.pathname}`;
  return shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
}
