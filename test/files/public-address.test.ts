import type { LookupAddress, LookupOptions } from "node:dns";
import { describe, expect, it } from "vitest";

import { GenerationError } from "../../src/api/errors.js";
import {
  NonPublicAddressError,
  allowedHostSet,
  checkPublicUrl,
  guardLookup,
  nonPublicReason,
} from "../../src/files/public-address.js";
import type { ResolveHost } from "../../src/files/public-address.js";

// No test here touches the network: the classifier is pure, the lookup guard gets a fake resolver.

describe("nonPublicReason for IPv4", () => {
  // [last public address below the range, first refused, last refused, first public above it]
  const boundaries: [string, string | undefined, string, string, string | undefined][] = [
    ["this network", undefined, "0.0.0.0", "0.255.255.255", "1.0.0.0"],
    ["10/8", "9.255.255.255", "10.0.0.0", "10.255.255.255", "11.0.0.0"],
    ["100.64/10", "100.63.255.255", "100.64.0.0", "100.127.255.255", "100.128.0.0"],
    ["127/8", "126.255.255.255", "127.0.0.0", "127.255.255.255", "128.0.0.0"],
    ["169.254/16", "169.253.255.255", "169.254.0.0", "169.254.255.255", "169.255.0.0"],
    ["172.16/12", "172.15.255.255", "172.16.0.0", "172.31.255.255", "172.32.0.0"],
    ["192.0.0/24", "191.255.255.255", "192.0.0.0", "192.0.0.255", "192.0.1.0"],
    ["192.168/16", "192.167.255.255", "192.168.0.0", "192.168.255.255", "192.169.0.0"],
    ["198.18/15", "198.17.255.255", "198.18.0.0", "198.19.255.255", "198.20.0.0"],
    ["224/4 multicast", "223.255.255.255", "224.0.0.0", "239.255.255.255", undefined],
    ["240/4 reserved", undefined, "240.0.0.0", "255.255.255.255", undefined],
  ];

  it.each(boundaries)("%s: refused inside, public on both sides", (_name, below, first, last, above) => {
    expect(nonPublicReason(first)).toBeDefined();
    expect(nonPublicReason(last)).toBeDefined();
    if (below !== undefined) expect(nonPublicReason(below)).toBeUndefined();
    if (above !== undefined) expect(nonPublicReason(above)).toBeUndefined();
  });

  it("names the range in the reason", () => {
    expect(nonPublicReason("169.254.169.254")).toMatch(/link-local.*169\.254\.0\.0\/16.*metadata/);
    expect(nonPublicReason("127.0.0.2")).toMatch(/loopback/);
    expect(nonPublicReason("10.1.2.3")).toMatch(/private address \(10\.0\.0\.0\/8\)/);
    expect(nonPublicReason("255.255.255.255")).toMatch(/broadcast/);
  });

  it("accepts public addresses", () => {
    for (const address of ["8.8.8.8", "1.1.1.1", "93.184.216.34", "203.0.113.9", "223.255.255.255"]) {
      expect(nonPublicReason(address)).toBeUndefined();
    }
  });
});

