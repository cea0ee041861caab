import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, DocumentDetail, get, post, put, Tag } from '../api';
import { navigate } from '../router';
import { AsOfPanel, bytes, Confirm, ErrorBox, StatusBadge, useLoad, when } from '../ui';
import { ContentEditor, isEditable } from './editor';
import { useSubmit } from '../useSubmit';

export function DocumentView({ wsId, docId }: { wsId: string; docId: string }) {
  const doc = useLoad(() => get<DocumentDetail>(`/v1/workspaces/${wsId}/documents/${docId}`), [wsId, docId]);
  const tags = useLoad(() => get<{ data: Tag[] }>(`/v1/workspaces/${wsId}/tags`).then((r) => r.data), [wsId]);
  const [title, setTitle] = useState('');
  const [purpose, setPurpose] = useState('KNOWLEDGE');
  const [chosen, setChosen] = useState<string[]>([]);
  const { busy, error, run } = useSubmit();
  const [note, setNote] = useState('');
  const [confirm, setConfirm] = useState(false);

  useEffect(() => {
    if (!doc.data) return;
    setTitle(doc.data.title);
    setPurpose(doc.data.purpose);
    setChosen(doc.data.tags.map((t) => t.id));
    // Not on every reload (processing polls, auto-saves): that would undo edits in progress here.
  }, [doc.data?.id]);

  // Live status while processing.
  const status = doc.data?.processingStatus;
  useEffect(() => {
    if (status !== 'PENDING' && status !== 'PROCESSING') return;
    const t = setInterval(doc.reload, 1500);
    return () => clearInterval(t);
  }, [status]);

  if (doc.error) return <ErrorBox error={doc.error} />;
  if (!doc.data) return <p role="status">Loading…</p>;
  const d = doc.data;
  return (
    <section>
      <p>
        <a href={`/app/w/${wsId}/documents`}>← Documents</a>
      </p>
      <h1>{d.title}</h1>
      <p>
        <StatusBadge status={d.processingStatus} />
        {d.error ? (
          <span class="error">
            {' '}
            {d.error.message} ({d.error.code})
          </span>
        ) : null}
      </p>
      <dl class="meta">
        <dt>File name</dt>
        <dd>{d.filename}</dd>
        <dt>Type</dt>
        <dd>{d.mimeType}</dd>
        <dt>Size</dt>
        <dd>{bytes(d.size)}</dd>
        <dt>Chunks</dt>
        <dd>{d.chunkCount}</dd>
        <dt>Tokens</dt>
        <dd>{d.tokenCount}</dd>
        <dt>Uploaded</dt>
        <dd>{when(d.createdAt)}</dd>
        <dt>Updated</dt>
        <dd>{when(d.updatedAt)}</dd>
      </dl>

      {isEditable(d.filename) ? (
        <>
          <h2>Text</h2>
          <ContentEditor wsId={wsId} docId={docId} onSaved={doc.reload} />
        </>
      ) : null}
      {d.processingStatus === 'VERIFIED' ? <ExtractedText wsId={wsId} docId={docId} verifiedAt={d.updatedAt} /> : null}

      <h2>Details</h2>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          setNote('');
          void run(async () => {
            await put(`/v1/workspaces/${wsId}/documents/${docId}`, { title, purpose, tags: chosen });
            setNote('Saved.');
            doc.reload();
          });
        }}
      >
        <label>
          Title
          <input name="title" required maxLength={500} value={title} onInput={(e) => setTitle((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Purpose
          <select name="purpose" value={purpose} onChange={(e) => setPurpose((e.target as HTMLSelectElement).value)}>
            <option value="KNOWLEDGE">Knowledge</option>
            <option value="INSTRUCTION">Instruction</option>
          </select>
        </label>
        <fieldset>
          <legend>Tags</legend>
          {tags.data && tags.data.length === 0 ? <p class="muted small">This workspace has no tags yet.</p> : null}
          <div class="checks">
            {tags.data?.map((t) => (
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
        <ErrorBox error={error} />
        {note ? <p role="status">{note}</p> : null}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Save details
          </button>
          <button
            type="button"
            disabled={busy}
            onClick={() => {
              setNote('');
              void run(async () => {
                await post(`/v1/workspaces/${wsId}/documents/${docId}/process`);
                setNote('Queued for reprocessing.');
                doc.reload();
              });
            }}
          >
            Reprocess
          </button>
          <button type="button" class="danger" onClick={() => setConfirm(true)}>
            Delete…
          </button>
        </div>
      </form>
      <AsOf wsId={wsId} docId={docId} />
      <Confirm
        open={confirm}
        title="Delete this document?"
        message={`“${d.title}” will be removed from the workspace and from search.`}
        action="Delete document"
        onClose={() => setConfirm(false)}
        onConfirm={async () => {
          await del(`/v1/workspaces/${wsId}/documents/${docId}`);
          navigate(`/w/${wsId}/documents`);
        }}
      />
    </section>
  );
}

/** GET .../documents/:docId/text: the text search used (the last VERIFIED run's), now or then. */
interface DocumentText {
  processingId: string | null;
  verifiedAt: string | null;
  tokenCount: number;
  sizeBytes: number;
  text: string | null;
}

/** The text, or why there is none: no run verified by then, or erased with the document (410). */
type TextThen = DocumentText | 'erased';

async function textAt(wsId: string, docId: string, asOf?: string): Promise<TextThen> {
  try {
    return await get<DocumentText>(`/v1/workspaces/${wsId}/documents/${docId}/text${asOf ? `?asOf=${encodeURIComponent(asOf)}` : ''}`);
  } catch (err) {
    if (err instanceof ApiError && err.status === 410) return 'erased';
    throw err;
  }
}

/** The searched text in a scrolling block, with where it came from. */
function TextBlock({ t, label, testId }: { t: TextThen; label: string; testId: string }) {
  if (t === 'erased') return <p class="muted">The text was erased when the document was deleted.</p>;
  if (t.text === null) return <p class="muted">No processing run had been verified by then: search had no text for it.</p>;
  return (
    <>
      <p class="muted small">
        Verified {when(t.verifiedAt ?? '')} · {t.tokenCount} tokens · {bytes(t.sizeBytes)}
      </p>
      <pre class="doc-text" tabIndex={0} aria-label={label} data-testid={testId}>
        {t.text}
      </pre>
    </>
  );
}

/** The extracted text search uses now (any kind of document), loaded when opened. */
export function ExtractedText({ wsId, docId, verifiedAt }: { wsId: string; docId: string; verifiedAt: string }) {
  const [open, setOpen] = useState(false);
  const text = useLoad(() => (open ? textAt(wsId, docId) : Promise.resolve(null)), [wsId, docId, open, verifiedAt]);
  return (
    <details onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Text search uses</summary>
      {text.error ? <ErrorBox error={text.error} /> : text.data ? <TextBlock t={text.data} label="Text search uses" testId="extracted-text" /> : open ? <p role="status">Loading…</p> : null}
    </details>
  );
}

/** Time travel: the document as it was at a chosen past time (GET ...?asOf=), with the text search used then. */
function AsOf({ wsId, docId }: { wsId: string; docId: string }) {
  return (
    <AsOfPanel
      label="Show the document as it was at"
      inputName="as-of"
      notFound="The document did not exist yet at that time."
      load={async (asOf) => {
        const detail = await get<DocumentDetail>(`/v1/workspaces/${wsId}/documents/${docId}?asOf=${encodeURIComponent(asOf)}`);
        return { detail, text: await textAt(wsId, docId, asOf) };
      }}
    >
      {({ detail: past, text }: { detail: DocumentDetail; text: TextThen }, shownAt) => (
        <>
          <dl class="meta" aria-label={`The document as of ${shownAt}`} data-testid="as-of">
            <dt>As of</dt>
            <dd>{shownAt}</dd>
            <dt>Title</dt>
            <dd>{past.title}</dd>
            <dt>Status</dt>
            <dd>
              <StatusBadge status={past.processingStatus} />
            </dd>
            <dt>Purpose</dt>
            <dd>{past.purpose === 'INSTRUCTION' ? 'Instruction' : 'Knowledge'}</dd>
            <dt>Tags</dt>
            <dd>{past.tags.map((t) => t.name).join(', ') || 'none'}</dd>
            <dt>Last change then</dt>
            <dd>{when(past.updatedAt)}</dd>
          </dl>
          <h3>Text search used then</h3>
          <TextBlock t={text} label={`Text as of ${shownAt}`} testId="as-of-text" />
        </>
      )}
    </AsOfPanel>
  );
}
