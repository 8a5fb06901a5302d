import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { projectDir } from './cli.js';

/** Debian's chromium, as scripts/setup.sh installs it. */
export const CHROMIUM = '/usr/bin/chromium';

/** Where the pages' screenshots are kept (CI keeps the folder as an artifact). */
export const SCREENSHOTS = join(projectDir, 'dist/screenshots');

export interface TestBrowser {
  browser: Browser;
  /** A new tab that records every request it makes and every Content-Security-Policy violation. */
  page(viewport?: { width: number; height: number }): Promise<Page & { requests: string[] }>;
  close(): Promise<void>;
}

export interface BrowserOptions {
  /** Runs the browser inside a network namespace: the command line prefix that enters it (`ip netns exec NAME`). */
  inside?: string[];
  /** The base64 SHA-256 of a certificate's public key the browser trusts whoever signed it (a test's self-signed page). */
  trustKey?: string;
}

/**
 * Debian's chromium, headless, with a fresh profile and nothing of its own on the network (the
 * background services are off: on a closed network they only fail). Inside a namespace it is spoken
 * to over a pipe, since its debugging port would be on the namespace's loopback.
 */
export async function launchBrowser(options: BrowserOptions = {}): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'mesh-page-chromium-'));
  let executablePath = CHROMIUM;
  if (options.inside) {
    executablePath = join(profile, 'chromium-inside');
    writeFileSync(executablePath, `#!/bin/sh\nexec ${[...options.inside, CHROMIUM].join(' ')} "$@"\n`);
    chmodSync(executablePath, 0o755);
  }
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    pipe: options.inside !== undefined,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${join(profile, 'profile')}`,
      ...(options.trustKey ? [`--ignore-certificate-errors-spki-list=${options.trustKey}`] : []),
    ],
  });
  return {
    browser,
    async page(viewport = { width: 1280, height: 800 }) {
      const page = (await browser.newPage()) as Page & { requests: string[] };
      page.requests = [];
      page.on('request', (r) => page.requests.push(r.url()));
      await page.setViewport(viewport);
      await page.evaluateOnNewDocument(() => {
        (window as unknown as { cspViolations: string[] }).cspViolations = [];
        document.addEventListener('securitypolicyviolation', (e) => (window as unknown as { cspViolations: string[] }).cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      return page;
    },
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The page from its top, as far as the viewport shows (`fullPage`: all of it). */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) as `${string}.png`, fullPage: options.fullPage ?? false });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's checks on the page as it is (evaluated through the debugger, which the page's CSP does not govern). */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string | null; nodes: string[] }>> {
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) }));
  });
}
