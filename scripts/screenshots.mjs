// `npm run screenshots`: the web console's main screens, light and dark, desktop and 360 px,
// written to docs/screenshots/. Starts the built server on a temporary data dir, seeds it
// through the public API, and drives Debian's Chromium (/usr/bin/chromium, or KB_CHROMIUM).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.join(root, 'docs', 'screenshots');
const executablePath = process.env.KB_CHROMIUM ?? '/usr/bin/chromium';

/** A free port, so the server's public URLs (KB_BASE_URL) name the port it really listens on. */
const freePort = () =>
  new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });

async function startServer() {
  const free = await freePort();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-shots-'));
  const proc = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: { ...process.env, PORT: String(free), KB_BASE_URL: `http://127.0.0.1:${free}`, HOST: '127.0.0.1', KB_DATA_DIR: dataDir, KB_ANNOUNCE_PORT: '1', KB_LOG_LEVEL: 'warn', KB_RATE_LIMITS: 'off' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let text = '';
  const port = await new Promise((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      text += d;
      const m = /KB_LISTENING (\d+)/.exec(text);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, dataDir, stop: () => new Promise((r) => (proc.on('exit', r), proc.kill('SIGTERM'))).then(() => fs.rmSync(dataDir, { recursive: true, force: true })) };
}

async function call(base, token, method, p, body) {
  const res = await fetch(base + p, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}) },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Confirm an address from the verification mail in the outbox (two-step sign-in is set up on confirmed accounts only). */
async function confirmAddress(base, dataDir, email) {
  const dir = path.join(dataDir, 'outbox');
  for (let i = 0; i < 200; i++) {
    const mails = (fs.existsSync(dir) ? fs.readdirSync(dir) : []).map((f) => fs.readFileSync(path.join(dir, f), 'utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '='));
    const token = mails.filter((m) => m.includes(`To: ${email}`)).map((m) => /\/verify-email\?token=([A-Za-z0-9%._-]+)/.exec(m)?.[1]).find(Boolean);
    if (token) return call(base, null, 'POST', '/v1/auth/verify-email', { token: decodeURIComponent(token) });
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no verification mail to ${email}`);
}

async function seed(base, dataDir) {
  const email = 'ada@example.com';
  const password = 'correct horse battery';
  await call(base, null, 'POST', '/v1/auth/register', { email, password, name: 'Ada Lovelace' });
  await confirmAddress(base, dataDir, email);
  const { accessToken: t } = await call(base, null, 'POST', '/v1/auth/login', { email, password });
  const ws = await call(base, t, 'POST', '/v1/workspaces', { name: 'Product handbook' });
  await call(base, t, 'POST', '/v1/workspaces', { name: 'Research notes' });
  const tag = await call(base, t, 'POST', `/v1/workspaces/${ws.id}/tags`, { name: 'onboarding', color: '#2e7d32' });
  await call(base, t, 'POST', `/v1/workspaces/${ws.id}/tags`, { name: 'ops', color: '#c62828' });
  const docs = [];
  for (const f of ['sample.md', 'sample.txt', 'sample.docx', 'sample.pdf', 'blank.md']) {
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(path.join(root, 'test/fixtures', f))]), f);
    docs.push(await call(base, t, 'POST', `/v1/workspaces/${ws.id}/documents`, form));
  }
  await call(base, t, 'PUT', `/v1/workspaces/${ws.id}/documents/${docs[0].id}`, { title: 'Installing on Linux', tags: [tag.id] });
  for (let i = 0; i < 120; i++) {
    const list = await call(base, t, 'GET', `/v1/workspaces/${ws.id}/documents`);
    if (list.data.every((d) => d.processingStatus === 'VERIFIED' || d.processingStatus === 'FAILED')) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await call(base, t, 'POST', '/v1/api-keys', { name: 'CI pipeline' });
  const set = await call(base, t, 'POST', `/api/workspaces/${ws.id}/instruction-sets`, { name: 'Support assistant', description: 'What the support bot reads first' });
  for (const d of docs.slice(0, 3)) await call(base, t, 'POST', `/api/instruction-sets/${set.id}/documents`, { documentId: d.id });
  await call(base, t, 'PATCH', `/api/instruction-sets/${set.id}`, { isPublic: true });
  await call(base, t, 'POST', `/api/workspaces/${ws.id}/public-links`, { name: 'Support bot', allowedTags: [tag.id], historyMode: false });
  // A link with history on, asked twice; a second member; a pending invitation.
  const helpdesk = await call(base, t, 'POST', `/api/workspaces/${ws.id}/public-links`, { name: 'Helpdesk assistant', historyMode: true });
  for (const q of ['how do I enable contrib', 'install on debian']) await call(base, null, 'GET', `/public/${helpdesk.token}/search?q=${encodeURIComponent(q)}`);
  const grace = await call(base, null, 'POST', '/v1/auth/register', { email: 'grace@example.com', password, name: 'Grace Hopper' });
  await call(base, t, 'POST', `/v1/workspaces/${ws.id}/members`, { userId: grace.id, role: 'MEMBER' });
  await call(base, t, 'POST', `/v1/workspaces/${ws.id}/invite`, { email: 'alan@example.com', role: 'ADMIN' });
  // The set renamed a moment after `asOf`, so its as-of view shows the older name.
  await new Promise((r) => setTimeout(r, 1100));
  const asOf = new Date();
  await new Promise((r) => setTimeout(r, 1100));
  const current = await call(base, t, 'GET', `/api/instruction-sets/${set.id}`);
  await call(base, t, 'PATCH', `/api/instruction-sets/${set.id}`, { name: 'Support assistant v2', expectedUpdatedAt: current.updatedAt });
  return { email, password, ws: ws.id, doc: docs[0].id, set: set.id, token: t, asOf, grace: 'Grace Hopper' };
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const server = await startServer();
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
  });
  try {
    const s = await seed(server.url, server.dataDir);
    const sizes = { desktop: { width: 1280, height: 860 }, mobile: { width: 360, height: 780 } };
    for (const scheme of ['light', 'dark']) {
      for (const [size, viewport] of Object.entries(sizes)) {
        const context = await browser.newContext({ viewport, colorScheme: scheme, deviceScaleFactor: 1 });
        const page = await context.newPage();
        const shot = async (name) => {
          await page.waitForTimeout(150);
          const file = path.join(out, `${name}-${scheme}-${size}.png`);
          await page.screenshot({ path: file, fullPage: true });
          console.log(path.relative(root, file));
        };
        await page.goto(`${server.url}/app/forgot-password`);
        await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
        await shot('forgot-password');
        await page.goto(`${server.url}/app/`);
        await page.getByRole('heading', { name: 'Sign in' }).waitFor();
        await shot('sign-in');
        await page.getByLabel('Email').fill(s.email);
        await page.getByLabel('Password').fill(s.password);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('banner').waitFor();
        await page.goto(`${server.url}/app/workspaces`);
        await page.getByRole('heading', { name: 'Workspaces' }).waitFor();
        await page.locator('.card').first().waitFor();
        await shot('workspaces');
        await page.goto(`${server.url}/app/w/${s.ws}/documents`);
        await page.locator('table.docs tbody tr').first().waitFor();
        await page.locator('input[type=file]').setInputFiles(path.join(root, 'test/fixtures/sample.txt'));
        await page.locator('.upload .badge').first().waitFor();
        await shot('documents');
        await page.goto(`${server.url}/app/w/${s.ws}/documents/${s.doc}`);
        await page.getByRole('heading', { name: 'Installing on Linux' }).waitFor();
        await shot('document');
        // The editor's conflict panel: someone else saves the text first, then we type.
        const docUrl = `/v1/workspaces/${s.ws}/documents/${s.doc}`;
        await page.getByTestId('save-state').filter({ hasText: /^Saved/ }).waitFor();
        const { updatedAt } = await call(server.url, s.token, 'GET', `${docUrl}/content`);
        await call(server.url, s.token, 'PATCH', docUrl, { content: '# Installing\n\nEdited elsewhere: use the package from deb.debian.org.', expectedUpdatedAt: updatedAt });
        await page.getByLabel('Content', { exact: true }).fill('# Installing\n\nEnable the contrib repository, then install the package.');
        await page.getByLabel('Content', { exact: true }).blur();
        await page.getByTestId('diff').waitFor();
        await shot('document-conflict');
        await page.getByRole('button', { name: 'Take theirs' }).click();
        await page.getByRole('button', { name: 'Preview' }).click();
        await page.getByTestId('preview').waitFor();
        await shot('document-preview');
        // The searched text now, and the document as of a past time with the text search used then.
        await page.goto(`${server.url}/app/w/${s.ws}/documents/${s.doc}`);
        await page.getByRole('heading', { name: 'Installing on Linux' }).waitFor();
        await page.getByText('Text search uses', { exact: true }).click();
        await page.getByTestId('extracted-text').waitFor();
        const docAsOf = await page.evaluate((iso) => {
          const d = new Date(iso);
          const p = (n) => String(n).padStart(2, '0');
          return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
        }, s.asOf.toISOString());
        await page.getByLabel('Show the document as it was at').fill(docAsOf);
        await page.getByRole('button', { name: 'Show', exact: true }).click();
        await page.getByTestId('as-of-text').scrollIntoViewIfNeeded();
        await shot('document-as-of');
        await page.goto(`${server.url}/app/w/${s.ws}/search`);
        await page.getByLabel('Search this workspace').fill('install the package on Debian');
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        await page.locator('.hit').first().waitFor();
        await shot('search');
        await page.goto(`${server.url}/app/settings/api-keys`);
        await page.getByLabel('New key name').fill('Laptop');
        await page.getByRole('button', { name: 'Create key' }).click();
        await page.getByTestId('new-key').waitFor();
        await shot('api-keys');
        await page.goto(`${server.url}/app/w/${s.ws}/audit`);
        await page.locator('table.audit tbody tr').first().waitFor();
        await shot('audit');
        await page.getByRole('button', { name: 'Verify the log' }).click();
        await page.getByTestId('verify-result').waitFor();
        await shot('audit-verified');
        await page.goto(`${server.url}/app/w/${s.ws}/sets/${s.set}`);
        await page.locator('ol.set-docs li').first().waitFor();
        await shot('instruction-set');
        const local = await page.evaluate((iso) => {
          const d = new Date(iso);
          const p = (n) => String(n).padStart(2, '0');
          return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
        }, s.asOf.toISOString());
        await page.getByLabel('Show the set as it was at').fill(local);
        await page.getByRole('button', { name: 'Show', exact: true }).click();
        await page.getByTestId('set-as-of').scrollIntoViewIfNeeded();
        await shot('instruction-set-as-of');
        await page.goto(`${server.url}/app/w/${s.ws}/links`);
        await page.locator('li[data-link]').first().waitFor();
        await page.getByText('Set up an MCP client').first().click();
        await shot('search-links');
        const helpdesk = page.locator('li[data-link="Helpdesk assistant"]');
        await helpdesk.getByText('Query history').click();
        await helpdesk.locator('table.queries tbody tr').first().waitFor();
        await shot('search-link-history');
        await page.goto(`${server.url}/app/w/${s.ws}/settings`);
        await page.locator('table.members tbody tr').first().waitFor();
        await page.locator('table.invitations tbody tr').first().waitFor();
        await shot('workspace-settings');
        await page.getByRole('button', { name: `Transfer ownership to ${s.grace}` }).click();
        await page.getByRole('dialog', { name: 'Transfer ownership?' }).waitFor();
        await shot('transfer-dialog');
        await page.getByRole('dialog', { name: 'Transfer ownership?' }).getByRole('button', { name: 'Cancel' }).click();
        await page.getByRole('button', { name: 'Delete workspace…' }).click();
        await page.getByRole('dialog', { name: 'Delete this workspace?' }).waitFor();
        await shot('delete-dialog');
        await page.goto(`${server.url}/app/settings/account`);
        await page.locator('table.sessions tbody tr').first().waitFor();
        await page.getByRole('button', { name: 'Set up two-step sign-in' }).click();
        await page.getByTestId('totp-secret').waitFor();
        await shot('account');
        await context.close();
      }
    }
  } finally {
    await browser.close();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
