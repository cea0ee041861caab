import { useState } from 'preact/hooks';
import { del, get, patch, post, Tag } from '../api';
import { Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';

interface SearchLink {
  id: string;
  token?: string;
  tokenPrefix: string;
  name: string | null;
  allowedTags: string[] | null;
  expiresAt: string | null;
  historyMode: boolean;
  isActive: boolean;
  isExpired: boolean;
  createdAt: string;
  publicUrl: string | null;
  documentCount: number;
}

interface Usage {
  totals: { requests: number; errors: number; latencyMs: { p50: number | null; p95: number | null }; distinctClients: number };
  storedQueries: number;
  window: { hours: number };
}

/** The link's MCP tool URL: the public search URL's /public/<token>/search becomes /mcp/<token>. */
export const toolUrlOf = (publicUrl: string) => publicUrl.replace(/\/public\/([0-9a-f]{64})\/search$/, '/mcp/$1');

export function mcpSetups(toolUrl: string, name: string): { client: string; text: string }[] {
  const key = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'knowledge-base';
  return [
    { client: 'Claude Desktop (claude_desktop_config.json, through the mcp-remote bridge)', text: JSON.stringify({ mcpServers: { [key]: { command: 'npx', args: ['-y', 'mcp-remote', toolUrl] } } }, null, 2) },
    { client: 'Claude Code (terminal)', text: `claude mcp add --transport http ${key} ${toolUrl}` },
    { client: 'Cursor (.cursor/mcp.json)', text: JSON.stringify({ mcpServers: { [key]: { url: toolUrl } } }, null, 2) },
    { client: 'Any Streamable HTTP MCP client', text: `URL: ${toolUrl}\nTransport: Streamable HTTP (POST JSON-RPC 2.0, protocol 2025-06-18)\nTool: service_search` },
  ];
}

function LinkUsage({ wsId, linkId }: { wsId: string; linkId: string }) {
  const usage = useLoad(() => get<Usage>(`/api/workspaces/${wsId}/public-links/${linkId}/usage?hours=168`), [wsId, linkId]);
  if (usage.error) return <ErrorBox error={usage.error} />;
  if (!usage.data) return <p role="status">Loading…</p>;
  const t = usage.data.totals;
  return (
    <p class="small">
      Last 7 days: {t.requests} request{t.requests === 1 ? '' : 's'}, {t.errors} error{t.errors === 1 ? '' : 's'}, {t.distinctClients} distinct client
      {t.distinctClients === 1 ? '' : 's'}
      {t.latencyMs.p50 !== null ? `, median ${t.latencyMs.p50} ms, p95 ${t.latencyMs.p95} ms` : ''}
      {usage.data.storedQueries ? `; ${usage.data.storedQueries} stored queries (history on)` : ''}.
    </p>
  );
}

interface StoredQueries {
  data: { query: string; at: string }[];
  nextBefore: string | null;
  retentionDays: number;
  historyMode: boolean;
}

/** A history-mode link's stored queries, newest first, 25 a page (loaded when opened). */
function LinkQueries({ wsId, linkId }: { wsId: string; linkId: string }) {
  const [befores, setBefores] = useState<string[]>(['']);
  const before = befores[befores.length - 1];
  const page = useLoad(
    () => get<StoredQueries>(`/api/workspaces/${wsId}/public-links/${linkId}/queries?limit=25${before ? `&before=${encodeURIComponent(before)}` : ''}`),
    [wsId, linkId, before],
  );
  if (page.error) return <ErrorBox error={page.error} />;
  if (!page.data) return <p role="status">Loading…</p>;
  const p = page.data;
  return (
    <>
      <p class="muted small">Query text is stored only while history is on, outside the event log, and deleted after {p.retentionDays} days.</p>
      {p.data.length === 0 ? (
        <p class="muted">No stored queries.</p>
      ) : (
        <div class="table-wrap">
          <table class="queries">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Query</th>
              </tr>
            </thead>
            <tbody>
              {p.data.map((q, i) => (
                <tr key={`${q.at}-${i}`}>
                  <td>{when(q.at)}</td>
                  <td class="break">{q.query}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="pager" aria-label="Pages of stored queries">
        <button type="button" disabled={befores.length <= 1} onClick={() => setBefores((b) => b.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!p.nextBefore} onClick={() => p.nextBefore && setBefores((b) => [...b, p.nextBefore as string])}>
          Older
        </button>
      </nav>
    </>
  );
}

function QueryHistory({ wsId, link, label, onChanged }: { wsId: string; link: { id: string; historyMode: boolean; isActive: boolean }; label: string; onChanged: () => void }) {
  const [open, setOpen] = useState(false);
  const { busy, error, run } = useSubmit();
  return (
    <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Query history</summary>
      {link.isActive ? (
        <div class="row">
          <span class="small">History is {link.historyMode ? 'on: query text is kept' : 'off: only counts and latencies are kept'}.</span>
          <button
            type="button"
            aria-label={`${link.historyMode ? 'Turn history off' : 'Turn history on'} for ${label}`}
            disabled={busy}
            onClick={() =>
              void run(async () => {
                await patch(`/api/workspaces/${wsId}/public-links/${link.id}`, { historyMode: !link.historyMode });
                onChanged();
              })
            }
          >
            {link.historyMode ? 'Turn history off' : 'Turn history on'}
          </button>
        </div>
      ) : null}
      {link.historyMode && link.isActive ? <p class="muted small">Turning history off deletes the query text stored so far.</p> : null}
      <ErrorBox error={error} />
      {open ? <LinkQueries key={String(link.historyMode)} wsId={wsId} linkId={link.id} /> : null}
    </details>
  );
}

export function SearchLinks({ wsId }: { wsId: string }) {
  const links = useLoad(() => get<{ data: SearchLink[] }>(`/api/workspaces/${wsId}/public-links`).then((r) => r.data), [wsId]);
  const tags = useLoad(() => get<{ data: Tag[] }>(`/v1/workspaces/${wsId}/tags`).then((r) => r.data), [wsId]);
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [expires, setExpires] = useState('');
  const [history, setHistory] = useState(false);
  const { busy, error, run } = useSubmit();
  const [revoking, setRevoking] = useState<SearchLink | null>(null);
  const tagName = new Map((tags.data ?? []).map((t) => [t.id, t.name]));
  return (
    <section>
      <h1>Search links</h1>
      <p class="muted">A search link lets anyone holding its URL search this workspace (only the tags you allow), on the web or from an AI assistant over MCP. Treat the URL as a secret.</p>
      <form
        class="stack"
        aria-label="New search link"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            await post(`/api/workspaces/${wsId}/public-links`, {
              name: name || null,
              allowedTags: chosen.length ? chosen : null,
              expiresAt: expires ? new Date(expires).toISOString() : null,
              historyMode: history,
            });
            setName('');
            setChosen([]);
            setExpires('');
            links.reload();
          });
        }}
      >
        <div class="row">
          <label class="grow">
            Link name
            <input name="link-name" maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Expires (optional)
            <input type="datetime-local" name="link-expires" value={expires} onInput={(e) => setExpires((e.target as HTMLInputElement).value)} />
          </label>
        </div>
        {tags.data && tags.data.length ? (
          <fieldset>
            <legend>Only documents tagged (none: the whole workspace)</legend>
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
                  {t.name}
                </label>
              ))}
            </div>
          </fieldset>
        ) : null}
        <label class="check">
          <input type="checkbox" checked={history} onChange={(e) => setHistory((e.target as HTMLInputElement).checked)} />
          Keep query history (90 days)
        </label>
        <ErrorBox error={error} />
        <div>
          <button type="submit" class="primary" disabled={busy}>
            Create search link
          </button>
        </div>
      </form>

      <ErrorBox error={links.error} />
      {links.data && links.data.length === 0 ? <p class="muted">No search links yet.</p> : null}
      <ul class="hits">
        {links.data?.map((l) => {
          const label = l.name || `Link ${l.tokenPrefix}…`;
          const state = l.isActive ? 'Active' : l.isExpired ? 'Expired' : 'Revoked';
          const toolUrl = l.publicUrl ? toolUrlOf(l.publicUrl) : null;
          return (
            <li key={l.id} class="hit" data-link={label}>
              <div class="hit-head">
                <strong>{label}</strong>
                <span class={`badge ${l.isActive ? 'status-verified' : 'status-failed'}`}>{state}</span>
              </div>
              <p class="small muted">
                {l.allowedTags ? `Tags: ${l.allowedTags.map((t) => tagName.get(t) ?? 'deleted tag').join(', ')}` : 'Whole workspace'} · {l.documentCount} document
                {l.documentCount === 1 ? '' : 's'} · {l.expiresAt ? `expires ${when(l.expiresAt)}` : 'never expires'} · history {l.historyMode ? 'on' : 'off'} · created {when(l.createdAt)}
              </p>
              {l.publicUrl && toolUrl && l.isActive ? (
                <>
                  <div class="row">
                    <code class="secret" data-testid="public-url">
                      {l.publicUrl}
                    </code>
                    <CopyButton text={l.publicUrl} label="Copy search URL" />
                  </div>
                  <div class="row">
                    <code class="secret" data-testid="tool-url">
                      {toolUrl}
                    </code>
                    <CopyButton text={toolUrl} label="Copy MCP tool URL" />
                  </div>
                  <details>
                    <summary>Set up an MCP client</summary>
                    {mcpSetups(toolUrl, label).map((s) => (
                      <div key={s.client}>
                        <p class="small">{s.client}</p>
                        <div class="row">
                          <pre class="secret">{s.text}</pre>
                          <CopyButton text={s.text} />
                        </div>
                      </div>
                    ))}
                  </details>
                </>
              ) : null}
              <details>
                <summary>Usage</summary>
                <LinkUsage wsId={wsId} linkId={l.id} />
              </details>
              <QueryHistory wsId={wsId} link={l} label={label} onChanged={links.reload} />
              {l.isActive ? (
                <div class="actions">
                  <button type="button" class="danger" aria-label={`Revoke ${label}`} onClick={() => setRevoking(l)}>
                    Revoke…
                  </button>
                </div>
              ) : null}
            </li>
          );
        })}
      </ul>
      <Confirm
        open={revoking !== null}
        title="Revoke this search link?"
        message="Its URL and MCP tool URL stop working at once."
        action="Revoke link"
        onClose={() => setRevoking(null)}
        onConfirm={async () => {
          if (revoking) await del(`/api/workspaces/${wsId}/public-links/${revoking.id}`);
          links.reload();
        }}
      />
    </section>
  );
}
