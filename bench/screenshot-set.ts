/**
 * Renders a public instruction set in headless Chromium and writes PNG screenshots
 * (light and dark colour scheme), to look at the page as a person would.
 *
 *   npx tsc -p tsconfig.build.json && node dist/bench/screenshot-set.js [outDir]
 *
 * Starts the real server on a free port with a throw-away data dir, signs up, uploads
 * three documents, waits until they are VERIFIED, makes a public set of them, then runs
 * `chromium --headless --screenshot` on {app_url}/s/<id>.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const outDir = path.resolve(process.argv[2] ?? '/tmp');

const DOCS: { filename: string; title: string; purpose: string; content: string }[] = [
  {
    filename: 'tone.md',
    title: 'Tone of voice',
    purpose: 'INSTRUCTION',
    content: `You are the support assistant for **Acme Cloud**. Answer in a calm, friendly and *precise* tone.

- Start with the answer, then the reasoning.
- Keep replies under 150 words unless the customer asks for detail.
- Use the customer's own words for their product names.

> Never promise a delivery date or a refund amount: point to the policy instead.

When you quote a command, format it as code, e.g. \`acme login --sso\`.

\`\`\`bash
acme status --region eu-west-1
\`\`\`

| Situation | What to do |
|---|---|
| Outage confirmed | Link the status page |
| Billing question | Hand over to billing |

<script>alert('this never runs')</script>
`,
  },
  {
    filename: 'escalation.txt',
    title: 'Escalation rules',
    purpose: 'INSTRUCTION',
    content: `Escalate to a human when any of these holds:
1. The customer mentions a security incident or data loss.
2. The same problem was reported three times in one conversation.
3. The customer asks for a manager or a legal contact.

When escalating, summarise the problem in two sentences and include the account id.`,
  },
  {
    filename: 'product-facts.md',
    title: 'Product facts',
    purpose: 'KNOWLEDGE',
    content: `Acme Cloud runs in **three regions**: eu-west-1, us-east-1 and ap-south-1.

1. Free plan: 2 projects, community support.
2. Team plan: 20 projects, support replies within one business day.
3. Enterprise: unlimited projects, a named support engineer and a 99.95% SLA.

Documentation lives at [docs.acme.example](https://docs.acme.example).`,
  },
];

async function startServer(dataDir: string): Promise<{ url: string; stop: () => void }> {
  const proc = spawn(process.execPath, [path.join(root, 'dist/src/main.js')], {
    cwd: root,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KB_DATA_DIR: dataDir, KB_ANNOUNCE_PORT: '1', KB_RATE_LIMITS: 'off', KB_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /KB_LISTENING (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => proc.kill('SIGTERM') };
}

async function call(base: string, token: string | null, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(base + p, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${p}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

function chromium(): string {
  for (const bin of ['chromium', 'chromium-browser', 'google-chrome']) {
    if (spawnSync('which', [bin]).status === 0) return bin;
  }
  throw new Error('chromium not found: apt-get install -y chromium');
}

function screenshot(url: string, file: string, extra: string[] = []): void {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chromium-'));
  const args = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    `--user-data-dir=${userDataDir}`,
    `--screenshot=${file}`,
    '--window-size=1200,1600',
    '--hide-scrollbars',
    ...extra,
    url,
  ];
  const r = spawnSync(chromium(), args, { encoding: 'utf8', timeout: 60_000 });
  fs.rmSync(userDataDir, { recursive: true, force: true });
  if (!fs.existsSync(file)) throw new Error(`no screenshot written: ${r.stderr}`);
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-screenshot-'));
  const server = await startServer(dataDir);
  try {
    const base = server.url;
    const email = `shot-${Date.now()}@example.com`;
    await call(base, null, 'POST', '/v1/auth/register', { email, password: 'correct horse battery', name: 'Screenshot' });
    const { accessToken } = await call(base, null, 'POST', '/v1/auth/login', { email, password: 'correct horse battery' });
    const ws = await call(base, accessToken, 'POST', '/v1/workspaces', { name: 'Acme support' });
    const ids: string[] = [];
    for (const d of DOCS) {
      const form = new FormData();
      form.append('title', d.title);
      form.append('purpose', d.purpose);
      form.append('file', new Blob([d.content], { type: 'text/plain' }), d.filename);
      const doc = await call(base, accessToken, 'POST', `/v1/workspaces/${ws.id}/documents`, form);
      ids.push(doc.id);
    }
    for (const id of ids) {
      for (;;) {
        const d = await call(base, accessToken, 'GET', `/v1/workspaces/${ws.id}/documents/${id}`);
        if (d.processingStatus === 'VERIFIED') break;
        if (d.processingStatus === 'FAILED') throw new Error(`document failed: ${JSON.stringify(d.error)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const set = await call(base, accessToken, 'POST', `/api/workspaces/${ws.id}/instruction-sets`, {
      name: 'Acme support assistant',
      description: 'Tone, escalation rules and product facts for the customer-support model. Load the raw text into the system prompt.',
      isPublic: true,
    });
    for (const id of ids) await call(base, accessToken, 'POST', `/api/instruction-sets/${set.id}/documents`, { documentId: id });
    const url = `${base}/s/${set.id}`;
    fs.writeFileSync(path.join(outDir, 'set.html'), await (await fetch(url)).text());
    fs.writeFileSync(path.join(outDir, 'set.txt'), await (await fetch(`${url}/raw`)).text());
    const light = path.join(outDir, 'set.png');
    const dark = path.join(outDir, 'set-dark.png');
    screenshot(url, light);
    screenshot(url, dark, ['--force-dark-mode', '--blink-settings=preferredColorScheme=0']);
    console.log(`page: ${url}\nlight: ${light}\ndark: ${dark}`);
  } finally {
    server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
