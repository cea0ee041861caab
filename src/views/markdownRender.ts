import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { compiledPath } from '../util/paths';
import { escapeHtml } from './escape';
import type { MarkdownWorkerAnswer, MarkdownWorkerRequest } from './markdownWorker';

/**
 * Markdown rendered off the event loop, in bounded time. marked is quadratic on some inputs
 * (100 KB of `_a` took ~30 s of CPU, holding every request of every tenant meanwhile) and
 * overflows its stack on deep nesting (thousands of `>`: a 500). So a public page's Markdown
 * is rendered in a worker thread, one text at a time, each within MARKDOWN_RENDER_MS; a text
 * that takes longer (the worker is then terminated) or cannot be rendered is shown as plain,
 * escaped text. Answers are kept by the text's hash (a few MB), the plain fallbacks too, so a
 * page asked again costs nothing and a pathological text costs its bound once.
 */
export const MARKDOWN_RENDER_MS = 2000;
export const MARKDOWN_WORKER_PATH: string = compiledPath('src/views/markdownWorker');

const CACHE_MAX_ENTRIES = 256;
const CACHE_MAX_CHARS = 16 * 1024 * 1024;
const WORKER_MAX_HEAP_MB = 256;

/** The plain-text form of a text that could not be rendered as Markdown in time. */
export const plainHtml = (text: string): string => `<div class="plain">${escapeHtml(text)}</div>`;

const cache = new Map<string, string>();
let cachedChars = 0;
const inFlight = new Map<string, Promise<string>>();

function remember(key: string, html: string): void {
  if (html.length > CACHE_MAX_CHARS / 4) return;
  cache.set(key, html);
  cachedChars += html.length;
  while (cache.size > CACHE_MAX_ENTRIES || cachedChars > CACHE_MAX_CHARS) {
    const [oldest, value] = cache.entries().next().value as [string, string];
    cache.delete(oldest);
    cachedChars -= value.length;
  }
}

interface Job {
  id: number;
  markdown: string;
  resolve: (html: string) => void;
}

/**
 * Waiting texts, by owner (the workspace whose page asks), taken in turn: one owner's many
 * slow texts hold another's for at most the one rendering when it asks. An owner with
 * MAX_WAITING_PER_OWNER texts waiting has its next ones shown plain at once.
 */
export const MAX_WAITING_PER_OWNER = 32;
const waiting = new Map<string, Job[]>();

/** Whose text was rendered last: another owner waiting goes first. */
let lastOwner: string | undefined;

/** The next job: the first waiting of the owner first in turn (not the last served, if another waits); that owner's turn moves to the end. */
function nextJob(): Job | undefined {
  let owner: string | undefined;
  for (const o of waiting.keys()) {
    if (o !== lastOwner) {
      owner = o;
      break;
    }
  }
  owner ??= waiting.keys().next().value;
  if (owner === undefined) return undefined;
  const jobs = waiting.get(owner)!;
  waiting.delete(owner);
  const job = jobs.shift();
  if (jobs.length > 0) waiting.set(owner, jobs);
  lastOwner = owner;
  return job;
}
let worker: Worker | undefined;
let running: { job: Job; timer: NodeJS.Timeout } | undefined;
let nextId = 1;

function spawn(): Worker {
  const w = new Worker(MARKDOWN_WORKER_PATH, {
    resourceLimits: { maxOldGenerationSizeMb: WORKER_MAX_HEAP_MB, maxYoungGenerationSizeMb: 32 },
    stdout: true,
    stderr: true,
  });
  w.stdout.resume();
  w.stderr.resume();
  w.on('message', (answer: MarkdownWorkerAnswer) => {
    if (!running || answer.id !== running.job.id) return;
    const { job, timer } = running;
    clearTimeout(timer);
    running = undefined;
    job.resolve('html' in answer ? answer.html : plainHtml(job.markdown));
    pump();
  });
  // A worker that dies (out of memory, say) fails its job to plain text; the next job gets a new one.
  const gone = () => {
    if (worker !== w) return;
    worker = undefined;
    if (running) {
      const { job, timer } = running;
      clearTimeout(timer);
      running = undefined;
      job.resolve(plainHtml(job.markdown));
    }
    pump();
  };
  w.on('error', gone);
  w.on('exit', gone);
  return w;
}

function pump(): void {
  if (running) return;
  const job = nextJob();
  if (!job) {
    worker?.unref(); // an idle worker never keeps the process alive
    return;
  }
  try {
    worker ??= spawn();
  } catch {
    // No thread to be had (resources exhausted): this text is shown plain, never rendered here.
    job.resolve(plainHtml(job.markdown));
    pump();
    return;
  }
  const w = worker;
  w.ref();
  const timer = setTimeout(() => {
    if (running?.job !== job) return;
    running = undefined;
    // Still rendering: stop it (a thread cannot be interrupted otherwise) and show plain text.
    worker = undefined;
    void w.terminate();
    job.resolve(plainHtml(job.markdown));
    pump();
  }, MARKDOWN_RENDER_MS);
  running = { job, timer };
  w.postMessage({ id: job.id, markdown: job.markdown } satisfies MarkdownWorkerRequest);
}

/**
 * Safe HTML of a Markdown text (see above): rendered within MARKDOWN_RENDER_MS, or plain.
 * `owner`: whose page asks (its workspace), for taking turns between owners.
 */
export function renderMarkdownBounded(markdown: string, owner = ''): Promise<string> {
  const key = createHash('sha256').update(markdown).digest('base64');
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key); // most recently used last
    cache.set(key, hit);
    return Promise.resolve(hit);
  }
  const pending = inFlight.get(key);
  if (pending) return pending;
  const jobs = waiting.get(owner) ?? [];
  // Not remembered: the text may render once the owner's turn comes round again.
  if (jobs.length >= MAX_WAITING_PER_OWNER) return Promise.resolve(plainHtml(markdown));
  const rendered = new Promise<string>((resolve) => {
    jobs.push({ id: nextId++, markdown, resolve });
    if (!waiting.has(owner)) waiting.set(owner, jobs);
    pump();
  }).then((html) => {
    inFlight.delete(key);
    remember(key, html);
    return html;
  });
  inFlight.set(key, rendered);
  return rendered;
}

/** Ends the rendering thread (tests; a process that ends needs nothing: an idle thread is unreferenced). */
export async function stopMarkdownWorker(): Promise<void> {
  const w = worker;
  worker = undefined;
  await w?.terminate();
}