describe("nonPublicReason for IPv6", () => {
  it.each([
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["0:0:0:0:0:0:0:1", "loopback"],
    ["fc00::", "unique local"],
    ["fd00::2", "unique local"],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique local"],
    ["fe80::", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"],
    ["ff00::", "multicast"],
    ["ff02::1", "multicast"],
    ["FF05::1:3", "multicast"],
    ["[::1]", "loopback"],
  ])("%s is refused (%s)", (address, reason) => {
    expect(nonPublicReason(address)).toContain(reason);
  });

  it.each([
    "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "fec0::",
    "feff::",
    "2606:4700::1111",
    "2001:4860:4860::8888",
  ])("%s is public (next to the refused ranges)", (address) => {
    expect(nonPublicReason(address)).toBeUndefined();
  });

  it.each([
    ["::ffff:127.0.0.1", "IPv4-mapped", "127.0.0.1"],
    ["::ffff:7f00:1", "IPv4-mapped", "127.0.0.1"],
    ["::ffff:a9fe:a9fe", "IPv4-mapped", "169.254.169.254"],
    ["::ffff:0:0", "IPv4-mapped", "0.0.0.0"],
    ["::ffff:0:10.0.0.1", "IPv4-translated", "10.0.0.1"],
    ["::127.0.0.1", "IPv4-compatible", "127.0.0.1"],
    ["::c0a8:101", "IPv4-compatible", "192.168.1.1"],
    ["64:ff9b::127.0.0.1", "NAT64", "127.0.0.1"],
    ["64:ff9b::a9fe:a9fe", "NAT64", "169.254.169.254"],
    ["2002:7f00:1::", "6to4", "127.0.0.1"],
    ["2002:c0a8:101:1::5", "6to4", "192.168.1.1"],
  ])("%s embeds a refused IPv4 (%s of %s)", (address, form, ipv4) => {
    const reason = nonPublicReason(address);
    expect(reason).toContain(form);
    expect(reason).toContain(ipv4);
  });

  it.each(["::ffff:8.8.8.8", "::ffff:808:808", "64:ff9b::8.8.8.8", "2002:808:808::1", "::8.8.8.8"])(
    "%s embeds a public IPv4 and is public",
    (address) => {
      expect(nonPublicReason(address)).toBeUndefined();
    },
  );

  it("refuses what is not an IP address at all", () => {
    expect(nonPublicReason("localhost")).toBe("not a valid IP address");
    expect(nonPublicReason("")).toBe("not a valid IP address");
    expect(nonPublicReason("1.2.3")).toBe("not a valid IP address");
  });
});

describe("allowedHostSet", () => {
  it("normalizes case, brackets and IP spellings the way URL hosts are", () => {
    const hosts = allowedHostSet(["LocalHost", "[::1]", "0:0::2", "127.1", " api.Example.com "]);
    expect([...hosts].sort()).toEqual(["127.0.0.1", "::1", "::2", "api.example.com", "localhost"]);
  });

  it("ignores entries that are not a bare host", () => {
    expect([...allowedHostSet(["127.0.0.1:8080", "http://x", "a/b", "", "user@host"])]).toEqual([]);
  });
});

describe("checkPublicUrl", () => {
  function refusal(run: () => unknown): NonPublicAddressError {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(NonPublicAddressError);
      return error as NonPublicAddressError;
    }
    throw new Error("expected a refusal");
  }

  it("refuses private IP literals, whatever their spelling", () => {
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://2130706433/",
      "http://0x7f.1/",
      "http://127.0.0.1./",
      "http://[::1]:8080/",
      "http://[::ffff:127.0.0.1]/",
      "https://[::ffff:7f00:1]/",
      "http://0/",
    ]) {
      expect(refusal(() => checkPublicUrl(url)).code, url).toBe("internal_error");
    }
  });

  it("says what was refused and why, without the query string", () => {
    const error = refusal(() => checkPublicUrl("http://169.254.169.254/latest/meta-data/?token=SECRET"));
    expect(error.message).toBe(
      "Refused to fetch http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a link-local address " +
        "(169.254.0.0/16, where cloud metadata services answer), not a public address; nothing was fetched.",
    );
    expect(error.message).not.toContain("SECRET");
    expect(error.nextStep).toMatch(/not fetched.*open it themselves/);
    expect(error.host).toBe("169.254.169.254");
  });

  it("allows listed hosts, with or without brackets, and public literals and names", () => {
    expect(checkPublicUrl("http://127.0.0.1:9/x", ["127.0.0.1"]).hostname).toBe("127.0.0.1");
    expect(checkPublicUrl("http://[::1]:9/x", ["::1"]).hostname).toBe("[::1]");
    expect(checkPublicUrl("http://[::1]:9/x", ["[::1]"]).hostname).toBe("[::1]");
    expect(checkPublicUrl("http://8.8.8.8/x").hostname).toBe("8.8.8.8");
    expect(checkPublicUrl("https://[2606:4700::1111]/x").hostname).toBe("[2606:4700::1111]");
    // Names are judged at connect time, on the addresses DNS gives for that connection.
    expect(checkPublicUrl("http://localhost/x").hostname).toBe("localhost");
  });

  it("allows one host without allowing its neighbours", () => {
    refusal(() => checkPublicUrl("http://127.0.0.2:9/x", ["127.0.0.1"]));
    refusal(() => checkPublicUrl("http://[::ffff:127.0.0.1]:9/x", ["127.0.0.1"]));
  });

  it("names the hop in the message", () => {
    const error = refusal(() =>
      checkPublicUrl("http://10.0.0.1/a", [], "redirected from https://cdn.example/v"),
    );
    expect(error.message).toMatch(
      /^Refused to fetch http:\/\/10\.0\.0\.1\/a \(redirected from https:\/\/cdn\.example\/v\):/,
    );
  });

  it("refuses other schemes and unparsable URLs", () => {
    for (const url of ["file:///etc/passwd", "gopher://127.0.0.1/", "not a url"]) {
      expect(() => checkPublicUrl(url)).toThrow(GenerationError);
    }
  });
});

