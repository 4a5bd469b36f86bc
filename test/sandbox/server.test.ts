import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { DEFAULT_ACCOUNTS, startSandbox } from "../../src/sandbox/index.js";
import { expectError, expectOk, useSandbox } from "./support.js";

function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
  });
}

describe("startSandbox", () => {
  it("listens on 127.0.0.1 on an ephemeral port and reports its URLs and keys", async () => {
    const sandbox = await startSandbox();
    try {
      expect(sandbox.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(sandbox.baseUrl).toBe(`${sandbox.origin}/api/v1`);
      expect(sandbox.keys).toEqual({
        paid: "sk-sandbox-paid",
        free: "sk-sandbox-free",
        poor: "sk-sandbox-poor",
      });
      expect(sandbox.accounts.map((a) => [a.name, a.credits, a.paidAccess, a.subscription])).toEqual([
        ["paid", 10_000, true, "pro"],
        ["free", 100, false, null],
        ["poor", 3, true, "pro"],
      ]);
      const response = await fetch(`${sandbox.baseUrl}/credits`, {
        headers: { Authorization: `Bearer ${sandbox.keys.paid}` },
      });
      expect(response.status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it("uses random prefixed ids by default", async () => {
    const sandbox = await startSandbox();
    try {
      const response = await fetch(`${sandbox.baseUrl}/generate`, {
        method: "POST",
        headers: { Authorization: `Bearer ${sandbox.keys.paid}`, "Content-Type": "application/json" },
        body: JSON.stringify({ prompt: "p" }),
      });
      const body = (await response.json()) as { data: { video_id: string } };
      expect(body.data.video_id).toMatch(/^vid_[A-Za-z0-9_-]{12}$/);
    } finally {
      await sandbox.close();
    }
  });

  it("closes keep-alive connections, and close() may be called twice", async () => {
    const sandbox = await startSandbox();
    await fetch(`${sandbox.baseUrl}/credits`).then((r) => r.arrayBuffer());
    const started = performance.now();
    await sandbox.close();
    await sandbox.close();
    expect(performance.now() - started).toBeLessThan(1000);
    await expect(fetch(`${sandbox.baseUrl}/credits`)).rejects.toThrow();
  });

  it("refuses duplicate or blank account keys", async () => {
    const base = DEFAULT_ACCOUNTS[0]!;
    await expect(startSandbox({ accounts: [base, { ...base, name: "twin" }] })).rejects.toThrow(/duplicate/);
    await expect(startSandbox({ accounts: [{ ...base, key: "" }] })).rejects.toThrow(/key/);
    await expect(startSandbox({ accounts: [{ ...base, credits: -1 }] })).rejects.toThrow(/credits/);
    await expect(startSandbox({ accounts: [] })).rejects.toThrow(/account/);
  });

  it("finds the keys by account name", async () => {
    const { sandbox } = await useSandbox({
      accounts: [
        { key: "k-poor", name: "poor", credits: 1, paidAccess: true, subscription: "pro" },
        { key: "k-paid", name: "paid", credits: 1, paidAccess: true, subscription: "pro" },
        { key: "k-free", name: "free", credits: 1, paidAccess: false, subscription: null },
      ],
    });
    expect(sandbox.keys).toEqual({ paid: "k-paid", free: "k-free", poor: "k-poor" });
  });

  it("lets tests change an account at runtime", async () => {
    const { api, sandbox } = await useSandbox();
    const free = sandbox.accounts[1]!;
    free.paidAccess = true;
    free.subscription = "starter";
    expectOk(
      await api("/generate", {
        key: sandbox.keys.free,
        json: { prompt: "p", model: "vendor-video-2-0-fast", duration: 1 },
      }),
    );
    expect((await api("/credits", { key: sandbox.keys.free })).data).toEqual({
      credits: 95,
      paid_access: true,
      subscription_status: "active",
      plan: "starter",
    });
  });
});

describe("hostile input", () => {
  it("turns a handler exception into a 500 internal_error envelope and keeps serving", async () => {
    const { api } = await useSandbox({
      idGenerator: (kind) => {
        if (kind === "video") throw new Error("id source exploded");
        return `${kind}-x`;
      },
    });
    const answer = await api("/generate", { json: { prompt: "p" } });
    expect(expectError(answer, 500, "internal_error").message).not.toContain("exploded");
    expectOk(await api("/credits"));
  });

  it("answers unparseable HTTP with a 400 envelope", async () => {
    const { sandbox } = await useSandbox();
    const answer = await rawExchange(Number(new URL(sandbox.origin).port), "GARBAGE\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    expect(answer).toContain('"code":"validation_error"');
  });

  it("survives odd paths, deep JSON and binary bodies", async () => {
    const { api } = await useSandbox();
    expectError(await api("/videos/%00"), 404, "not_found");
    expectError(await api(`/${"a/".repeat(500)}`), 404, "not_found");
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    expectError(
      await api("/generate", { body: deep, headers: { "Content-Type": "application/json" } }),
      400,
      "validation_error",
    );
    const binary = await api("/generate", {
      body: Buffer.from([0xff, 0xfe, 0x00, 0x01]),
      headers: { "Content-Type": "application/json" },
    });
    expectError(binary, 400, "validation_error");
    const proto = await api("/generate", {
      body: '{"prompt":"p","__proto__":{"model":"x"}}',
      headers: { "Content-Type": "application/json" },
    });
    expectOk(proto);
    expect(proto.data.model).toBe("vendor-video-1-5-pro");
    expectOk(await api("/credits"));
  });
});
