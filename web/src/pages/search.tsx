import { useState } from 'preact/hooks';
import { get, post, SearchAnswer, Tag } from '../api';
import { ErrorBox, useLoad } from '../ui';
import { useSubmit } from '../useSubmit';

/** The passage with the query's words marked (<mark>), built as nodes: never as HTML. */
export function Highlighted({ text, query }: { text: string; query: string }) {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])];
  if (!words.length) return <>{text}</>;
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const re = new RegExp(`(${escaped.join('|')})`, 'giu');
  const parts = text.split(re);
  return <>{parts.map((p, i) => (i % 2 === 1 ? <mark key={i}>{p}</mark> : p))}</>;
}

export function Search({ wsId }: { wsId: string }) {
  const tags = useLoad(() => get<{ data: Tag[] }>(`/v1/workspaces/${wsId}/tags`).then((r) => r.data), [wsId]);
  const [query, setQuery] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [answer, setAnswer] = useState<SearchAnswer | null>(null);
  const { busy, error, run } = useSubmit();
  return (
    <section>
      <h1>Search</h1>
      <form
        role="search"
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => setAnswer(await post<SearchAnswer>(`/v1/workspaces/${wsId}/search`, { query, limit: 10, ...(chosen.length ? { filters: { tags: chosen } } : {}) })));
        }}
      >
        <div class="row">
          <label class="grow">
            Search this workspace
            <input type="search" name="query" required maxLength={1000} value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            {busy ? 'Searching…' : 'Search'}
          </button>
        </div>
        {tags.data && tags.data.length ? (
          <fieldset>
            <legend>Only documents tagged</legend>
            <div class="checks">
              {tags.data.map((t) => (
                <label key={t.id} class="check">
                  <input
                    type="checkbox"
                    checked={chosen.includes(t.id)}
                    onChange={(e) => {
                      const on = (e.target as HTMLInputElement).checked;
                      setChosen((xs) => (on ? [...xs, t.id] : xs.filter((x) => x !== t.id)));
                    }}
                  />
                  <span class="swatch" style={{ backgroundColor: t.color }} aria-hidden="true" />
                  {t.name}
                </label>
              ))}
            </div>
          </fieldset>
        ) : null}
      </form>
      <ErrorBox error={error} />
      {answer ? (
        <div class="results">
          <p class="muted" role="status">
            {answer.results.length} result{answer.results.length === 1 ? '' : 's'} in {answer.processingTime} ms
          </p>
          <ol class="hits">
            {answer.results.map((r) => (
              <li key={`${r.documentId}-${r.chunkIndex}`} class="hit">
                <div class="hit-head">
                  <a href={`/app/w/${wsId}/documents/${r.documentId}`} class="hit-title">
                    {r.documentTitle}
                  </a>
                  <span class="score" title="Relevance score from 0 to 1">
                    score {r.score.toFixed(3)}
                  </span>
                </div>
                {r.metadata.section || r.metadata.page ? (
                  <p class="muted small">
                    {r.metadata.section ? `Section: ${r.metadata.section}` : ''}
                    {r.metadata.page ? ` Page ${r.metadata.page}` : ''}
                  </p>
                ) : null}
                <p class="passage">
                  <Highlighted text={r.content} query={answer.query} />
                </p>
              </li>
            ))}
          </ol>
        </div>
      ) : null}
    </section>
  );
}
