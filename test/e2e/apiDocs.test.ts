import { Browser, Page } from 'playwright-core';
import { startServer, TestServer } from '../support/server';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from './browser';

/**
 * GET /docs: Swagger UI on /openapi.json under a CSP with no inline script and no inline style
 * sheet (but Swagger UI's logo colours, by their hash). The page must render and work without a
 * single refusal: a swagger-ui-dist that injects another style sheet fails here.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('API reference page (/docs) in a browser', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off' }), launchChromium()]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(20_000);
    recordPageProblems(page, problems);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('renders and expands operations with no CSP refusal or page error', async () => {
    const res = await page.goto(`${server.url}/docs`);
    const csp = res?.headers()['content-security-policy'] ?? '';
    expect(csp).toMatch(/script-src 'self';/);
    expect(csp).toMatch(/style-src-elem 'self' 'sha256-[A-Za-z0-9+/=]+';/);
    expect(csp).not.toMatch(/style-src(-elem)? [^;]*unsafe-inline/);
    await page.locator('.opblock-tag').first().waitFor();
    await page.locator('.opblock').nth(4).waitFor();
    // The logo's inline style sheet was applied (its hash is allowed): the logo's green.
    const logo = page.locator('.logo_small_svg__cls-3').first();
    if ((await logo.count()) > 0) expect(await logo.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { fill: string } }).getComputedStyle(el).fill)).toBe('rgb(133, 234, 45)');
    // Expand a few operations (their schemas, examples and style attributes render).
    for (let i = 0; i < 3; i++) {
      await page.locator('.opblock:not(.is-open) .opblock-summary').first().click();
      await page.locator('.opblock.is-open').nth(i).waitFor();
    }
    expect(problems).toEqual([]);
  });
});