describe("guardLookup", () => {
  function fakeResolver(answers: Record<string, string[]>): ResolveHost & { calls: LookupOptions[] } {
    const calls: LookupOptions[] = [];
    const resolve = async (hostname: string, options: LookupOptions): Promise<LookupAddress[]> => {
      calls.push(options);
      const addresses = answers[hostname];
      if (addresses === undefined)
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };
    return Object.assign(resolve, { calls });
  }

  function lookup(
    allowHosts: string[],
    resolver: ResolveHost,
    hostname: string,
    options: LookupOptions,
  ): Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family: unknown }> {
    return new Promise((resolve) =>
      guardLookup(allowedHostSet(allowHosts), resolver)(hostname, options, (error, address, family) =>
        resolve({ error, address, family }),
      ),
    );
  }

  const resolver = fakeResolver({
    "cdn.example": ["93.184.216.34", "2606:4700::1111"],
    "rebound.example": ["93.184.216.34", "127.0.0.1"],
    "metadata.example": ["169.254.169.254"],
    "v6private.example": ["2606:4700::1111", "fd00::5"],
    localhost: ["127.0.0.1", "::1"],
  });

  it("passes public answers through in the form Node asked for", async () => {
    const all = await lookup([], resolver, "cdn.example", { all: true });
    expect(all.error).toBeNull();
    expect(all.address).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:4700::1111", family: 6 },
    ]);
    const one = await lookup([], resolver, "cdn.example", {});
    expect(one).toEqual({ error: null, address: "93.184.216.34", family: 4 });
    // Always resolved with all: true, so no answer escapes the check.
    expect(resolver.calls.every((options) => options.all === true)).toBe(true);
  });

  it("refuses when any answer is not public, not only the first", async () => {
    for (const [hostname, address] of [
      ["rebound.example", "127.0.0.1"],
      ["metadata.example", "169.254.169.254"],
      ["v6private.example", "fd00::5"],
      ["localhost", "127.0.0.1"],
    ] as const) {
      const { error } = await lookup([], resolver, hostname, { all: true });
      expect(error, hostname).toBeInstanceOf(NonPublicAddressError);
      expect(error?.message).toContain(`${hostname} resolves to ${address}`);
    }
  });

  it("lets an allowed name resolve to a private address", async () => {
    const { error, address } = await lookup(["LOCALHOST"], resolver, "localhost", {});
    expect(error).toBeNull();
    expect(address).toBe("127.0.0.1");
  });

  it("passes resolver failures through untouched", async () => {
    const { error } = await lookup([], resolver, "missing.example", {});
    expect(error?.code).toBe("ENOTFOUND");
  });
});
