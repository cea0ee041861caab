import { MAX_WAITING_PER_OWNER, plainHtml, renderMarkdownBounded, stopMarkdownWorker } from '../../src/views/markdownRender';

/** A text marked takes far longer than the bound to render (quadratic emphasis scan); distinct per `n`. */
const slow = (n: number) => `SLOW-${n}\n\n` + '_a'.repeat(49_000);

describe('Markdown rendered off the event loop: owners take turns', () => {
  afterAll(() => stopMarkdownWorker());

  it("one workspace's slow texts hold another's for at most the one rendering when it asks", async () => {
    const done: string[] = [];
    const track = (name: string, p: Promise<string>) => p.then((html) => (done.push(name), html));
    const a = [track('A1', renderMarkdownBounded(slow(1), 'A')), track('A2', renderMarkdownBounded(slow(2), 'A')), track('A3', renderMarkdownBounded(slow(3), 'A'))];
    const b = track('B1', renderMarkdownBounded('# Hello\n\nfrom **B**', 'B'));
    const [, , , html] = await Promise.all([...a, b]);
    expect(html).toContain('<strong>B</strong>');
    // A1 was rendering when B asked; B's text comes right after it, before A's next ones.
    expect(done).toEqual(['A1', 'B1', 'A2', 'A3']);
    // The slow ones ran past the bound: shown as plain text.
    expect(await a[0]).toBe(plainHtml(slow(1)));
  }, 30_000);

  it(`an owner with ${MAX_WAITING_PER_OWNER} texts waiting gets its next ones plain at once, others still render`, async () => {
    const waiting = Array.from({ length: MAX_WAITING_PER_OWNER + 1 }, (_, i) => renderMarkdownBounded(`# Text ${i} of C\n\n*hi*`, 'C'));
    const over = renderMarkdownBounded('# One too many\n\n*hi*', 'C');
    expect(await over).toBe(plainHtml('# One too many\n\n*hi*'));
    expect(await renderMarkdownBounded('*from D*', 'D')).toContain('<em>from D</em>');
    const rendered = await Promise.all(waiting);
    expect(rendered[0]).toContain('<em>hi</em>');
  }, 30_000);
});
