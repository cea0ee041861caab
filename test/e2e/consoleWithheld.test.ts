import { Browser, BrowserContext, Page } from 'playwright-core';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from './browser';

/**
 * GET /v1/workspaces leaves out the workspaces whose requireMfa / requireVerifiedEmail the
 * caller does not meet and says so in KB-Workspaces-Withheld(-Reasons): the console's workspace
 * list tells the member, one line per reason, with a link to where they can act.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('web console: workspaces withheld by their identity settings', () => {
  let server: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const password = 'correct horse battery';
  const ownerEmail = 'withheld-owner@example.com';
  const memberEmail = 'withheld-member@example.com';
  let owner: ReturnType<typeof client>;
  let memberId: string;
  let page: Page;

  const notice = (p: Page) => p.getByTestId('withheld-notice');
  const card = (p: Page, name: string) => p.locator('ul.cards a.card-title', { hasText: name });

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const p = await context.newPage();
    p.setDefaultTimeout(15_000);
    recordPageProblems(p, problems);
    return p;
  }

  async function workspace(name: string): Promise<string> {
    const created = await owner.post('/v1/workspaces', { name });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect((await owner.post(`/v1/workspaces/${id}/members`, { userId: memberId, role: 'MEMBER' })).status).toBe(201);
    return id;
  }

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off' }), launchChromium()]);
    const anon = client(server.url);
    for (const [email, name] of [
      [ownerEmail, 'Olivia Owner'],
      [memberEmail, 'Max Member'],
    ]) {
      expect((await anon.post('/v1/auth/register', { email, password, name })).status).toBe(201);
    }
    owner = client(server.url, (await anon.post('/v1/auth/login', { email: ownerEmail, password })).body.accessToken);
    // Whoever requires a confirmed address and a second factor must meet both first.
    await confirmAddress(server, ownerEmail);
    const enrol = await owner.post('/v1/auth/mfa/totp', {});
    expect((await owner.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) })).status).toBe(200);
    const member = client(server.url, (await anon.post('/v1/auth/login', { email: memberEmail, password })).body.accessToken);
    memberId = (await member.get('/v1/auth/me')).body.id;

    page = await newPage();
    await page.goto(`${server.url}/app/signin`);
    await page.getByLabel('Email').fill(memberEmail);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
  });
  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await server?.stop();
  });
  afterEach(() => {
    expect(problems).toEqual([]);
  });

  it('shows no notice while nothing is withheld', async () => {
    await workspace('Open');
    await page.goto(`${server.url}/app/workspaces`);
    // The list and the headers come in one answer: once the card is shown, so would the notice be.
    await card(page, 'Open').waitFor();
    expect(await notice(page).count()).toBe(0);
  });

  it('tells the member which workspaces are hidden and why, with a link to where they can act', async () => {
    const mfa = await workspace('Needs MFA');
    const verified = await workspace('Needs verified e-mail');
    expect((await owner.put(`/v1/workspaces/${mfa}`, { settings: { requireMfa: true } })).status).toBe(200);
    expect((await owner.put(`/v1/workspaces/${verified}`, { settings: { requireVerifiedEmail: true } })).status).toBe(200);

    await page.goto(`${server.url}/app/workspaces`);
    await notice(page).waitFor();
    const lines = await notice(page).locator('p').allInnerTexts();
    // The address first, since a second factor is set up on a confirmed address only.
    expect(lines).toEqual([
      '1 workspace is hidden: it requires a confirmed e-mail address. Confirm your address in your account.',
      '1 workspace is hidden: it requires two-step sign-in (a second factor). Set it up in your account once your address is confirmed.',
    ]);
    expect(await card(page, 'Open').count()).toBe(1);
    expect(await card(page, 'Needs MFA').count()).toBe(0);
    await page.screenshot({ path: '/work/tmp/withheld.png' });

    // The second factor's link opens the account page at "Second factor", where it is set up.
    await notice(page).getByRole('link', { name: 'Set it up in your account' }).click();
    await page.getByRole('heading', { name: 'Second factor' }).waitFor();
    expect(new URL(page.url()).pathname + new URL(page.url()).hash).toBe('/app/settings/account#second-factor');
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).waitFor();

    // The e-mail's link opens the account page where the confirmation link is mailed again.
    await page.goBack();
    await notice(page).getByRole('link', { name: 'Confirm your address in your account' }).click();
    await page.getByRole('button', { name: 'Mail the confirmation link again' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#email');
  });

  it('once the address is confirmed, lists that workspace and tells only of the second factor; once that is set up, of nothing', async () => {
    await confirmAddress(server, memberEmail);
    await page.goto(`${server.url}/app/workspaces`);
    await card(page, 'Needs verified e-mail').waitFor();
    expect(await notice(page).locator('p').allInnerTexts()).toEqual(['1 workspace is hidden: it requires two-step sign-in (a second factor). Set it up in your account.']);

    // The link's page sets the second factor up; the workspace then comes back and the notice goes.
    await notice(page).getByRole('link', { name: 'Set it up in your account' }).click();
    await page.getByRole('button', { name: 'Set up two-step sign-in' }).click();
    const secret = (await page.getByTestId('totp-secret').innerText()).replace(/\s+/g, '');
    await page.getByLabel('Code from the app').fill(totp(base32Decode(secret), Date.now() / 1000));
    await page.getByRole('button', { name: 'Confirm and turn on' }).click();
    await page.getByTestId('recovery-codes').waitFor();
    await page.goto(`${server.url}/app/workspaces`);
    await card(page, 'Needs MFA').waitFor();
    expect(await notice(page).count()).toBe(0);
  });

  it('reads hostile header values as text: markup is not rendered, absurd counts and unknown reasons break nothing', async () => {
    const cases: { count: string; reasons?: string; lines: string[] }[] = [
      // Markup in the reasons: not HTML, and an unknown reason is told generically.
      { count: '2', reasons: '<img src=x onerror="window.pwned=1">=1, MFA_ENROLMENT_REQUIRED=1', lines: ['1 workspace is hidden: it requires two-step sign-in (a second factor). Set it up in your account.', '1 workspace is hidden: your account does not meet its access requirements. Ask the workspace’s owner what it requires.'] },
      { count: '3', reasons: 'SOMETHING_NEW=3', lines: ['3 workspaces are hidden: your account does not meet their access requirements. Ask the workspace’s owner what it requires.'] },
      { count: '1', reasons: 'x'.repeat(7000), lines: ['1 workspace is hidden: your account does not meet its access requirements. Ask the workspace’s owner what it requires.'] },
      // Absurd or malformed counts: no notice.
      { count: '99999999999999999999999', reasons: 'MFA_ENROLMENT_REQUIRED=99999999999999999999999', lines: [] },
      { count: '<b>2</b>', reasons: 'MFA_ENROLMENT_REQUIRED=2', lines: [] },
    ];
    for (const c of cases) {
      await page.route('**/v1/workspaces', async (route) => {
        const response = await route.fetch();
        const headers: Record<string, string> = { ...response.headers(), 'kb-workspaces-withheld': c.count };
        if (c.reasons === undefined) delete headers['kb-workspaces-withheld-reasons'];
        else headers['kb-workspaces-withheld-reasons'] = c.reasons;
        await route.fulfill({ response, headers });
      });
      await page.goto(`${server.url}/app/workspaces`);
      await card(page, 'Open').waitFor();
      expect(await notice(page).locator('p').allInnerTexts()).toEqual(c.lines);
      expect(await page.locator('main img').count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
      await page.unroute('**/v1/workspaces');
    }
  });
});
