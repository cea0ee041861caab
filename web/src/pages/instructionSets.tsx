import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, DocumentRow, get, Page, patch, post } from '../api';
import { navigate } from '../router';
import { AsOfPanel, bytes, Confirm, CopyButton, ErrorBox, useLoad, when } from '../ui';
import { useSubmit } from '../useSubmit';

const MAX_DOCS = 20;
const MAX_BYTES = 102400;

interface SetSummary {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  isPublic: boolean;
  publicUrl: string | null;
  documentCount: number;
  totalSizeBytes: number;
  createdAt: string;
  updatedAt: string;
}
interface SetDetail extends SetSummary {
  documents: { documentId: string; title: string; sizeBytes: number; purpose: string; order: number }[];
  unavailableDocuments: { documentId: string; processingStatus: string | null }[];
}

export function InstructionSets({ wsId }: { wsId: string }) {
  const sets = useLoad(() => get<{ data: SetSummary[] }>(`/api/workspaces/${wsId}/instruction-sets`).then((r) => r.data), [wsId]);
  const [name, setName] = useState('');
  const { busy, error, run } = useSubmit();
  return (
    <section>
      <h1>Instruction sets</h1>
      <p class="muted">An ordered bundle of documents (at most {MAX_DOCS}, {MAX_BYTES / 1024} KB of text) shared as a page and as raw text.</p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            const s = await post<SetSummary>(`/api/workspaces/${wsId}/instruction-sets`, { name });
            setName('');
            navigate(`/w/${wsId}/sets/${s.id}`);
          });
        }}
      >
        <label class="grow">
          New instruction set name
          <input name="set-name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          Create set
        </button>
      </form>
      <ErrorBox error={error ?? sets.error} />
      {sets.data && sets.data.length === 0 ? <p class="muted">No instruction sets yet.</p> : null}
      <ul class="cards">
        {sets.data?.map((s) => (
          <li key={s.id} class="card">
            <a class="card-title" href={`/app/w/${wsId}/sets/${s.id}`}>
              {s.name}
            </a>
            <p class="muted">
              {s.isPublic ? 'Public' : 'Private'} · {s.documentCount} of {MAX_DOCS} documents · {bytes(s.totalSizeBytes)} of {MAX_BYTES / 1024} KB
            </p>
            <p class="muted small">Updated {when(s.updatedAt)}</p>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Meters({ set }: { set: SetDetail }) {
  return (
    <div class="meters">
      <label>
        Documents: {set.documentCount} of {MAX_DOCS}
        <meter min={0} max={MAX_DOCS} high={MAX_DOCS - 2} value={set.documentCount} />
      </label>
      <label>
        Size: {bytes(set.totalSizeBytes)} of {MAX_BYTES / 1024} KB
        <meter min={0} max={MAX_BYTES} high={MAX_BYTES * 0.9} value={set.totalSizeBytes} />
      </label>
    </div>
  );
}

export function InstructionSetView({ wsId, setId }: { wsId: string; setId: string }) {
  const set = useLoad(() => get<SetDetail>(`/api/instruction-sets/${setId}`), [setId]);
  const docs = useLoad(() => get<Page<DocumentRow>>(`/v1/workspaces/${wsId}/documents?limit=100&status=VERIFIED`), [wsId]);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [base, setBase] = useState<SetDetail | null>(null);
  const [conflict, setConflict] = useState<{ name: string; description: string | null; isPublic: boolean; updatedAt: string } | null>(null);
  const submit = useSubmit();
  const [note, setNote] = useState('');
  const [adding, setAdding] = useState('');
  const [dragFrom, setDragFrom] = useState<number | null>(null);
  const [confirm, setConfirm] = useState(false);

  // The form starts from the set as loaded; a conflict keeps the user's text.
  useEffect(() => {
    if (!set.data || conflict) return;
    setBase(set.data);
    setName(set.data.name);
    setDescription(set.data.description ?? '');
  }, [set.data?.updatedAt]);

  if (set.error) return <ErrorBox error={set.error} />;
  if (!set.data || !base) return <p role="status">Loading…</p>;
  const s = set.data;

  const run = async (f: () => Promise<unknown>, done?: string) => {
    setNote('');
    await submit.run(async () => {
      await f();
      if (done) setNote(done);
    });
    set.reload();
  };

  const save = (changes: Record<string, unknown>, expected: string) => {
    setNote('');
    return submit.run(async () => {
      try {
        await patch(`/api/instruction-sets/${setId}`, { ...changes, expectedUpdatedAt: expected });
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 409)) throw err;
        // Someone else saved first: show their version beside ours, keep ours in the form.
        const theirs = await get<SetDetail>(`/api/instruction-sets/${setId}`);
        setConflict({ name: theirs.name, description: theirs.description, isPublic: theirs.isPublic, updatedAt: theirs.updatedAt });
        setBase(theirs);
        return;
      }
      setConflict(null);
      setNote('Saved.');
      set.reload();
    });
  };

  const reorder = (ids: string[]) => run(() => patch(`/api/instruction-sets/${setId}/documents/reorder`, { documentIds: ids }), 'Order saved.');
  const move = (from: number, to: number) => {
    if (to < 0 || to >= s.documents.length || from === to) return;
    const ids = s.documents.map((d) => d.documentId);
    const [x] = ids.splice(from, 1);
    ids.splice(to, 0, x);
    void reorder(ids);
  };
  const inSet = new Set(s.documents.map((d) => d.documentId));
  const candidates = (docs.data?.data ?? []).filter((d) => !inSet.has(d.id));
  const unavailable = new Map(s.unavailableDocuments.map((u) => [u.documentId, u.processingStatus]));
  const rawUrl = s.publicUrl ? `${s.publicUrl}/raw` : null;

  return (
    <section>
      <p>
        <a href={`/app/w/${wsId}/sets`}>← Instruction sets</a>
      </p>
      <h1>{s.name}</h1>
      <Meters set={s} />

      <h2>Details</h2>
      {conflict ? (
        <div class="notice" role="alert">
          <p>
            <strong>Someone else saved this set first</strong> ({when(conflict.updatedAt)}). Your text is kept below. Their version:
          </p>
          <dl class="meta">
            <dt>Name</dt>
            <dd>
              {conflict.name}
              {conflict.name !== name ? ' (differs from yours)' : ''}
            </dd>
            <dt>Description</dt>
            <dd>
              {conflict.description ?? '—'}
              {(conflict.description ?? '') !== description ? ' (differs from yours)' : ''}
            </dd>
          </dl>
          <div class="actions">
            <button
              type="button"
              onClick={() => {
                setName(conflict.name);
                setDescription(conflict.description ?? '');
                setConflict(null);
                set.reload();
              }}
            >
              Take theirs
            </button>
            <button type="button" class="primary" onClick={() => void save({ name, description: description || null }, conflict.updatedAt)}>
              Save mine over theirs
            </button>
          </div>
        </div>
      ) : null}
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void save({ name, description: description || null }, base.updatedAt);
        }}
      >
        <label>
          Name
          <input name="set-name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          Description
          <input name="set-description" maxLength={500} value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
        </label>
        <div class="actions">
          <button type="submit" class="primary" disabled={submit.busy}>
            Save details
          </button>
        </div>
      </form>
      <ErrorBox error={submit.error} />
      {note ? <p role="status">{note}</p> : null}

      <h2>Sharing</h2>
      <label class="check">
        <input type="checkbox" checked={s.isPublic} onChange={(e) => void save({ isPublic: (e.target as HTMLInputElement).checked }, s.updatedAt)} />
        Public (anyone with the link can read the page and the raw text)
      </label>
      {s.publicUrl && rawUrl ? (
        <>
          <div class="row">
            <code class="secret" data-testid="set-page-url">
              {s.publicUrl}
            </code>
            <CopyButton text={s.publicUrl} label="Copy page link" />
            <a class="button" href={s.publicUrl} target="_blank" rel="noopener noreferrer">
              Preview page
            </a>
          </div>
          <div class="row">
            <code class="secret">{rawUrl}</code>
            <CopyButton text={rawUrl} label="Copy raw link" />
          </div>
        </>
      ) : null}

      <h2>Documents</h2>
      <p class="muted small">Drag to reorder, or use the Move buttons.</p>
      {s.documents.length === 0 ? <p class="muted">No documents yet.</p> : null}
      <ol class="set-docs" aria-label="Documents in this set">
        {s.documents.map((d, i) => (
          <li
            key={d.documentId}
            draggable
            data-doc={d.title}
            class={dragFrom === i ? 'dragging' : undefined}
            onDragStart={(e) => {
              setDragFrom(i);
              e.dataTransfer?.setData('text/plain', String(i));
            }}
            onDragOver={(e) => e.preventDefault()}
            onDrop={(e) => {
              e.preventDefault();
              const from = dragFrom ?? Number(e.dataTransfer?.getData('text/plain'));
              setDragFrom(null);
              move(from, i);
            }}
            onDragEnd={() => setDragFrom(null)}
          >
            <span class="grip" aria-hidden="true">
              ⋮⋮
            </span>
            <span class="grow">
              {i + 1}. {d.title} <span class="muted small">{bytes(d.sizeBytes)}</span>
              {unavailable.has(d.documentId) ? <span class="error small"> not served: {unavailable.get(d.documentId) ?? 'deleted'}</span> : null}
            </span>
            <button type="button" aria-label={`Move ${d.title} up`} disabled={i === 0} onClick={() => move(i, i - 1)}>
              ↑
            </button>
            <button type="button" aria-label={`Move ${d.title} down`} disabled={i === s.documents.length - 1} onClick={() => move(i, i + 1)}>
              ↓
            </button>
            <button type="button" class="danger" aria-label={`Remove ${d.title} from the set`} onClick={() => void run(() => del(`/api/instruction-sets/${setId}/documents/${d.documentId}`))}>
              Remove
            </button>
          </li>
        ))}
      </ol>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (adding) void run(() => post(`/api/instruction-sets/${setId}/documents`, { documentId: adding }), 'Document added.').then(() => setAdding(''));
        }}
      >
        <label class="grow">
          Add a verified document
          <select value={adding} onChange={(e) => setAdding((e.target as HTMLSelectElement).value)}>
            <option value="">Choose…</option>
            {candidates.map((d) => (
              <option key={d.id} value={d.id}>
                {d.title}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={!adding}>
          Add to set
        </button>
      </form>

      <SetAsOf setId={setId} />

      <h2>Danger zone</h2>
      <button type="button" class="danger" onClick={() => setConfirm(true)}>
        Delete set…
      </button>
      <Confirm
        open={confirm}
        title="Delete this instruction set?"
        message={`“${s.name}” and its public page will be deleted. Its documents stay in the workspace.`}
        action="Delete set"
        onClose={() => setConfirm(false)}
        onConfirm={async () => {
          await del(`/api/instruction-sets/${setId}`);
          navigate(`/w/${wsId}/sets`);
        }}
      />
    </section>
  );
}

/** Time travel: the set as it was at a chosen past time (GET /api/instruction-sets/:id?asOf=), its documents in their order then. */
function SetAsOf({ setId }: { setId: string }) {
  return (
    <AsOfPanel
      label="Show the set as it was at"
      inputName="set-as-of"
      notFound="The set did not exist yet at that time."
      load={(asOf) => get<SetDetail>(`/api/instruction-sets/${setId}?asOf=${encodeURIComponent(asOf)}`)}
    >
      {(past: SetDetail, shownAt) => (
        <div class="past" data-testid="set-as-of" aria-label={`The set as of ${shownAt}`} role="region">
          <dl class="meta">
            <dt>As of</dt>
            <dd>{shownAt}</dd>
            <dt>Name</dt>
            <dd>{past.name}</dd>
            <dt>Description</dt>
            <dd>{past.description || 'none'}</dd>
            <dt>Visibility</dt>
            <dd>{past.isPublic ? 'Public' : 'Private'}</dd>
            <dt>Size then</dt>
            <dd>
              {past.documents.length} of {MAX_DOCS} documents, {bytes(past.totalSizeBytes)}
            </dd>
          </dl>
          {past.documents.length > 0 ? (
            <ol class="past-docs" aria-label="Its documents then, in order">
              {past.documents.map((d) => (
                <li key={d.documentId}>
                  {d.title} <span class="muted small">({bytes(d.sizeBytes)})</span>
                </li>
              ))}
            </ol>
          ) : (
            <p class="muted">It held no documents then.</p>
          )}
        </div>
      )}
    </AsOfPanel>
  );
}
