import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, DocumentDetail, DocumentRow, get, Page, Status, Tag, upload } from '../api';
import { ErrorBox, StatusBadge, useLoad, when } from '../ui';

interface UploadItem {
  key: string;
  name: string;
  size: number;
  loaded: number;
  total: number;
  phase: 'uploading' | 'uploaded' | 'error';
  status?: Status;
  documentId?: string;
  error?: string;
  abort?: () => void;
}

const terminal = (s?: Status) => s === 'VERIFIED' || s === 'FAILED';
let seq = 0;

function useUploads(wsId: string, onChange: () => void) {
  const [items, setItems] = useState<UploadItem[]>([]);
  const update = (key: string, patch: Partial<UploadItem>) => setItems((xs) => xs.map((x) => (x.key === key ? { ...x, ...patch } : x)));

  const start = (files: File[]) => {
    for (const file of files) {
      const key = `u${++seq}`;
      const form = new FormData();
      form.append('file', file, file.name);
      const u = upload<DocumentDetail>(`/v1/workspaces/${wsId}/documents`, form, (loaded, total) => update(key, { loaded, total }));
      setItems((xs) => [{ key, name: file.name, size: file.size, loaded: 0, total: file.size, phase: 'uploading', abort: u.abort }, ...xs]);
      u.promise.then(
        (d) => {
          update(key, { phase: 'uploaded', loaded: file.size, total: file.size, documentId: d.id, status: d.processingStatus, abort: undefined });
          onChange();
        },
        (e: unknown) => update(key, { phase: 'error', error: e instanceof ApiError ? `${e.message} (${e.code})` : String(e), abort: undefined }),
      );
    }
  };

  // Live status: poll each uploaded document until it is VERIFIED or FAILED.
  const current = useRef(items);
  current.current = items;
  const pendingKey = items
    .filter((x) => x.phase === 'uploaded' && !terminal(x.status))
    .map((x) => x.key)
    .join(',');
  useEffect(() => {
    if (!pendingKey) return;
    let running = false;
    const timer = setInterval(async () => {
      if (running) return;
      running = true;
      try {
        for (const x of current.current.filter((y) => y.phase === 'uploaded' && !terminal(y.status) && y.documentId)) {
          try {
            const d = await get<DocumentDetail>(`/v1/workspaces/${wsId}/documents/${x.documentId}`);
            update(x.key, { status: d.processingStatus, error: d.error ? `${d.error.message} (${d.error.code})` : undefined });
            if (terminal(d.processingStatus)) onChange();
          } catch {
            /* try again on the next tick */
          }
        }
      } finally {
        running = false;
      }
    }, 1000);
    return () => clearInterval(timer);
  }, [pendingKey]);

  return { items, start, clear: () => setItems((xs) => xs.filter((x) => x.phase === 'uploading' || (x.phase === 'uploaded' && !terminal(x.status)))) };
}

function UploadZone({ onFiles }: { onFiles: (f: File[]) => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [over, setOver] = useState(false);
  return (
    <div
      class={`dropzone${over ? ' over' : ''}`}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const files = [...(e.dataTransfer?.files ?? [])];
        if (files.length) onFiles(files);
      }}
    >
      <p>Drop files here (.pdf, .docx, .doc, .txt, .md), or</p>
      <label class="button primary">
        Choose files…
        <input
          ref={input}
          class="sr-only"
          type="file"
          multiple
          name="files"
          accept=".pdf,.docx,.doc,.txt,.md,.markdown"
          onChange={(e) => {
            const el = e.target as HTMLInputElement;
            const files = [...(el.files ?? [])];
            el.value = '';
            if (files.length) onFiles(files);
          }}
        />
      </label>
    </div>
  );
}

