import { Marked } from 'marked';
import sanitizeHtml from 'sanitize-html';

const marked = new Marked({ gfm: true, breaks: false, async: false });

/** Documents' own headings sit below the page's h1 (the set) and h2 (each document). */
const shiftHeading = (to: string): sanitizeHtml.Transformer => sanitizeHtml.simpleTransform(to, {});

const SANITIZE: sanitizeHtml.IOptions = {
  allowedTags: [...sanitizeHtml.defaults.allowedTags, 'img', 'del', 'input'],
  allowedAttributes: {
    a: ['href', 'title', 'rel'],
    img: ['src', 'alt', 'title', 'width', 'height'],
    code: ['class'],
    th: ['align', 'colspan', 'rowspan'],
    td: ['align', 'colspan', 'rowspan'],
    ol: ['start'],
    input: ['type', 'checked', 'disabled'],
  },
  allowedClasses: { code: [/^language-[\w-]+$/] },
  allowedSchemes: ['http', 'https', 'mailto'],
  allowedSchemesByTag: { img: ['https', 'data'] },
  allowProtocolRelative: false,
  disallowedTagsMode: 'escape',
  exclusiveFilter: (frame) => frame.tag === 'input' && frame.attribs.type !== 'checkbox',
  transformTags: {
    h1: shiftHeading('h3'),
    h2: shiftHeading('h4'),
    h3: shiftHeading('h5'),
    h4: shiftHeading('h6'),
    h5: shiftHeading('h6'),
    h6: shiftHeading('h6'),
    a: sanitizeHtml.simpleTransform('a', { rel: 'nofollow noopener noreferrer' }),
    input: sanitizeHtml.simpleTransform('input', { disabled: 'disabled' }),
  },
};

/**
 * Markdown to safe HTML: rendered with marked, then everything not on the allow-list
 * (scripts, event handlers, javascript: URLs, iframes, styles) is dropped or escaped.
 */
export function renderMarkdown(markdown: string): string {
  const html = marked.parse(markdown) as string;
  return sanitizeHtml(html, SANITIZE);
}
