import fs from 'node:fs';
import { Browser, chromium, Page } from 'playwright-core';

// Every browser journey imports this module: a journey is many steps, each bounded on its own
// (the page's 15 s), and on a loaded machine the whole can pass the suite's 60 s per test
// without anything being wrong.
jest.setTimeout(150_000);

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it). */
export const CHROMIUM = process.env.KB_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
];

/**
 * Whether the browser journeys run here. In CI (CI=true, where .ci/run installs Chromium) they
 * always run, and a missing browser fails them. On a developer's machine without Chromium they
 * are skipped with a warning, so `npm test` stays one command on a fresh machine.
 */
export const BROWSER_AVAILABLE = fs.existsSync(CHROMIUM) || process.env.CI === 'true';
if (!BROWSER_AVAILABLE) console.warn(`web console e2e tests SKIPPED: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set KB_CHROMIUM); CI runs them.`);

/** A headless Chromium; Playwright gives every launch a fresh temporary --user-data-dir and removes it on close. */
export async function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`No Chromium at ${CHROMIUM}: apt-get install -y chromium (or set KB_CHROMIUM).`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

/** Records on `problems` every CSP refusal and uncaught error of `page` (a suite fails on any at its end). */
export function recordPageProblems(page: Page, problems: string[]): void {
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
}
