import { ComponentChildren } from 'preact';
import { Lexer, Token, Tokens } from 'marked';

/**
 * A Markdown preview without innerHTML: marked's lexer gives tokens, and this renders them as
 * Preact elements, so nothing the text holds can become markup or script (raw HTML in the text
 * is shown as text). Links keep http(s) and mailto targets only; images show their alt text.
 */
export function MarkdownPreview({ text }: { text: string }) {
  let tokens: Token[];
  try {
    tokens = new Lexer({ gfm: true }).lex(text);
  } catch {
    return <pre class="md-fallback">{text}</pre>;
  }
  return <div class="md">{blocks(tokens)}</div>;
}

const safeHref = (href: string): string | undefined => (/^(https?:|mailto:)/i.test(href.trim()) ? href.trim() : undefined);

function blocks(tokens: Token[]): ComponentChildren[] {
  return tokens.map((t, i) => block(t, i));
}

function block(t: Token, key: number): ComponentChildren {
  switch (t.type) {
    case 'heading': {
      const h = t as Tokens.Heading;
      const c = inline(h.tokens);
      // Headings inside a document sit under the page's own h1/h2: shown one level down, at most h6.
      switch (Math.min(6, Math.max(1, h.depth))) {
        case 1:
          return <h3 key={key}>{c}</h3>;
        case 2:
          return <h4 key={key}>{c}</h4>;
        case 3:
          return <h5 key={key}>{c}</h5>;
        default:
          return <h6 key={key}>{c}</h6>;
      }
    }
    case 'paragraph':
      return <p key={key}>{inline((t as Tokens.Paragraph).tokens)}</p>;
    case 'text': {
      const x = t as Tokens.Text;
      return <p key={key}>{x.tokens ? inline(x.tokens) : x.text}</p>;
    }
    case 'code':
      return (
        <pre key={key}>
          <code>{(t as Tokens.Code).text}</code>
        </pre>
      );
    case 'blockquote':
      return <blockquote key={key}>{blocks((t as Tokens.Blockquote).tokens)}</blockquote>;
    case 'hr':
      return <hr key={key} />;
    case 'list': {
      const l = t as Tokens.List;
      const items = l.items.map((it, n) => (
        <li key={n}>
          {it.task ? <input type="checkbox" checked={it.checked} disabled aria-label={it.checked ? 'done' : 'not done'} /> : null}
          {blocks(it.tokens)}
        </li>
      ));
      return l.ordered ? (
        <ol key={key} start={typeof l.start === 'number' ? l.start : undefined}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case 'table': {
      const tb = t as Tokens.Table;
      return (
        <div class="table-wrap" key={key}>
          <table>
            <thead>
              <tr>
                {tb.header.map((c, n) => (
                  <th key={n} scope="col">
                    {inline(c.tokens)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {tb.rows.map((r, n) => (
                <tr key={n}>
                  {r.map((c, m) => (
                    <td key={m}>{inline(c.tokens)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      );
    }
    case 'space':
      return null;
    case 'html':
      return <p key={key}>{(t as Tokens.HTML).text}</p>;
    default:
      return 'text' in t && typeof t.text === 'string' ? <p key={key}>{t.text}</p> : null;
  }
}

function inline(tokens: Token[] | undefined): ComponentChildren[] {
  return (tokens ?? []).map((t, i) => {
    switch (t.type) {
      case 'strong':
        return <strong key={i}>{inline((t as Tokens.Strong).tokens)}</strong>;
      case 'em':
        return <em key={i}>{inline((t as Tokens.Em).tokens)}</em>;
      case 'del':
        return <del key={i}>{inline((t as Tokens.Del).tokens)}</del>;
      case 'codespan':
        return <code key={i}>{(t as Tokens.Codespan).text}</code>;
      case 'br':
        return <br key={i} />;
      case 'link': {
        const l = t as Tokens.Link;
        const href = safeHref(l.href);
        return href ? (
          <a key={i} href={href} rel="noopener noreferrer nofollow" target="_blank">
            {inline(l.tokens)}
          </a>
        ) : (
          <span key={i}>{inline(l.tokens)}</span>
        );
      }
      case 'image':
        return <span key={i} class="md-image">{`[image: ${(t as Tokens.Image).text || 'no description'}]`}</span>;
      case 'escape':
      case 'text': {
        const x = t as Tokens.Text;
        return x.tokens ? <span key={i}>{inline(x.tokens)}</span> : x.text;
      }
      case 'html':
        return (t as Tokens.HTML).text;
      default:
        return 'raw' in t && typeof t.raw === 'string' ? t.raw : null;
    }
  });
}
