import { createHash } from 'node:crypto';
import { client, startServer, TestServer } from '../support/server';
import { team, upload, verifiedDoc, waitForStatus } from './instructionSets.support';

const MARKDOWN = `# Tone of voice

Answer **briefly** and cite the *source*.

- Be kind
- Be precise

\`\`\`js
console.log("code stays code");
\`\`\`

<script>window.__pwned = 1; alert('md')</script>
<img src="x" onerror="alert('img')">
<a href="javascript:alert('link')">click me</a>
<iframe src="https://evil.example"></iframe>
<div onmouseover="alert('hover')">hover text</div>

[a safe link](https://example.com/docs)
`;

const PLAIN = `Escalation rules
1. If the customer mentions <script>alert("txt")</script>, stay calm.
2. Never run <img src=x onerror=alert(1)> & friends.
Line three keeps   its   spacing.`;

/** Every real tag of a page (names and attributes); escaped text such as &lt;img ...&gt; is not a tag. */
function tagsOf(html: string): { name: string; attrs: Record<string, string> }[] {
  const tags: { name: string; attrs: Record<string, string> }[] = [];
  const tagRe = /<([a-zA-Z][\w-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*\/?>/g;
  const attrRe = /([^\s=>/]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?/g;
  for (const m of html.matchAll(tagRe)) {
    const attrs: Record<string, string> = {};
    for (const a of (m[2] ?? '').matchAll(attrRe)) attrs[a[1].toLowerCase()] = (a[2] ?? '').replace(/^["']|["']$/g, '');
    tags.push({ name: m[1].toLowerCase(), attrs });
  }
  return tags;
}

/** No executable markup: no script/iframe/object/embed element, no inline event handler, no javascript: URL. */
function expectInert(html: string) {
  const tags = tagsOf(html);
  expect(tags.length).toBeGreaterThan(10);
  expect(tags.filter((t) => ['script', 'iframe', 'object', 'embed', 'svg', 'base', 'form'].includes(t.name))).toEqual([]);
  expect(tags.filter((t) => Object.keys(t.attrs).some((a) => a.startsWith('on')))).toEqual([]);
  expect(tags.filter((t) => Object.values(t.attrs).some((v) => /^\s*(javascript|vbscript|data:text\/html)/i.test(v)))).toEqual([]);
}

describe('public instruction sets: /s/:id and /s/:id/raw', () => {
  let server: TestServer;
  let t: Awaited<ReturnType<typeof team>>;
  let setId: string;
  let md: { id: string; sizeBytes: number; title: string };
  let txt: { id: string; sizeBytes: number; title: string };
  const anon = () => client(server.url);

  beforeAll(async () => {
    server = await startServer({ KB_RATE_LIMITS: 'off' });
    t = await team(server.url);
    md = await verifiedDoc(t.owner.api, t.workspaceId, 'tone.md', MARKDOWN, { title: 'Tone & voice' });
    txt = await verifiedDoc(t.owner.api, t.workspaceId, 'escalation.txt', PLAIN, { title: 'Escalation <rules>' });
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Support <b>assistant</b>', description: 'Everything the "assistant" needs', isPublic: true });
    setId = s.body.id;
    for (const d of [md, txt]) expect((await t.admin.api.post(`/api/instruction-sets/${setId}/documents`, { documentId: d.id })).status).toBe(201);
  }, 300_000);
  afterAll(async () => server?.stop());

  it('raw: text/plain, the documents\' texts in set order joined by a line ---', async () => {
    const r = await anon().get(`/s/${setId}/raw`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; charset=utf-8/i);
    const parts = r.text.split('\n---\n');
    expect(parts).toHaveLength(2);
    // (The Markdown extractor keeps headings as section names, not in the text.)
    expect(parts[0]).toContain('Answer **briefly** and cite the *source*.');
    expect(parts[1]).toContain('Escalation rules');
    // Each part is exactly the document's extracted text: its UTF-8 size is the sizeBytes the set counts.
    expect(parts.map((p) => Buffer.byteLength(p, 'utf8'))).toEqual([md.sizeBytes, txt.sizeBytes]);

    const reordered = await t.admin.api.patch(`/api/instruction-sets/${setId}/documents/reorder`, { documentIds: [txt.id, md.id] });
    expect(reordered.status).toBe(200);
    const again = (await anon().get(`/s/${setId}/raw`)).text.split('\n---\n');
    expect(again).toEqual([parts[1], parts[0]]);
    await t.admin.api.patch(`/api/instruction-sets/${setId}/documents/reorder`, { documentIds: [md.id, txt.id] });
  });

  it('HTML: name, description, table of contents, documents in order, raw link, strict CSP', async () => {
    const r = await anon().get(`/s/${setId}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = r.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/script-src/);
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');

    const html = r.text;
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('<title>Support &lt;b&gt;assistant&lt;/b&gt;</title>');
    expect(html).toContain('<h1>Support &lt;b&gt;assistant&lt;/b&gt;</h1>');
    expect(html).toContain('Everything the &quot;assistant&quot; needs');
    expect(html).toContain('Tone &amp; voice');
    expect(html).toContain('Escalation &lt;rules&gt;');
    expect(html.indexOf('Tone &amp; voice')).toBeLessThan(html.indexOf('Escalation &lt;rules&gt;'));
    expect(html).toMatch(/<nav class="toc"[^>]*>.*<a href="#doc-1">Tone &amp; voice<\/a>.*<a href="#doc-2">Escalation &lt;rules&gt;<\/a>/s);
    expect(html).toContain('id="doc-1"');
    expect(html).toContain('id="doc-2"');
    expect(html).toContain(`href="./${setId}/raw"`);
    // Markdown is rendered (headings below the page's own), plain text is escaped and kept as text.
    expect(html).toContain('<strong>briefly</strong>');
    expect(html).toMatch(/<li>Be kind<\/li>/);
    expect(html).toMatch(/<pre><code class="language-js">console\.log\((&quot;|")code stays code(&quot;|")\);/);
    expect(html).toContain('<a href="https://example.com/docs" rel="nofollow noopener noreferrer">a safe link</a>');
    expect(html).toContain('If the customer mentions &lt;script&gt;alert(&quot;txt&quot;)&lt;/script&gt;, stay calm.');
    expect(html).toContain('Line three keeps');
    // The style element is allowed by its hash in the CSP.
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
    const hash = createHash('sha256').update(style).digest('base64');
    expect(csp).toContain(`style-src 'sha256-${hash}'`);
  });

  it('XSS: a document containing <script> and onerror= never yields executable markup', async () => {
    const html = (await anon().get(`/s/${setId}`)).text;
    expectInert(html);
    // Markup a document carries shows as text (prompts often hold literal tags) and never runs.
    expect(html).toContain('&lt;script&gt;window.__pwned = 1;');
    expect(html).toContain('hover text');
    // A title and set name are escaped as well.
    const evil = await verifiedDoc(t.owner.api, t.workspaceId, 'evil.md', '<svg onload=alert(1)><script>alert(2)</script>\n\n<img src=x onerror=alert(3)>', {
      title: '<img src=x onerror=alert(4)>',
    });
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: '<script>alert(5)</script>', description: '<img src=x onerror=alert(6)>', isPublic: true });
    await t.admin.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: evil.id });
    const page = await anon().get(`/s/${s.body.id}`);
    expect(page.status).toBe(200);
    expectInert(page.text);
    expect(page.text).toContain('&lt;img src=x onerror=alert(4)&gt;');
    // The raw view is text/plain with nosniff: the browser never parses it as HTML.
    const raw = await anon().get(`/s/${s.body.id}/raw`);
    expect(raw.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(raw.headers.get('x-content-type-options')).toBe('nosniff');
    expect(raw.text).toContain('<script>alert(2)</script>');
  });

  it('a private, missing or deleted set answers 404 (and stops answering when made private)', async () => {
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Private' });
    await t.admin.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: md.id });
    for (const path of [`/s/${s.body.id}`, `/s/${s.body.id}/raw`, '/s/00000000-0000-4000-8000-000000000000', '/s/00000000-0000-4000-8000-000000000000/raw', '/s/not-an-id/raw']) {
      const r = await anon().get(path);
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
      expect(r.text).not.toContain('Answer **briefly**');
    }
    const raw404 = await anon().get(`/s/${s.body.id}/raw`);
    expect(raw404.body).toEqual({ error: 'NOT_FOUND', message: expect.any(String) });

    expect((await t.admin.api.patch(`/api/instruction-sets/${s.body.id}`, { isPublic: true })).status).toBe(200);
    expect((await anon().get(`/s/${s.body.id}`)).status).toBe(200);
    expect((await anon().get(`/s/${s.body.id}/raw`)).status).toBe(200);
    expect((await t.admin.api.patch(`/api/instruction-sets/${s.body.id}`, { isPublic: false })).status).toBe(200);
    expect((await anon().get(`/s/${s.body.id}`)).status).toBe(404);
    expect((await anon().get(`/s/${s.body.id}/raw`)).status).toBe(404);

    await t.admin.api.patch(`/api/instruction-sets/${s.body.id}`, { isPublic: true });
    expect((await t.admin.api.delete(`/api/instruction-sets/${s.body.id}`)).status).toBe(204);
    expect((await anon().get(`/s/${s.body.id}`)).status).toBe(404);
    expect((await anon().get(`/s/${s.body.id}/raw`)).status).toBe(404);
  });

  it('an empty public set still renders a page and an empty raw text', async () => {
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Empty', isPublic: true });
    const page = await anon().get(`/s/${s.body.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('no documents yet');
    const raw = await anon().get(`/s/${s.body.id}/raw`);
    expect(raw.status).toBe(200);
    expect(raw.text).toBe('');
  });

  it('a deleted document disappears from the public views', async () => {
    const gone = await upload(t.owner.api, t.workspaceId, 'gone.txt', 'GONE-MARKER text that will be deleted');
    await waitForStatus(t.owner.api, t.workspaceId, gone);
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Shrinking', isPublic: true });
    await t.admin.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: gone });
    await t.admin.api.post(`/api/instruction-sets/${s.body.id}/documents`, { documentId: txt.id });
    expect((await anon().get(`/s/${s.body.id}/raw`)).text).toContain('GONE-MARKER');
    expect((await t.owner.api.delete(`/v1/workspaces/${t.workspaceId}/documents/${gone}`)).status).toBe(204);
    const raw = (await anon().get(`/s/${s.body.id}/raw`)).text;
    expect(raw).not.toContain('GONE-MARKER');
    expect(raw.split('\n---\n')).toHaveLength(1);
    expect((await anon().get(`/s/${s.body.id}`)).text).not.toContain('GONE-MARKER');
  });
});

describe('public instruction sets: rate limits per IP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({});
  });
  afterAll(async () => server?.stop());

  it('60 HTML views and 30 raw views per minute per IP, then 429 with Retry-After', async () => {
    const t = await team(server.url);
    const s = await t.admin.api.post(`/api/workspaces/${t.workspaceId}/instruction-sets`, { name: 'Popular', isPublic: true });
    const anon = client(server.url);
    for (let i = 0; i < 30; i++) {
      const r = await anon.get(`/s/${s.body.id}/raw`);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('30');
    }
    const rawLimited = await anon.get(`/s/${s.body.id}/raw`);
    expect(rawLimited.status).toBe(429);
    expect(rawLimited.body).toEqual({ error: 'RATE_LIMITED', message: expect.any(String) });
    expect(Number(rawLimited.headers.get('retry-after'))).toBeGreaterThan(0);

    for (let i = 0; i < 60; i++) {
      const r = await anon.get(`/s/${s.body.id}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('60');
      expect(r.headers.get('x-ratelimit-remaining')).toBe(String(59 - i));
    }
    const htmlLimited = await anon.get(`/s/${s.body.id}`);
    expect(htmlLimited.status).toBe(429);
    expect(htmlLimited.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
