import { Browser, Page } from 'playwright-core';
import { client, confirmAddress, startServer, TestServer } from '../support/server';
import { base32Decode, totp } from '../../src/security/totp';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from './browser';

/**
 * Console sides of the fifth identity review. A single sign-on into an account with a second factor comes back to the console's sign-in
 * page with the challenge in the fragment (`/app/signin#mfaChallenge=…`, the callback's 302):
 * the page opens its code form (the fragment leaves the address bar), and a code signs in.
 * The challenge here is a password sign-in's: the page cannot tell them apart. And an
 * invitation accepted with an unconfirmed address says why, and where to confirm it.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('web console: the second factor after single sign-on (Chromium)', () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off' }), launchChromium()]);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.setDefaultTimeout(15_000);
    recordPageProblems(page, problems);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('opens the code form from the fragment, clears it, and a recovery code signs in', async () => {
    const email = 'ssomfa@example.com';
    const password = 'correct horse battery';
    const anon = client(server.url);
    expect((await anon.post('/v1/auth/register', { email, password, name: 'Sso Mfa' })).status).toBe(201);
    await confirmAddress(server, email);
    const api = client(server.url, (await anon.post('/v1/auth/login', { email, password })).body.accessToken);
    const enrol = await api.post('/v1/auth/mfa/totp', {});
    const confirmed = await api.post('/v1/auth/mfa/totp/confirm', { code: totp(base32Decode(enrol.body.secret), Date.now() / 1000) });
    expect(confirmed.status).toBe(200);
    const step = await anon.post('/v1/auth/login', { email, password });
    expect(step.body.error.code).toBe('MFA_REQUIRED');

    await page.goto(`${server.url}/app/signin#mfaChallenge=${encodeURIComponent(step.body.error.details.challenge as string)}`);
    await page.getByRole('form', { name: 'Second factor' }).waitFor();
    expect(new URL(page.url()).hash).toBe('');
    await page.getByLabel('Code').fill((confirmed.body.recoveryCodes as string[])[0]);
    await page.getByRole('button', { name: 'Verify code' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    // A fragment that is not a challenge leaves the password form.
    await page.goto(`${server.url}/app/signin#mfaChallenge=%E0%A4%A`);
    expect(problems).toEqual([]);
  });

  it('accepting an invitation with an unconfirmed address shows the error and a link to confirm it; once confirmed, it joins', async () => {
    const anon = client(server.url);
    const password = 'correct horse battery';
    expect((await anon.post('/v1/auth/register', { email: 'inviter@example.com', password, name: 'Inviter' })).status).toBe(201);
    const owner = client(server.url, (await anon.post('/v1/auth/login', { email: 'inviter@example.com', password })).body.accessToken);
    const ws = (await owner.post('/v1/workspaces', { name: 'Invited here' })).body.id as string;
    const email = 'invitee@example.com';
    expect((await anon.post('/v1/auth/register', { email, password, name: 'Invitee' })).status).toBe(201);
    const inv = (await owner.post(`/v1/workspaces/${ws}/invite`, { email, role: 'MEMBER' })).body.invitationId as string;

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await context.newPage();
    p.setDefaultTimeout(15_000);
    recordPageProblems(p, problems);
    await p.goto(`${server.url}/app/signin`);
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('heading', { name: 'Workspaces' }).waitFor();
    await p.goto(`${server.url}/app/invitations/${inv}`);
    await p.getByRole('button', { name: 'Accept invitation' }).click();
    await p.getByRole('alert').filter({ hasText: 'EMAIL_NOT_VERIFIED' }).waitFor();
    expect(await p.getByRole('link', { name: 'Confirm your address in your account' }).getAttribute('href')).toBe('/app/settings/account#email');
    await confirmAddress(server, email);
    await p.getByRole('button', { name: 'Accept invitation' }).click();
    await p.waitForURL(`**/app/w/${ws}/documents`);
    await context.close();
    expect(problems).toEqual([]);
  });
});
