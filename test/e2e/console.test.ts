import path from 'node:path';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { startServer, TestServer } from '../support/server';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from './browser';

/**
 * The web console in a real browser (Debian's Chromium) against the real server.
 * Access tokens live 8 s here, so the console renews its session silently (every ~6 s)
 * several times during the journey.
 */
(BROWSER_AVAILABLE ? describe : describe.skip)('web console, end to end in Chromium', () => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];
  const fixtures = path.resolve(__dirname, '..', 'fixtures');
  const email = `e2e-${Date.now()}@example.com`;
  const password = 'correct horse battery';

  beforeAll(async () => {
    [server, browser] = await Promise.all([startServer({ KB_RATE_LIMITS: 'off', KB_ACCESS_TOKEN_TTL: '8' }), launchChromium()]);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    // Any CSP violation or uncaught error fails the suite (checked at the end).
    recordPageProblems(page, problems);
  });
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('signs up, creates a workspace, uploads two files that reach VERIFIED, and finds a passage', async () => {
    await page.goto(`${server.url}/app/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByRole('link', { name: 'Create one' }).click();
    await page.getByLabel('Name').fill('Erin');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();

    await page.getByLabel('New workspace name').fill('Handbook');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('heading', { name: 'Documents' }).waitFor();
    expect(page.url()).toMatch(/\/app\/w\/[0-9a-f-]{36}\/documents$/);

    await page.locator('input[type=file]').setInputFiles([path.join(fixtures, 'sample.md'), path.join(fixtures, 'sample.txt')]);
    const uploads = page.getByRole('list', { name: 'Uploads' });
    for (const name of ['sample.md', 'sample.txt']) {
      const row = uploads.locator(`li[data-file="${name}"]`);
      await row.locator('progress').waitFor();
      await row.getByText('Verified', { exact: true }).waitFor({ timeout: 30_000 });
    }
    // The list shows both under their titles (the file name by default), status as a word.
    const table = page.locator('table.docs');
    await table.getByRole('link', { name: 'sample.md' }).waitFor();
    await table.getByRole('link', { name: 'sample.txt' }).waitFor();
    expect(await table.getByText('Verified', { exact: true }).count()).toBe(2);

    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Search', exact: true }).click();
    await page.getByLabel('Search this workspace').fill('Debian contrib repository');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const hit = page.locator('.hit').first();
    await hit.waitFor();
    expect(await hit.locator('.hit-title').textContent()).toBe('sample.md');
    expect(await hit.locator('mark').allTextContents()).toEqual(expect.arrayContaining(['contrib']));
    expect(await hit.locator('.score').textContent()).toMatch(/score \d\.\d{3}/);
    expect(await page.getByRole('status').filter({ hasText: / in [\d.]+ ms/ }).count()).toBe(1);
  });

  it('keeps the session across a reload (silent renew from the cookie); page scripts never see the refresh token', async () => {
    await page.reload();
    await page.getByRole('heading', { name: 'Search' }).waitFor();
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe('');
    // Several renewals happen while we wait (token lifetime 8 s): still signed in.
    await page.waitForTimeout(7_000);
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Documents' }).click();
    await page.locator('table.docs').getByRole('link', { name: 'sample.md' }).waitFor();
  });

  it('edits a document: title, purpose; opens it under its new title; views it as of before the edit', async () => {
    await page.locator('table.docs').getByRole('link', { name: 'sample.txt' }).click();
    await page.getByRole('heading', { name: 'sample.txt' }).waitFor();
    // A local time (datetime-local, seconds) safely before the edit.
    const before = await page.evaluate(() => {
      const d = new Date(Date.now() - 1000);
      const p = (n: number) => String(n).padStart(2, '0');
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    });
    await page.waitForTimeout(1100);
    await page.getByLabel('Title').fill('Quick brown notes');
    await page.getByLabel('Purpose').selectOption('INSTRUCTION');
    await page.getByRole('button', { name: 'Save details' }).click();
    await page.getByRole('heading', { name: 'Quick brown notes' }).waitFor();
    await page.getByLabel('Show the document as it was at').fill(before);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const past = page.getByTestId('as-of');
    await past.waitFor();
    expect(await past.locator('dd').nth(1).textContent()).toBe('sample.txt');
    expect(await past.locator('dd').nth(3).textContent()).toBe('Knowledge');
    // The text search used then (the extracted, normalised text of the run verified by then).
    expect(await page.getByTestId('as-of-text').textContent()).toContain('The quick brown fox jumps over the lazy dog. Extra spaces collapse.');
    // And now, from the document page's "Text search uses".
    await page.getByText('Text search uses', { exact: true }).click();
    expect(await page.getByTestId('extracted-text').textContent()).toContain('Second paragraph: café, naïve, 東京');
    await page.getByRole('link', { name: '← Documents' }).click();
    await page.locator('table.docs').getByRole('link', { name: 'Quick brown notes' }).waitFor();
    await page.getByLabel('Purpose').selectOption('INSTRUCTION');
    await page.getByRole('status').filter({ hasText: '1 document' }).waitFor();
  });

  it('creates a tag in the settings, tags a document, filters the list and the search by it', async () => {
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('New tag').fill('linux');
    await page.getByRole('button', { name: 'Add tag' }).click();
    await page.getByLabel('Name of tag linux').waitFor();
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Documents' }).click();
    await page.locator('table.docs').getByRole('link', { name: 'sample.md' }).click();
    await page.getByRole('checkbox', { name: 'linux' }).check();
    await page.getByRole('button', { name: 'Save details' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.getByRole('link', { name: '← Documents' }).click();
    await page.getByLabel('Tag').selectOption({ label: 'linux' });
    await page.getByRole('status').filter({ hasText: /^1 document$/ }).waitFor();
    expect(await page.locator('table.docs tbody tr').count()).toBe(1);
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Search', exact: true }).click();
    await page.getByRole('checkbox', { name: 'linux' }).check();
    await page.getByLabel('Search this workspace').fill('quick brown fox');
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByRole('status').filter({ hasText: / in [\d.]+ ms/ }).waitFor();
    expect(await page.locator('.hit-title').allTextContents()).toEqual(expect.not.arrayContaining(['Quick brown notes']));
  });

  it('builds an instruction set, reorders it by keyboard and by drag and drop, handles a conflict, makes it public and opens its page', async () => {
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Instruction sets' }).click();
    await page.getByLabel('New instruction set name').fill('Onboarding');
    await page.getByRole('button', { name: 'Create set' }).click();
    await page.getByRole('heading', { name: 'Onboarding' }).waitFor();
    const setId = /\/sets\/([0-9a-f-]{36})$/.exec(page.url())?.[1];
    for (const title of ['sample.md', 'Quick brown notes']) {
      await page.getByLabel('Add a verified document').selectOption({ label: title });
      await page.getByRole('button', { name: 'Add to set' }).click();
      await page.locator(`ol.set-docs li[data-doc="${title}"]`).waitFor();
    }
    await page.getByText('Documents: 2 of 20').waitFor();
    const order = () => page.locator('ol.set-docs li').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-doc')));
    expect(await order()).toEqual(['sample.md', 'Quick brown notes']);
    // Keyboard: focus the Move up button and press Enter.
    await page.getByRole('button', { name: 'Move Quick brown notes up' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => (globalThis as any).document.querySelector('ol.set-docs li')?.getAttribute('data-doc') === 'Quick brown notes');
    // Drag and drop: sample.md back on top.
    await page.locator('ol.set-docs li[data-doc="sample.md"]').dragTo(page.locator('ol.set-docs li[data-doc="Quick brown notes"]'));
    await page.waitForFunction(() => (globalThis as any).document.querySelector('ol.set-docs li')?.getAttribute('data-doc') === 'sample.md');
    // Someone else renames the set meanwhile: saving ours answers 409, the console shows theirs and keeps ours.
    const login = await fetch(`${server.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
    const { accessToken } = (await login.json()) as { accessToken: string };
    const elsewhere = await fetch(`${server.url}/api/instruction-sets/${setId}`, { method: 'PATCH', headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` }, body: JSON.stringify({ name: 'Renamed elsewhere' }) });
    expect(elsewhere.status).toBe(200);
    await page.getByLabel('Description').fill('Read this first');
    await page.getByRole('button', { name: 'Save details' }).click();
    const notice = page.getByRole('alert').filter({ hasText: 'Someone else saved this set first' });
    await notice.waitFor();
    await notice.getByText('Renamed elsewhere (differs from yours)').waitFor();
    expect(await page.getByLabel('Description').inputValue()).toBe('Read this first');
    await notice.getByRole('button', { name: 'Save mine over theirs' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.getByRole('heading', { name: 'Onboarding' }).waitFor();
    // Public: the page lists the documents in the set's order.
    await page.getByLabel(/^Public/).click();
    await page.getByTestId('set-page-url').waitFor();
    const preview = await context.newPage();
    await preview.goto(`${server.url}/s/${setId}`);
    const text = (await preview.textContent('body')) ?? '';
    expect(text).toContain('Onboarding');
    expect(text.indexOf('Debian needs the contrib repository')).toBeLessThan(text.indexOf('quick brown fox'));
    await preview.close();
  });

  it('creates a search link whose MCP tool URL answers initialize, then revokes it', async () => {
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Search links' }).click();
    await page.getByLabel('Link name').fill('Support bot');
    await page.getByRole('checkbox', { name: 'linux' }).check();
    await page.getByRole('button', { name: 'Create search link' }).click();
    const link = page.locator('li[data-link="Support bot"]');
    await link.getByText('Active', { exact: true }).waitFor();
    await link.getByText('Tags: linux').waitFor();
    const toolUrl = (await link.getByTestId('tool-url').textContent()) ?? '';
    const token = /\/mcp\/([0-9a-f]{64})$/.exec(toolUrl)?.[1];
    expect(token).toBeDefined();
    await link.getByText('Set up an MCP client').click();
    await link.getByText(`claude mcp add --transport http support-bot ${toolUrl}`).waitFor();
    const rpc = () =>
      fetch(`${server.url}/mcp/${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e', version: '1.0.0' } } }),
      });
    const init = await rpc();
    expect(init.status).toBe(200);
    expect(((await init.json()) as any).result.protocolVersion).toBe('2025-06-18');
    await link.getByRole('button', { name: 'Revoke Support bot' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke link' }).click();
    await link.getByText('Revoked', { exact: true }).waitFor();
    expect((await rpc()).status).not.toBe(200);
  });

  it('creates an API key (shown once), uses it with fetch, revokes it', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('New key name').fill('ci');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('new-key').textContent())?.trim() ?? '';
    expect(key).toMatch(/^kb_/);
    await page.getByRole('button', { name: 'Copy key' }).waitFor();
    const ok = await fetch(`${server.url}/v1/workspaces`, { headers: { authorization: `Bearer ${key}` } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { name: string }[]).map((w: { name: string }) => w.name)).toEqual(['Handbook']);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('new-key').count()).toBe(0);

    await page.getByRole('button', { name: 'Revoke ci' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' });
    await dialog.waitFor();
    // The dialog holds the focus (modal): Tab stays inside it.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => !!(globalThis as any).document.activeElement?.closest('dialog'))).toBe(true);
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('No API keys yet.').waitFor();
    const refused = await fetch(`${server.url}/v1/workspaces`, { headers: { authorization: `Bearer ${key}` } });
    expect(refused.status).toBe(401);
  });

  it('shows the audit trail of these actions, as words, with filters and paging', async () => {
    await page.getByLabel('Workspace', { exact: true }).selectOption({ label: 'Handbook' });
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Audit trail' }).click();
    const table = page.locator('table.audit');
    await table.waitFor();
    // Newest first: the last action of the journey leads.
    expect(await table.locator('tbody tr').first().locator('td').nth(2).textContent()).toBe('Link revoked');
    expect(await table.locator('tbody tr').count()).toBe(25);
    const firstPage = await table.locator('tbody tr td:first-child').allTextContents();
    await page.getByRole('button', { name: 'Older' }).click();
    await page.getByRole('button', { name: 'Newer' }).and(page.locator(':enabled')).waitFor();
    await table.getByText('Workspace created').waitFor();
    expect(await table.locator('tbody tr td:first-child').allTextContents()).not.toEqual(firstPage);
    const rowsFor = async (action: string) => {
      await page.getByLabel('Action').fill(action);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForFunction((a) => [...(globalThis as any).document.querySelectorAll('table.audit td[data-action]')].every((td) => td.getAttribute('data-action') === a), action);
      return table.locator('tbody tr').count();
    };
    expect(await rowsFor('WorkspaceCreated')).toBe(1);
    expect(await rowsFor('DocumentUploaded')).toBe(2);
    expect(await table.getByText('Document uploaded').count()).toBe(2);
    expect(await rowsFor('SearchLinkCreated')).toBe(1);
    expect(await rowsFor('DocumentMetadataUpdated')).toBeGreaterThanOrEqual(2);
  });

  it('edits the text of a document with auto-save, and resolves a concurrent save (DOCUMENT_LOCKED) without losing the typed text', async () => {
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Documents' }).click();
    await page.getByLabel('Purpose').selectOption('');
    await page.locator('table.docs').getByRole('link', { name: 'sample.md' }).click();
    await page.getByRole('heading', { name: 'sample.md' }).waitFor();
    const wsId = /\/w\/([0-9a-f-]{36})\//.exec(page.url())?.[1];
    const docId = /\/documents\/([0-9a-f-]{36})$/.exec(page.url())?.[1];
    const editor = page.getByLabel('Content', { exact: true });
    const saveState = page.getByTestId('save-state');
    await saveState.filter({ hasText: /^Saved/ }).waitFor();
    expect(await editor.inputValue()).toContain('Debian needs the contrib repository');

    // Another session of the same person (the API, as a script or a second tab would).
    const login = await fetch(`${server.url}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
    const { accessToken } = (await login.json()) as { accessToken: string };
    const contentUrl = `${server.url}/v1/workspaces/${wsId}/documents/${docId}/content`;
    const current = async () => (await (await fetch(contentUrl, { headers: { authorization: `Bearer ${accessToken}` } })).json()) as { content: string; updatedAt: string };

    // Typing, then a pause: "Unsaved changes", then "Saving…"/"Saved"; the API has the text.
    const first = '# Mirrors\n\nUse the nearest mirror of the contrib repository.';
    await editor.fill(first);
    await saveState.filter({ hasText: 'Unsaved changes' }).waitFor();
    await saveState.filter({ hasText: /^Saved/ }).waitFor();
    expect((await current()).content).toBe(first);
    // The save processes the document again; the page follows its status without a reload.
    await page.locator('.badge', { hasText: 'Verified' }).first().waitFor({ timeout: 30_000 });

    // Someone else saves meanwhile; our next save is refused and nothing typed is lost.
    const theirs = '# Mirrors\n\nEdited elsewhere: use deb.debian.org.';
    const elsewhere = await fetch(`${server.url}/v1/workspaces/${wsId}/documents/${docId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ content: theirs, expectedUpdatedAt: (await current()).updatedAt }),
    });
    expect(elsewhere.status).toBe(200);
    const mine = `${first}\n\nAnd keep a local cache.`;
    await editor.fill(mine);
    await editor.blur();
    const conflict = page.getByTestId('conflict');
    await conflict.waitFor();
    await saveState.filter({ hasText: 'Conflict' }).waitFor();
    await conflict.getByRole('heading', { name: 'Someone else saved this document first' }).waitFor();
    await page.waitForFunction((t) => (globalThis as any).document.querySelector('[data-testid=theirs]')?.value === t, theirs);
    expect(await conflict.getByTestId('mine').inputValue()).toBe(mine);
    expect(await editor.inputValue()).toBe(mine);
    // Not overwritten behind the user's back.
    expect((await current()).content).toBe(theirs);
    if (process.env.KB_SCREENSHOT_EDITOR) await page.screenshot({ path: process.env.KB_SCREENSHOT_EDITOR, fullPage: true });

    await conflict.getByRole('button', { name: 'Keep mine (overwrite)' }).click();
    await conflict.waitFor({ state: 'detached' });
    await saveState.filter({ hasText: /^Saved/ }).waitFor();
    expect((await current()).content).toBe(mine);
    expect(await editor.inputValue()).toBe(mine);

    // Once more, the other way: their text taken into the editor, nothing saved over it.
    const again = await fetch(`${server.url}/v1/workspaces/${wsId}/documents/${docId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ content: theirs, expectedUpdatedAt: (await current()).updatedAt }),
    });
    expect(again.status).toBe(200);
    await editor.fill(`${mine} Typed again.`);
    await conflict.waitFor();
    await conflict.getByRole('button', { name: 'Take theirs' }).and(page.locator(':enabled')).click();
    await conflict.waitFor({ state: 'detached' });
    expect(await editor.inputValue()).toBe(theirs);
    await saveState.filter({ hasText: /^Saved/ }).waitFor();
    expect((await current()).content).toBe(theirs);
  });

  it('renames and deletes a workspace (with confirmation)', async () => {
    await page.goto(`${server.url}/app/workspaces`);
    await page.getByLabel('New workspace name').fill('Scratch');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Scratch 2');
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.locator('.ws-name', { hasText: 'Scratch 2' }).waitFor();
    await page.getByRole('button', { name: 'Delete workspace…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete workspace' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
    await page.getByRole('link', { name: 'Handbook' }).waitFor();
    // The list is reloaded after the delete: the workspace leaves it.
    await page.getByRole('link', { name: 'Scratch 2' }).waitFor({ state: 'detached' });
  });

  it('shows a clear screen when the session cannot be renewed, and signs in again', async () => {
    await context.clearCookies();
    await page.getByRole('heading', { name: 'Your session has ended' }).waitFor({ timeout: 15_000 });
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in again' }).click();
    await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
  });

  it('signs out: a reload lands on the sign-in screen', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    expect(problems).toEqual([]);
  });
});