export function Documents({ wsId }: { wsId: string }) {
  const [status, setStatus] = useState('');
  const [purpose, setPurpose] = useState('');
  const [tag, setTag] = useState('');
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [page, setPage] = useState(1);
  const tags = useLoad(() => get<{ data: Tag[] }>(`/v1/workspaces/${wsId}/tags`).then((r) => r.data), [wsId]);
  const qs = new URLSearchParams({ page: String(page), limit: '20' });
  if (status) qs.set('status', status);
  if (purpose) qs.set('purpose', purpose);
  if (tag) qs.set('tags', tag);
  if (applied) qs.set('search', applied);
  const list = useLoad(() => get<Page<DocumentRow>>(`/v1/workspaces/${wsId}/documents?${qs}`), [wsId, qs.toString()]);
  const uploads = useUploads(wsId, list.reload);
  const tagName = new Map((tags.data ?? []).map((t) => [t.id, t.name]));

  // While a listed document is still being processed, refresh the list every 2 s.
  const busy = list.data?.data.some((d) => !terminal(d.processingStatus));
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(list.reload, 2000);
    return () => clearInterval(t);
  }, [busy]);

  return (
    <section>
      <h1>Documents</h1>
      <UploadZone onFiles={uploads.start} />
      {uploads.items.length ? (
        <div class="uploads">
          <h2 class="sr-only">Uploads</h2>
          <ul aria-label="Uploads">
            {uploads.items.map((u) => (
              <li key={u.key} class="upload" data-file={u.name}>
                <span class="upload-name">{u.name}</span>
                <progress max={u.total || 1} value={u.loaded} aria-label={`Upload of ${u.name}`} />
                <span class="upload-state">
                  {u.phase === 'uploading' ? (
                    <>
                      Uploading {Math.round((u.loaded / (u.total || 1)) * 100)} %{' '}
                      <button type="button" class="link" onClick={u.abort}>
                        Cancel
                      </button>
                    </>
                  ) : u.phase === 'error' ? (
                    <span class="error">Upload failed: {u.error}</span>
                  ) : u.status ? (
                    <>
                      <StatusBadge status={u.status} />
                      {u.status === 'FAILED' && u.error ? <span class="error"> {u.error}</span> : null}{' '}
                      {u.documentId ? <a href={`/app/w/${wsId}/documents/${u.documentId}`}>Open</a> : null}
                    </>
                  ) : null}
                </span>
              </li>
            ))}
          </ul>
          <button type="button" onClick={uploads.clear}>
            Clear finished
          </button>
        </div>
      ) : null}

      <form
        class="filters"
        aria-label="Filter documents"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(search.trim());
          setPage(1);
        }}
      >
        <label>
          Title
          <input type="search" name="title-search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => (setStatus((e.target as HTMLSelectElement).value), setPage(1))}>
            <option value="">Any</option>
            <option value="PENDING">Pending</option>
            <option value="PROCESSING">Processing</option>
            <option value="VERIFIED">Verified</option>
            <option value="FAILED">Failed</option>
          </select>
        </label>
        <label>
          Purpose
          <select value={purpose} onChange={(e) => (setPurpose((e.target as HTMLSelectElement).value), setPage(1))}>
            <option value="">Any</option>
            <option value="KNOWLEDGE">Knowledge</option>
            <option value="INSTRUCTION">Instruction</option>
          </select>
        </label>
        <label>
          Tag
          <select value={tag} onChange={(e) => (setTag((e.target as HTMLSelectElement).value), setPage(1))}>
            <option value="">Any</option>
            {tags.data?.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>

      <ErrorBox error={list.error} />
      {list.data ? (
        <>
          <p class="muted" role="status">
            {list.data.pagination.total} document{list.data.pagination.total === 1 ? '' : 's'}
          </p>
          <div class="table-wrap">
            <table class="docs">
              <thead>
                <tr>
                  <th scope="col">Title</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="wide-only">Purpose</th>
                  <th scope="col">Tags</th>
                  <th scope="col" class="wide-only">Updated</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((d) => (
                  <tr key={d.id}>
                    <td>
                      <a href={`/app/w/${wsId}/documents/${d.id}`}>{d.title}</a>
                    </td>
                    <td>
                      <StatusBadge status={d.processingStatus} />
                    </td>
                    <td class="wide-only">{d.purpose === 'INSTRUCTION' ? 'Instruction' : 'Knowledge'}</td>
                    <td>{d.tags.map((t) => tagName.get(t) ?? '').filter(Boolean).join(', ')}</td>
                    <td class="wide-only">{when(d.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager page={page} pages={list.data.pagination.pages} onPage={setPage} />
        </>
      ) : list.loading ? (
        <p role="status">Loading…</p>
      ) : null}
    </section>
  );
}

export function Pager({ page, pages, onPage }: { page: number; pages: number; onPage: (p: number) => void }) {
  if (pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span>
        Page {page} of {pages}
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}
