import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import pino from 'pino';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { toNewEvents } from '../../src/core/commandHandler';
import { documentStream } from '../../src/domain/document/events';
import { client, signUp, startServer, TestServer } from '../support/server';
import { BROWSER_AVAILABLE, launchChromium, recordPageProblems } from '../e2e/browser';

// eslint-disable-next-line no-control-regex -- control characters are what it finds
const BIDI_OR_CONTROL = /[\u0000-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/;
/** The same, but the line breaks and tabs a page's text has. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const BIDI_OR_CONTROL_BUT_LINES = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/;
const LEGACY_NAME = 'salary\u202Etxt.exe\u202C.md';

/**
 * A document uploaded before uploads refused bidi and control characters in file names keeps its
 * name in the log. Wherever the name is shown (the API, the console through it, the download's
 * Content-Disposition, the audit trail) it comes without them: each is U+FFFD.
 */
describe('file names stored before the upload rule (bidi overrides, control characters)', () => {
  let server: TestServer;
  let dataDir: string;
  let owner: Awaited<ReturnType<typeof signUp>>;
  let workspaceId: string;
  const legacyId = randomUUID();

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    dataDir = server.dataDir;
    owner = await signUp(server.url, 'Owner');
    const ws = await owner.api.post('/v1/workspaces', { name: 'Payroll' });
    workspaceId = ws.body.id;
    // A file of today (its blob serves the old document too).
    const doc = await owner.api.post(`/v1/workspaces/${workspaceId}/documents`, { title: 'Salaries', content: '# Salaries\n\nConfidential.', format: 'markdown' });
    expect(doc.status).toBe(201);
    await server.stop();
    // The old event, appended to the log as it was recorded then (the server stopped; its own store and keys).
    const db = new Database(path.join(dataDir, 'events.db'), { readonly: true });
    const uploaded = JSON.parse((db.prepare("SELECT data FROM events WHERE type = 'DocumentUploaded' LIMIT 1").get() as { data: string }).data) as Record<string, unknown>;
    db.close();
    const { ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dataDir }), pino({ level: 'silent' }));
    try {
      const event = { type: 'DocumentUploaded', data: { ...uploaded, documentId: legacyId, filename: LEGACY_NAME, title: 'Salaries (old)' } };
      await ctx.eventStore.append(documentStream(legacyId), toNewEvents([event as never], { actorId: owner.id, authMethod: 'session', correlationId: randomUUID(), now: new Date() }, workspaceId), 'no_stream');
    } finally {
      await closeContainer(di);
    }
    server = await startServer({ KB_RATE_LIMITS: 'off' }, dataDir);
  }, 120_000);
  afterAll(async () => server?.stop());

  async function legacyDocument() {
    const api = client(server.url, owner.token);
    for (let i = 0; i < 200; i++) {
      const r = await api.get(`/v1/documents/${legacyId}`);
      if (r.status === 200) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error('the old document never showed');
  }

  it('the API answers the name with each bidi or control character replaced by U+FFFD (before: as stored)', async () => {
    const r = await legacyDocument();
    expect(r.body.filename).toBe('salary\uFFFDtxt.exe\uFFFD.md');
    expect(r.body.filename).not.toMatch(BIDI_OR_CONTROL);
    const inWorkspace = await client(server.url, owner.token).get(`/v1/workspaces/${workspaceId}/documents/${legacyId}`);
    expect(inWorkspace.body.filename).toBe('salary\uFFFDtxt.exe\uFFFD.md');
    // In the past too (the metadata folded from its events).
    const past = await client(server.url, owner.token).get(`/v1/documents/${legacyId}?asOf=${encodeURIComponent(new Date().toISOString())}`);
    expect([past.status, past.body.filename]).toEqual([200, 'salary\uFFFDtxt.exe\uFFFD.md']);
  });

  it('the download is saved under the neutralized name, not one that reads as .exe', async () => {
    await legacyDocument();
    const file = await fetch(`${server.url}/v1/documents/${legacyId}/file`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(file.status).toBe(200);
    const disposition = decodeURIComponent(/filename\*=UTF-8''(.*)$/.exec(file.headers.get('content-disposition') ?? '')?.[1] ?? '');
    expect(disposition).toBe('salary\uFFFDtxt.exe\uFFFD.md');
  });

  it('the audit trail shows the neutralized name', async () => {
    await legacyDocument();
    const api = client(server.url, owner.token);
    let entry: { summary: { filename?: string } } | undefined;
    for (let i = 0; i < 200 && !entry; i++) {
      const trail = await api.get(`/v1/workspaces/${workspaceId}/audit?action=DocumentUploaded&limit=100`);
      entry = (trail.body.data as { subject: { id: string }; summary: { filename?: string } }[] | undefined)?.find((e) => e.subject.id === legacyId);
      if (!entry) await new Promise((res) => setTimeout(res, 50));
    }
    expect(entry?.summary.filename).toBe('salary\uFFFDtxt.exe\uFFFD.md');
  });
  (BROWSER_AVAILABLE ? it : it.skip)("the console's document page shows the neutralized name", async () => {
    await legacyDocument();
    const browser = await launchChromium();
    try {
      const problems: string[] = [];
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      page.setDefaultTimeout(15_000);
      recordPageProblems(page, problems);
      await page.goto(`${server.url}/app/signin`);
      await page.getByLabel('Email').fill(owner.email);
      await page.getByLabel('Password').fill('correct horse battery');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
      await page.goto(`${server.url}/app/w/${workspaceId}/documents/${legacyId}`);
      await page.getByRole('heading', { name: 'Salaries (old)' }).waitFor();
      const shown = await page.locator('dl.meta dt:text-is("File name") + dd').innerText();
      expect(shown).toBe('salary\uFFFDtxt.exe\uFFFD.md');
      expect(await page.locator('body').innerText()).not.toMatch(BIDI_OR_CONTROL_BUT_LINES);
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
