import fs from 'node:fs';
import path from 'node:path';
import jsQR from 'jsqr';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { client, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';
import { BROWSER_AVAILABLE, launchChromium } from './browser';

/**
 * The console's team, audit and identity screens in Chromium against the real server:
 * invitations (pending, revoke, accept from the mailed link as a newcomer), ownership
 * transfer, the audit actor filter and "verify the log", an instruction set as of a past time,
 * a search link's query history, two-step sign-in, sessions, password reset, e-mail
 * confirmation, the Markdown preview and the side-by-side diff of a conflict.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('web console: team, audit and identity screens, end to end in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const password = 'correct horse battery';
  const ownerEmail = `owner-${Date.now()}@example.com`;
  let page: Page;
  let owner: ReturnType<typeof client>;
  let ws: string;

  /** A fresh browser profile (its own cookies), failing the suite on any CSP violation or page error. */
  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const p = await context.newPage();
    p.setDefaultTimeout(15_000);
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    p.on('pageerror', (e) => problems.push(String(e)));
    return p;
  }

  const outbox = () => path.join(server.dataDir, 'outbox');
  /** The path and query of the link in the newest mail to `to` about `page` (quoted-printable decoded). */
  async function mailedLink(to: string, pagePath: string, after = 0): Promise<string> {
    const until = Date.now() + 15_000;
    for (;;) {
      const files = fs.existsSync(outbox()) ? fs.readdirSync(outbox()).map((f) => path.join(outbox(), f)) : [];
      const mails = files
        .filter((f) => fs.statSync(f).mtimeMs >= after)
        .map((f) => fs.readFileSync(f, 'utf8').replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16))))
        .filter((raw) => raw.toLowerCase().includes(`to: ${to.toLowerCase()}`));
      for (const raw of mails) {
        const m = new RegExp(`https?://[^\\s/]+(/${pagePath}\\?token=[A-Za-z0-9%._-]+)`).exec(raw);
        if (m) return m[1];
      }
      if (Date.now() > until) throw new Error(`no ${pagePath} mail to ${to}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  const signInAt = async (p: Page, email: string, pw = password) => {
    await p.goto(`${server.url}/app/signin`);
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(pw);
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  };
  const tab = (p: Page, name: string) => p.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name, exact: true }).click();

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off', KB_ACCESS_TOKEN_TTL: '60' }), launchChromium()]);
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email: ownerEmail, password, name: 'Olivia Owner' })).status).toBe(201);
    owner = client(server.url, (await anon.post('/v1/auth/login', { email: ownerEmail, password })).body.accessToken);
    ws = (await owner.post('/v1/workspaces', { name: 'Regulated' })).body.id;
    page = await newPage();
    await signInAt(page, ownerEmail);
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await server?.stop();
  });

  it('confirms the e-mail address from the mailed link', async () => {
    const link = await mailedLink(ownerEmail, 'verify-email');
    // The mailed path (without /app) redirects into the console.
    await page.goto(server.url + link);
    expect(page.url()).toContain('/app/verify-email?token=');
    await page.getByRole('status').filter({ hasText: 'Your e-mail address is confirmed.' }).waitFor();
    await page.goto(server.url + link);
    await page.getByRole('alert').filter({ hasText: 'not valid, or was used already' }).waitFor();
    expect((await owner.get('/v1/auth/me')).body.emailVerified).toBe(true);
  });

  it('invites two people, lists them as pending, revokes one; the other joins from the mailed link as a newcomer', async () => {
    await page.goto(`${server.url}/app/w/${ws}/settings`);
    for (const email of ['newcomer@example.com', 'typo@example.com']) {
      await page.getByLabel('Invite by e-mail').fill(email);
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.locator('table.invitations td', { hasText: email }).waitFor();
    }
    const pending = page.locator('table.invitations tbody tr');
    expect(await pending.count()).toBe(2);
    expect(await pending.first().getByText('Pending', { exact: true }).count()).toBe(1);
    await page.getByRole('button', { name: 'Revoke the invitation of typo@example.com' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this invitation?' });
    await dialog.getByText('The link sent to typo@example.com stops working.').waitFor();
    await dialog.getByRole('button', { name: 'Revoke invitation' }).click();
    await page.locator('table.invitations td', { hasText: 'typo@example.com' }).waitFor({ state: 'detached' });
    expect(await pending.count()).toBe(1);

    // The revoked invitation's mailed link no longer works.
    const newcomerPage = await newPage();
    const revokedLink = await mailedLink('typo@example.com', 'accept-invitation');
    await newcomerPage.goto(server.url + revokedLink);
    await newcomerPage.getByLabel('Name').fill('Typo');
    await newcomerPage.getByLabel('Password').fill(password);
    await newcomerPage.getByRole('button', { name: 'Create account and join' }).click();
    await newcomerPage.getByRole('alert').filter({ hasText: 'no longer valid' }).waitFor();

    const link = await mailedLink('newcomer@example.com', 'accept-invitation');
    await newcomerPage.goto(server.url + link);
    await newcomerPage.getByRole('heading', { name: 'Join a workspace' }).waitFor();
    await newcomerPage.getByLabel('Name').fill('Nadia Newcomer');
    await newcomerPage.getByLabel('Password').fill(password);
    await newcomerPage.getByRole('button', { name: 'Create account and join' }).click();
    await newcomerPage.getByRole('heading', { name: 'Documents' }).waitFor();
    expect(newcomerPage.url()).toContain(`/app/w/${ws}/documents`);
    // Signed in with the console's own cookie session: a reload keeps it.
    await newcomerPage.reload();
    await newcomerPage.getByRole('heading', { name: 'Documents' }).waitFor();

    await page.reload();
    await page.locator('table.members td', { hasText: 'Nadia Newcomer' }).waitFor();
    await page.getByText('No invitation is waiting to be accepted.').waitFor();
  });

  it('filters the audit trail by actor (picked from the members) and verifies the log for the owner', async () => {
    await tab(page, 'Audit trail');
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    const actor = page.getByLabel('Actor');
    await actor.selectOption({ label: `Nadia Newcomer (newcomer@example.com)` });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('td[data-action="InvitationAccepted"]').waitFor();
    const actions = await page.locator('td[data-action]').evaluateAll((tds) => tds.map((td) => td.getAttribute('data-action')));
    expect(actions.sort()).toEqual(['InvitationAccepted', 'MemberAdded']);
    await actor.selectOption({ label: 'Anyone' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('td[data-action="InvitationRevoked"]').waitFor();
    expect(await page.locator('td[data-action="InvitationRevoked"]').textContent()).toBe('Invitation revoked');

    await page.getByRole('button', { name: 'Verify the log' }).click();
    const result = page.getByTestId('verify-result');
    await result.waitFor();
    expect(await result.textContent()).toMatch(/^Intact\. \d+ events checked \(\d+ of them this workspace's\); the hash chain is unbroken/);
  });

  it('transfers ownership with confirmation: the newcomer becomes owner, the owner an admin, and the audit trail says so', async () => {
    await tab(page, 'Settings');
    const row = (name: string) => page.locator('table.members tbody tr', { hasText: name });
    const nadiaRole = row('Nadia Newcomer').getByLabel('Role of Nadia Newcomer');
    await nadiaRole.waitFor(); // the members list loads after the tab
    expect(await nadiaRole.locator('option').allTextContents()).toEqual(['Owner', 'Admin', 'Member']);
    await page.getByRole('button', { name: 'Transfer ownership to Nadia Newcomer' }).click();
    const dialog = page.getByRole('dialog', { name: 'Transfer ownership?' });
    await dialog.getByText('Nadia Newcomer (newcomer@example.com) becomes the owner of this workspace and you become an admin.').waitFor();
    await dialog.getByRole('button', { name: 'Transfer ownership' }).click();
    await page.getByText('Your role: Admin').waitFor();
    expect(await row('Nadia Newcomer').getByRole('cell').nth(1).textContent()).toBe('Owner');
    expect(await row('Olivia Owner').getByLabel('Role of Olivia Owner').inputValue()).toBe('ADMIN');
    // An admin is not offered the OWNER-only actions (nor Owner in a role menu: only an owner may grant it).
    expect(await row('Olivia Owner').getByLabel('Role of Olivia Owner').locator('option').allTextContents()).toEqual(['Admin', 'Member']);
    expect(await page.getByRole('button', { name: /^Transfer ownership to/ }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Delete workspace…' }).isDisabled()).toBe(true);
    await tab(page, 'Audit trail');
    await page.locator('td[data-action="OwnershipTransferred"]').waitFor();
    // The details name the people once the members list has loaded (it loads beside the trail).
    const detailsCell = page.locator('tr', { has: page.locator('td[data-action="OwnershipTransferred"]') }).locator('td').last();
    await detailsCell.filter({ hasText: 'From: Olivia Owner' }).waitFor({ timeout: 10_000 });
    expect(await detailsCell.textContent()).toBe('From: Olivia Owner · To: Nadia Newcomer · Previous role: Member');
    // Only owners verify the log.
    expect(await page.getByRole('button', { name: 'Verify the log' }).count()).toBe(0);
  });

  it('shows an instruction set as of a past time, and a search link’s query history', async () => {
    const set = (await owner.post(`/api/workspaces/${ws}/instruction-sets`, { name: 'Tone v1' })).body;
    await new Promise((r) => setTimeout(r, 1100));
    const between = new Date();
    await new Promise((r) => setTimeout(r, 1100));
    expect((await owner.patch(`/api/instruction-sets/${set.id}`, { name: 'Tone v2', expectedUpdatedAt: set.updatedAt })).status).toBe(200);
    await page.goto(`${server.url}/app/w/${ws}/sets/${set.id}`);
    await page.getByRole('heading', { name: 'Tone v2' }).waitFor();
    const local = await page.evaluate((iso) => {
      const d = new Date(iso);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    }, between.toISOString());
    await page.getByLabel('Show the set as it was at').fill(local);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const past = page.getByTestId('set-as-of');
    await past.waitFor();
    expect(await past.locator('dd').nth(1).textContent()).toBe('Tone v1');
    await page.getByLabel('Show the set as it was at').fill('2001-01-01T00:00:00');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.getByRole('alert').filter({ hasText: 'The set did not exist yet at that time.' }).waitFor();

    const link = (await owner.post(`/api/workspaces/${ws}/public-links`, { name: 'Helpdesk bot', historyMode: true })).body;
    for (const q of ['refund window', 'opening hours']) expect((await client(server.url).get(`/public/${link.token}/search?q=${encodeURIComponent(q)}`)).status).toBe(200);
    await tab(page, 'Search links');
    const item = page.locator('li[data-link="Helpdesk bot"]');
    await item.getByText('Query history').click();
    await item.locator('table.queries td', { hasText: 'opening hours' }).waitFor();
    expect(await item.locator('table.queries tbody td:nth-child(2)').allTextContents()).toEqual(['opening hours', 'refund window']);
    await item.getByRole('button', { name: 'Turn history off for Helpdesk bot' }).click();
    await item.getByText('No stored queries.').waitFor();
  });

  it('renders Markdown in a preview (raw HTML stays text) and shows a conflict side by side', async () => {
    const doc = (await owner.post(`/v1/workspaces/${ws}/documents`, { title: 'Runbook', format: 'markdown', content: '# Restart\n\nRun **one** step.\n\n<script>alert(1)</script>' })).body;
    await page.goto(`${server.url}/app/w/${ws}/documents/${doc.id}`);
    const editor = page.getByLabel('Content', { exact: true });
    await page.getByTestId('save-state').filter({ hasText: /^Saved/ }).waitFor();
    await page.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('preview');
    await preview.getByRole('heading', { name: 'Restart' }).waitFor();
    expect(await preview.locator('strong').textContent()).toBe('one');
    expect(await preview.locator('script').count()).toBe(0);
    expect(await preview.textContent()).toContain('<script>alert(1)</script>');
    expect(await editor.isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Write' }).click();

    const current = (await owner.get(`/v1/workspaces/${ws}/documents/${doc.id}/content`)).body;
    expect((await owner.patch(`/v1/workspaces/${ws}/documents/${doc.id}`, { content: '# Restart\n\nRun two steps.\n\n<script>alert(1)</script>', expectedUpdatedAt: current.updatedAt })).status).toBe(200);
    await editor.fill('# Restart\n\nRun **one** step, then check.\n\n<script>alert(1)</script>');
    await editor.blur();
    const diff = page.getByTestId('diff');
    await diff.waitFor();
    const changed = diff.locator('tr.diff-changed');
    expect(await changed.count()).toBe(1);
    expect(await changed.locator('td[data-side=theirs]').textContent()).toBe('only in theirs: Run two steps.');
    expect(await changed.locator('td[data-side=mine]').textContent()).toBe('only in yours: Run **one** step, then check.');
    expect(await diff.locator('tr.diff-same').count()).toBe(4);
    await page.getByTestId('conflict').getByRole('button', { name: 'Keep mine (overwrite)' }).click();
    await page.getByTestId('conflict').waitFor({ state: 'detached' });
    await page.getByTestId('save-state').filter({ hasText: /^Saved/ }).waitFor();
    expect((await owner.get(`/v1/workspaces/${ws}/documents/${doc.id}/content`)).body.content).toContain('then check.');
  });

  it('turns on two-step sign-in, signs in with a code, signs out another session, and turns it off with a recovery code', async () => {
    await page.goto(`${server.url}/app/settings/account`);
    await page.getByRole('heading', { name: 'Account' }).waitFor();
    await page.getByText('Confirmed', { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).click();
    const secret = (await page.getByTestId('totp-secret').textContent()) as string;
    const uri = (await page.getByTestId('otpauth-uri').getAttribute('href')) as string;
    expect(uri).toMatch(/^otpauth:\/\/totp\//);
    // The QR code on screen, drawn to a canvas and decoded, is the same set-up link.
    const pixels: number[] = await page.getByTestId('totp-qr').evaluate(async (svg) => {
      const w = globalThis as any; // the browser's globals (this file compiles without the DOM library)
      const img = new w.Image();
      img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(new w.XMLSerializer().serializeToString(svg))}`;
      await img.decode();
      const canvas = w.document.createElement('canvas');
      canvas.width = canvas.height = 400;
      const g = canvas.getContext('2d');
      g.drawImage(img, 0, 0, 400, 400);
      return Array.from(g.getImageData(0, 0, 400, 400).data);
    });
    expect(jsQR(Uint8ClampedArray.from(pixels), 400, 400)?.data).toBe(uri);
    const seed = base32Decode(secret);
    const t0 = Date.now() / 1000;
    await page.getByLabel('Code from the app').fill(totp(seed, t0));
    await page.getByRole('button', { name: 'Confirm and turn on' }).click();
    const codes = ((await page.getByTestId('recovery-codes').textContent()) as string).split('\n');
    expect(codes.length).toBe(10);
    await page.getByText('Two-step sign-in is').filter({ hasText: 'on' }).first().waitFor();

    // The API session made in beforeAll is listed; sign it out.
    const sessions = page.locator('table.sessions tbody tr');
    expect(await sessions.count()).toBeGreaterThanOrEqual(2);
    await page.getByRole('button', { name: 'Sign out every other session…' }).click();
    await page.getByRole('dialog', { name: 'Sign out every other session?' }).getByRole('button', { name: 'Sign out others' }).click();
    await page.getByRole('status').filter({ hasText: /session(s)? signed out\./ }).waitFor();
    await sessions.nth(1).waitFor({ state: 'detached' });
    expect(await sessions.count()).toBe(1);
    // The API session made in beforeAll has ended: its access token is refused at once.
    expect((await owner.get('/v1/auth/me')).status).toBe(401);

    // A new browser: the password, then the code.
    const fresh = await newPage();
    await signInAt(fresh, ownerEmail);
    await fresh.getByLabel('Code').fill(totp(seed, t0 + 30));
    await fresh.getByRole('button', { name: 'Verify code' }).click();
    await fresh.getByRole('heading', { name: 'Workspaces' }).waitFor();

    await page.reload();
    await page.getByLabel('Code to turn it off').fill(codes[1]);
    await page.getByRole('button', { name: 'Turn off' }).click();
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).waitFor();
    // Off: the password alone signs in again.
    const login = await client(server.url).post('/v1/auth/login', { email: ownerEmail, password });
    expect(login.status).toBe(200);
    expect((await client(server.url, login.body.accessToken).get('/v1/auth/me')).body.mfaEnabled).toBe(false);
  });

  it('resets a forgotten password from the mailed link; every session ends', async () => {
    const p = await newPage();
    await p.goto(`${server.url}/app/signin`);
    await p.getByRole('link', { name: 'Forgot your password?' }).click();
    await p.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
    const before = Date.now();
    await p.getByLabel('Email').fill(ownerEmail);
    await p.getByRole('button', { name: 'Mail me a link' }).click();
    await p.getByRole('status').filter({ hasText: 'If an account uses this address, a reset link is on its way.' }).waitFor();
    const link = await mailedLink(ownerEmail, 'reset-password', before - 1000);
    await p.goto(server.url + link);
    await p.getByLabel(/^New password/).fill('a brand new passphrase');
    await p.getByLabel('The same again').fill('a brand new passphrase');
    await p.getByRole('button', { name: 'Change password' }).click();
    await p.getByRole('status').filter({ hasText: 'every session of your account has been signed out' }).waitFor();
    // The first browser's session was revoked: it cannot renew.
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await signInAt(p, ownerEmail, 'a brand new passphrase');
    await p.getByRole('heading', { name: 'Workspaces' }).waitFor();
    expect(problems).toEqual([]);
  });
});
