import { createHash } from 'node:crypto';
import { escapeHtml } from './escape';
import { plainHtml, renderMarkdownBounded } from './markdownRender';

export interface SetPageDocument {
  title: string;
  purpose: string;
  text: string;
  format: 'markdown' | 'text';
}

export interface SetPageInput {
  id: string;
  /** The set's workspace: Markdown of different workspaces' pages is rendered in turn. */
  workspaceId: string;
  name: string;
  description: string | null;
  updatedAt: string;
  totalSizeBytes: number;
  documents: SetPageDocument[];
}

const CSS = `
:root{color-scheme:light dark;--bg:#fbfbfa;--fg:#1f2328;--muted:#5f6670;--line:#e3e5e8;--card:#ffffff;--accent:#2457c5;--code-bg:#f3f4f6;--badge-bg:#eef2fb;--badge-fg:#2a4a8f}
@media (prefers-color-scheme:dark){:root{--bg:#111418;--fg:#e6e8eb;--muted:#9aa3ad;--line:#2a3038;--card:#181c22;--accent:#7aa5ff;--code-bg:#20262e;--badge-bg:#1f2a40;--badge-fg:#a9c1f5}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:17px/1.65 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif;overflow-wrap:break-word}
.page{max-width:48rem;margin:0 auto;padding:3rem 1.25rem 4rem}
a{color:var(--accent);text-underline-offset:.15em}
.eyebrow{margin:0 0 .5rem;color:var(--muted);font-size:.8rem;letter-spacing:.06em;text-transform:uppercase}
h1{margin:0;font-size:2.1rem;line-height:1.2;letter-spacing:-.01em}
.description{margin:.75rem 0 0;color:var(--muted);font-size:1.08rem}
.actions{margin:1.25rem 0 0;display:flex;gap:1rem;flex-wrap:wrap;font-size:.92rem}
.actions a{display:inline-block;padding:.35rem .8rem;border:1px solid var(--line);border-radius:999px;text-decoration:none;background:var(--card)}
.actions a:hover{border-color:var(--accent)}
.toc{margin:2.25rem 0;padding:1rem 1.25rem;border:1px solid var(--line);border-radius:10px;background:var(--card)}
.toc h2{margin:0 0 .5rem;font-size:.8rem;color:var(--muted);letter-spacing:.06em;text-transform:uppercase}
.toc ol{margin:0;padding-left:1.4rem}
.toc li{margin:.2rem 0}
.toc a{text-decoration:none}
.toc a:hover{text-decoration:underline}
.doc{margin:2.5rem 0 0;padding-top:2rem;border-top:1px solid var(--line)}
.toc+main>.doc:first-child{border-top:0;padding-top:0}
.doc-head{display:flex;align-items:baseline;gap:.75rem;flex-wrap:wrap;margin-bottom:1rem}
.doc-head h2{margin:0;font-size:1.5rem;line-height:1.3}
.doc-num{color:var(--muted);font-variant-numeric:tabular-nums;font-weight:600}
.badge{font-size:.7rem;letter-spacing:.05em;padding:.12rem .5rem;border-radius:999px;background:var(--badge-bg);color:var(--badge-fg);font-weight:600}
.content h3{font-size:1.25rem;margin:1.8rem 0 .6rem}
.content h4{font-size:1.1rem;margin:1.5rem 0 .5rem}
.content h5,.content h6{font-size:1rem;margin:1.25rem 0 .5rem}
.content p,.content ul,.content ol,.content blockquote,.content pre,.content table{margin:0 0 1rem}
.content li{margin:.25rem 0}
.content blockquote{padding:.1rem 1rem;border-left:3px solid var(--line);color:var(--muted)}
.content code{font:.88em/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;background:var(--code-bg);padding:.1em .35em;border-radius:4px}
.content pre{background:var(--code-bg);padding:.9rem 1rem;border-radius:8px;overflow-x:auto}
.content pre code{background:none;padding:0}
.content table{border-collapse:collapse;width:100%;display:block;overflow-x:auto}
.content th,.content td{border:1px solid var(--line);padding:.4rem .6rem;text-align:left}
.content img{max-width:100%;height:auto}
.content hr{border:0;border-top:1px solid var(--line);margin:1.5rem 0}
.plain{white-space:pre-wrap}
.empty{color:var(--muted);font-style:italic}
footer{margin-top:3.5rem;padding-top:1.25rem;border-top:1px solid var(--line);color:var(--muted);font-size:.85rem}
@media (max-width:40rem){body{font-size:16px}.page{padding-top:2rem}h1{font-size:1.7rem}}
@media print{.actions,.toc{display:none}body{background:#fff;color:#000}}
`.trim();

const CSS_HASH = createHash('sha256').update(CSS).digest('base64');

/**
 * No script ever runs on the page, whatever a document contains: only the page's own
 * stylesheet (by hash) and https/data images load; no forms, no framing, no base override.
 */
export const SET_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${CSS_HASH}'`,
  'img-src https: data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const formatSize = (bytes: number): string => (bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KB`);

/** A document's text as HTML; Markdown is rendered off the event loop, in bounded time (markdownRender.ts). */
async function renderContent(d: SetPageDocument, owner: string): Promise<string> {
  if (d.text.trim() === '') return '<p class="empty">This document has no text.</p>';
  return d.format === 'markdown' ? renderMarkdownBounded(d.text, owner) : plainHtml(d.text);
}

/** The public page of an instruction set: header, table of contents, each document in order. */
export async function renderInstructionSetPage(p: SetPageInput): Promise<string> {
  const n = p.documents.length;
  const contents = await Promise.all(p.documents.map((d) => renderContent(d, p.workspaceId)));
  const toc =
    n > 0
      ? `<nav class="toc" aria-label="Contents"><h2>Contents</h2><ol>${p.documents
          .map((d, i) => `<li><a href="#doc-${i + 1}">${escapeHtml(d.title)}</a></li>`)
          .join('')}</ol></nav>`
      : '';
  const docs =
    n > 0
      ? p.documents
          .map(
            (d, i) => `<article class="doc" id="doc-${i + 1}" aria-labelledby="doc-${i + 1}-title">
<div class="doc-head"><span class="doc-num">${i + 1}.</span><h2 id="doc-${i + 1}-title">${escapeHtml(d.title)}</h2><span class="badge">${escapeHtml(d.purpose)}</span></div>
<div class="content">${contents[i]}</div>
</article>`,
          )
          .join('\n')
      : '<p class="empty">This instruction set has no documents yet.</p>';
  const updated = p.updatedAt.slice(0, 10);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(p.name)}</title>
${p.description ? `<meta name="description" content="${escapeHtml(p.description)}">` : ''}
<style>${CSS}</style>
</head>
<body>
<div class="page">
<header>
<p class="eyebrow">Instruction set · ${n} document${n === 1 ? '' : 's'} · ${formatSize(p.totalSizeBytes)}</p>
<h1>${escapeHtml(p.name)}</h1>
${p.description ? `<p class="description">${escapeHtml(p.description)}</p>` : ''}
<p class="actions"><a href="./${encodeURIComponent(p.id)}/raw" rel="nofollow">View raw text</a>${n > 1 ? '<a href="#doc-1">Start reading</a>' : ''}</p>
</header>
${toc}
<main>
${docs}
</main>
<footer>Last updated ${escapeHtml(updated)}. The raw text joins the documents in this order, separated by a line of three hyphens.</footer>
</div>
</body>
</html>
`;
}
