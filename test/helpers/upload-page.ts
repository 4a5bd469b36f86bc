/**
 * A person sending a picture through an upload link: Debian's headless Chromium (playwright-core) with a
 * fresh profile opens the link, picks the file in the page's file picker, sees the preview and presses
 * Send; the hosted URL is read from the page as the person would see it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium, type BrowserContext } from "playwright-core";
import { findChromium } from "./oauth-browser.js";

export interface PersonBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function openBrowser(): Promise<PersonBrowser> {
  const profile = await mkdtemp(path.join(tmpdir(), "upload-browser-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: findChromium(),
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
    ],
    viewport: { width: 720, height: 640 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

export interface Sent {
  /** What the page showed once sent: the hosted URL (or the page's message when it showed none). */
  shown: string;
  /** The page's Content-Security-Policy header. */
  policy: string | undefined;
  /** Errors the page's console reported (a CSP violation would show here). */
  consoleErrors: string[];
}

/** Opens `link`, picks `file`, presses Send and waits for the answer; screenshots into `shots` when given. */
export async function sendThroughPage(
  browser: PersonBrowser,
  link: string,
  file: string,
  shots?: { picked: string; sent: string },
): Promise<Sent> {
  const page = await browser.context.newPage();
  const consoleErrors: string[] = [];
  page.on("console", (message) => message.type() === "error" && consoleErrors.push(message.text()));
  try {
    const response = await page.goto(link);
    await page.setInputFiles("#file", file);
    await page.locator("#preview").waitFor({ state: "visible" });
    if (shots) await page.screenshot({ path: shots.picked });
    await page.click("button[type=submit]");
    await page.locator("#url, #status.error, #status:has-text('Received')").first().waitFor();
    if (shots) await page.screenshot({ path: shots.sent });
    const shown =
      (await page.locator("#url").count()) > 0
        ? await page.locator("#url").innerText()
        : await page.locator("#status").innerText();
    return { shown, policy: response?.headers()["content-security-policy"], consoleErrors };
  } finally {
    await page.close();
  }
}
