/**
 * Worker-thread side of `renderMarkdownBounded` (markdownRender.ts). Loaded as compiled JS
 * from dist/. Renders one Markdown text at a time; a text marked cannot render (it overflows
 * its stack on deep nesting) is answered `failed`, and the parent shows it as plain text.
 */
import { isMainThread, parentPort } from 'node:worker_threads';
import { renderMarkdown } from './markdown';
import { lowerThisThreadPriority } from '../util/threadPriority';

export type MarkdownWorkerRequest = { id: number; markdown: string };
export type MarkdownWorkerAnswer = { id: number; html: string } | { id: number; failed: true };

if (!isMainThread && parentPort) {
  lowerThisThreadPriority();
  const port = parentPort;
  port.on('message', (msg: MarkdownWorkerRequest) => {
    let answer: MarkdownWorkerAnswer;
    try {
      answer = { id: msg.id, html: renderMarkdown(msg.markdown) };
    } catch {
      answer = { id: msg.id, failed: true };
    }
    port.postMessage(answer);
  });
}
