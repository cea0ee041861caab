import { Browser, Page } from 'playwright-core';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from './browser';

/**
 * Every user-controlled string the console renders, made hostile (HTML that would run script,
 * or add an element, if it were parsed): names of the account, workspace, tag, document,
 * instruction set, search link and API key, a document's text (search snippets), the audit
 * trail that repeats them, and the `ssoError` query parameter. In Chromium, each page is
 * opened: no dialog, no page error, no CSP refusal, no element born of the payload, and the
 * payload shown as text.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('web console: hostile names stay text (Chromium)', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  /** What the first test made (the second sends links to it). */
  let ids: { ws: string; doc: string; set: string } | undefined;
  const email = 'hostile@example.com';
  const password = 'correct horse battery';
  /** Each payload would add an element with this attribute, or set this global, if it ran. */
  const short = (n: number) => `<img src=x data-xss=${n} onerror=alert(${n})><script>alert(${n})</script>`;
  const payload = (n: number) => `x"'><img src=x data-xss=${n} onerror=alert(${n})><svg data-xss=${n} onload=alert(${n})><script>window.__xss=${n}</script>`;

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off' }), launchChromium()]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(15_000);
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    recordPageProblems(page, problems);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function noInjection(where: string) {
    // The page is drawn (the caller waited for the hostile text); give late fetches a moment to land.
    await page.waitForTimeout(300);
    const injected = await page.locator('[data-xss]').count();
    const ran = await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss ?? null);
    expect([where, injected, ran, problems]).toEqual([where, 0, null, []]);
  }

  it('renders every hostile string as text, on every page that shows it', async () => {
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email, password, name: payload(1) })).status).toBe(201);
    const api = client(server.url, (await anon.post('/v1/auth/login', { email, password })).body.accessToken);
    const ws = (await api.post('/v1/workspaces', { name: payload(2) })).body.id as string;
    const tag = await api.post(`/v1/workspaces/${ws}/tags`, { name: `t<b data-xss="3">`, color: '#112233' });
    expect(tag.status).toBe(201);
    const fd = new FormData();
    fd.append('file', new Blob([`Lighthouse keepers. ${payload(4)} The lighthouse beam <a href="javascript:alert(5)" data-xss="5">click</a>.`], { type: 'text/plain' }), 'notes.txt');
    fd.append('title', payload(6));
    fd.append('tags', tag.body.id);
    const doc = await api.post(`/v1/workspaces/${ws}/documents`, fd);
    expect(doc.status).toBe(201);
    for (let i = 0; i < 300; i++) {
      if ((await api.get(`/v1/workspaces/${ws}/documents/${doc.body.id}`)).body.processingStatus === 'VERIFIED') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const set = await api.post(`/api/workspaces/${ws}/instruction-sets`, { name: payload(7), description: payload(8) });
    expect(set.status).toBe(201);
    expect((await api.post(`/api/instruction-sets/${set.body.id}/documents`, { documentId: doc.body.id })).status).toBeLessThan(300);
    expect((await api.post(`/api/workspaces/${ws}/public-links`, { name: payload(9) })).status).toBe(201);
    expect((await api.post('/v1/api-keys', { name: short(10) })).status).toBe(201);

    await page.goto(`${server.url}/app/signin?ssoError=${encodeURIComponent(payload(11))}`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await noInjection('sign-in with ssoError');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    await page.getByText(payload(2)).locator('visible=true').first().waitFor();
    await noInjection('workspaces');

    const pages: [string, string][] = [
      [`/app/w/${ws}/documents`, payload(6)],
      [`/app/w/${ws}/documents/${doc.body.id}`, payload(6)],
      [`/app/w/${ws}/sets`, payload(7)],
      [`/app/w/${ws}/sets/${set.body.id}`, payload(7)],
      [`/app/w/${ws}/links`, payload(9)],
      [`/app/w/${ws}/settings`, 't<b data-xss="3">'],
      [`/app/w/${ws}/audit`, 'Document uploaded'],
      ['/app/settings/api-keys', short(10)],
      ['/app/settings/account', email],
    ];
    for (const [path, shown] of pages) {
      await page.goto(`${server.url}${path}`);
      await page.getByText(shown).locator('visible=true').first().waitFor();
      await noInjection(path);
    }

    await page.goto(`${server.url}/app/w/${ws}/search`);
    await page.getByLabel('Search this workspace').fill('lighthouse keepers onerror script');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('.hit').first().waitFor();
    expect(await page.locator('.hit').first().textContent()).toContain('<img src=x data-xss=4');
    await noInjection('search results');
    // An error message that repeats the caller's input (an unknown workspace id in the path; one
    // with a `/` matches no page: the next test).
    await page.goto(`${server.url}/app/w/${encodeURIComponent(`x"'><img src=x data-xss=12 onerror=alert(12)><svg data-xss=12 onload=alert(12)>`)}/documents`);
    await page.getByRole('heading', { name: 'Documents' }).waitFor();
    await noInjection('a path that is not an id');
    ids = { ws, doc: doc.body.id as string, set: set.body.id as string };
  }, 120_000);

  it("a link's path parameters cannot steer the console's API requests elsewhere (no ?, #, / or .. smuggled in by %-escapes)", async () => {
    const { ws, doc, set } = ids as { ws: string; doc: string; set: string };
    const sent: string[] = [];
    const onRequest = (r: { url(): string; method(): string }) => {
      const u = new URL(r.url());
      if (/^\/(v1|api)\//.test(u.pathname)) sent.push(`${r.method()} ${u.pathname}${u.search}`);
    };
    page.on('request', onRequest);
    // Each link a member could send an admin, and the request its page would have made for the attacker.
    const links: [string, RegExp][] = [
      // `?`: the document page's reads (and its Save and Delete) went to the workspace itself.
      [`/app/w/${ws}%3F/documents/${doc}`, new RegExp(`/v1/workspaces/${ws}\\?`)],
      [`/app/w/${ws}%23/documents/${doc}`, new RegExp(`^GET /v1/workspaces/${ws}$`)],
      // `..%2F`: any route, here the user's sessions (a set page's Delete would DELETE what it names).
      [`/app/w/${ws}/sets/..%2F..%2Fv1%2Fauth%2Fsessions%3F`, /\/v1\/auth\/sessions/],
      [`/app/w/${ws}/sets/${set}%2F..%2F..%2F..%2Fv1%2Fapi-keys%3F`, /\/v1\/api-keys/],
      // A second encoding: %2e%2e is a `..` segment to the browser's URL parser once decoded.
      [`/app/w/${ws}/documents/%252e%252e`, new RegExp(`^GET /v1/workspaces/${ws}/?$`)],
      [`/app/w/${ws}/documents/..%5C..%5C..%5Cauth%5Csessions`, /\/v1\/auth\/sessions/],
    ];
    /** The page's localStorage, inside page.evaluate (this file compiles without the DOM's types). */
    type Storage = { localStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void } };
    for (const [link, steered] of links) {
      sent.length = 0;
      await page.evaluate((w) => (globalThis as unknown as Storage).localStorage.setItem('kb-console-workspace', w), ws);
      await page.goto(`${server.url}${link}`);
      // The page's loads (before the fix some pages then failed to render what came back).
      await page.waitForLoadState('load');
      await page.waitForTimeout(1200);
      expect([link, sent.filter((r) => steered.test(r))]).toEqual([link, []]);
      await expect(page.getByText('There is no page at this address').count()).resolves.toBe(1);
      // Nor is it remembered as the workspace to open at the next sign-in (every sign-in then led to no page).
      expect([link, await page.evaluate(() => (globalThis as unknown as Storage).localStorage.getItem('kb-console-workspace'))]).toEqual([link, ws]);
    }
    page.off('request', onRequest);
    // `?` after a set's id: the page showed the real set (its read lost only an empty query), and
    // "Remove <document> from the set" (no confirmation) sent DELETE /api/instruction-sets/<set>?/documents/<doc>:
    // the whole set, and its public page, were deleted.
    const owner = client(server.url, (await client(server.url).post('/v1/auth/login', { email, password })).body.accessToken);
    await page.goto(`${server.url}/app/w/${ws}/sets/${set}%3F`);
    await page.waitForLoadState('load');
    await page.waitForTimeout(1200);
    const remove = page.getByRole('button', { name: /from the set$/ });
    if ((await remove.count()) > 0) {
      await remove.first().click();
      await page.waitForTimeout(1000);
    }
    const still = await owner.get(`/api/instruction-sets/${set}`);
    expect([still.status, still.body.documents?.length]).toEqual([200, 1]);
    // A broken %-escape in a parameter is no page either (it threw while rendering before).
    await page.goto(`${server.url}/app/w/${ws}/documents/%E0%A4%A`);
    await page.getByText('There is no page at this address').waitFor();
    expect(problems).toEqual([]);
  }, 60_000);

  it("shows an admin a member's hostile name, anonymous visitors' hostile queries and a document's hostile Markdown links as text", async () => {
    const { ws } = ids as { ws: string };
    const owner = client(server.url, (await client(server.url).post('/v1/auth/login', { email, password })).body.accessToken);
    // A member with a hostile name, joined by invitation.
    const memberEmail = 'member@example.com';
    expect((await client(server.url).post('/v1/auth/register', { email: memberEmail, password, name: payload(13) })).status).toBe(201);
    const member = client(server.url, (await client(server.url).post('/v1/auth/login', { email: memberEmail, password })).body.accessToken);
    await confirmAddress(server, memberEmail);
    const inv = (await owner.post(`/v1/workspaces/${ws}/invite`, { email: memberEmail, role: 'MEMBER' })).body.invitationId as string;
    expect((await member.post(`/v1/invitations/${inv}/accept`, {})).status).toBe(200);
    // Anonymous visitors' queries, kept in a link's history.
    const link = (await owner.post(`/api/workspaces/${ws}/public-links`, { name: 'History bot', historyMode: true })).body;
    for (const q of [short(14), `lighthouse ${payload(15)}`]) expect((await client(server.url).get(`/public/${link.token}/search?q=${encodeURIComponent(q)}`)).status).toBe(200);
    // A Markdown document whose links and images aim at script.
    const md = [
      '# Notes',
      '[a](javascript:alert(16)) [b](JaVaScRiPt:alert(16)) [c](data:text/html,<script>alert(16)</script>) [d](vbscript:x) [e]( javascript:alert(16))',
      '[f][r] <javascript:alert(16)> ![g](javascript:alert(16)) ![h](https://example.invalid/track.png) [ok](https://example.org/?x=1)',
      '',
      '[r]: javascript:alert(16)',
      '',
      `<a href="javascript:alert(16)" data-xss=16>raw</a> ${payload(16)}`,
    ].join('\n');
    const doc = (await owner.post(`/v1/workspaces/${ws}/documents`, { title: 'Hostile notes', format: 'markdown', content: md })).body;

    await page.goto(`${server.url}/app/w/${ws}/settings`);
    await page.getByText(payload(13)).locator('visible=true').first().waitFor();
    await noInjection('members');
    await page.goto(`${server.url}/app/w/${ws}/links`);
    const item = page.locator('li[data-link="History bot"]');
    await item.getByText('Query history').click();
    await item.locator('table.queries td', { hasText: short(14) }).waitFor();
    await noInjection('query history');
    await page.goto(`${server.url}/app/w/${ws}/documents/${doc.id}`);
    await page.getByTestId('save-state').filter({ hasText: /^Saved/ }).waitFor();
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('preview');
    await preview.getByRole('heading', { name: 'Notes' }).waitFor();
    await noInjection('Markdown preview');
    const hrefs = await preview.locator('a').evaluateAll((as) => as.map((a) => [a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel')]));
    expect(hrefs).toEqual([['https://example.org/?x=1', '_blank', 'noopener noreferrer nofollow']]);
    expect(await preview.locator('img, script, svg, iframe').count()).toBe(0);
  }, 90_000);
});
