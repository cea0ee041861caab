import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, get, patch } from '../api';
import { ErrorBox, when } from '../ui';
import { sideBySide } from '../diff';
import { MarkdownPreview } from '../markdown';

/** The current text of a .txt/.md document: GET /v1/workspaces/:id/documents/:docId/content. */
interface Content {
  content: string;
  updatedAt: string;
  format: 'markdown' | 'text';
}

type SaveState = 'loading' | 'saved' | 'saving' | 'unsaved' | 'conflict' | 'failed';

const STATE_WORDS: Record<SaveState, string> = {
  loading: 'Loading…',
  saved: 'Saved',
  saving: 'Saving…',
  unsaved: 'Unsaved changes',
  conflict: 'Conflict: someone else saved first',
  failed: 'Not saved',
};

/** After this pause in typing, the text is saved. */
const DEBOUNCE_MS = 1500;

/** Documents the API lets one edit (PATCH content): .txt and .md. */
export const isEditable = (filename: string) => /\.(md|markdown|txt)$/i.test(filename);

/**
 * The text editor with auto-save: after a pause in typing and on blur, PATCH the content with
 * `expectedUpdatedAt` (the time of the text this editor started from). When someone else saved
 * first (409 DOCUMENT_LOCKED) nothing is lost: the user's text stays in the editor, auto-save
 * pauses, and a panel shows their text beside the user's, to keep one or the other.
 */
export function ContentEditor({ wsId, docId, onSaved }: { wsId: string; docId: string; onSaved: () => void }) {
  const url = `/v1/workspaces/${wsId}/documents/${docId}`;
  const [text, setText] = useState('');
  const [state, setState] = useState<SaveState>('loading');
  const [savedAt, setSavedAt] = useState('');
  const [theirs, setTheirs] = useState<Content | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [format, setFormat] = useState<Content['format']>('text');
  const [preview, setPreview] = useState(false);
  // The latest values, for saves started from timers and events.
  const textRef = useRef('');
  const savedText = useRef('');
  const base = useRef('');
  const inFlight = useRef(false);
  const conflict = useRef(false);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => {
    let live = true;
    get<Content>(`${url}/content`)
      .then((c) => {
        if (!live) return;
        textRef.current = savedText.current = c.content;
        base.current = c.updatedAt;
        setText(c.content);
        setFormat(c.format);
        setSavedAt(c.updatedAt);
        setState('saved');
      })
      .catch((e) => live && setError(e));
    return () => {
      live = false;
      clearTimeout(timer.current);
    };
  }, [url]);

  const showConflict = async () => {
    conflict.current = true;
    setState('conflict');
    onSaved(); // the page shows the document as it is now
    try {
      setTheirs(await get<Content>(`${url}/content`));
    } catch (e) {
      setError(e);
    }
  };

  /** Save the editor's text unless it is saved already, a save is running, or a conflict is open. */
  const save = useCallback(
    async (expectedUpdatedAt = base.current, force = false) => {
      clearTimeout(timer.current);
      if (inFlight.current || (conflict.current && !force)) return;
      const sent = textRef.current;
      if (sent === savedText.current && !force) return;
      inFlight.current = true;
      setState('saving');
      setError(null);
      try {
        const r = await patch<{ updatedAt: string }>(url, { content: sent, expectedUpdatedAt });
        savedText.current = sent;
        base.current = r.updatedAt;
        conflict.current = false;
        setTheirs(null);
        setSavedAt(r.updatedAt);
        onSaved();
        inFlight.current = false;
        // Typed on while it was being saved: that text goes next.
        if (textRef.current !== sent) {
          setState('unsaved');
          timer.current = setTimeout(() => void save(), DEBOUNCE_MS);
        } else setState('saved');
      } catch (e) {
        inFlight.current = false;
        if (e instanceof ApiError && e.code === 'DOCUMENT_LOCKED') return showConflict();
        setError(e);
        setState('failed');
      }
    },
    [url],
  );

  // Leaving the page with text not yet saved asks first.
  useEffect(() => {
    if (state !== 'unsaved' && state !== 'saving' && state !== 'conflict' && state !== 'failed') return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    addEventListener('beforeunload', warn);
    return () => removeEventListener('beforeunload', warn);
  }, [state]);

  if (state === 'loading') return error ? <ErrorBox error={error} /> : <p role="status">Loading the text…</p>;
  return (
    <div class="editor">
      <div class="row editor-head">
        <label for="doc-content" class="grow">
          Content
        </label>
        <p class={`save-state save-${state}`} role="status" aria-live="polite" data-testid="save-state">
          {STATE_WORDS[state]}
          {state === 'saved' && savedAt ? <span class="muted small"> · {when(savedAt)}</span> : null}
        </p>
      </div>
      {format === 'markdown' ? (
        <div class="segmented" role="group" aria-label="Editor view">
          <button type="button" aria-pressed={!preview} onClick={() => setPreview(false)}>
            Write
          </button>
          <button type="button" aria-pressed={preview} onClick={() => setPreview(true)}>
            Preview
          </button>
        </div>
      ) : null}
      {preview ? (
        <div class="preview" aria-label="Markdown preview" role="region" data-testid="preview">
          <MarkdownPreview text={text} />
        </div>
      ) : null}
      <textarea
        hidden={preview}
        id="doc-content"
        name="content"
        rows={14}
        spellcheck
        value={text}
        onInput={(e) => {
          const v = (e.target as HTMLTextAreaElement).value;
          textRef.current = v;
          setText(v);
          if (conflict.current) return;
          clearTimeout(timer.current);
          if (v === savedText.current) {
            if (!inFlight.current) setState('saved');
            return;
          }
          if (!inFlight.current) setState('unsaved');
          timer.current = setTimeout(() => void save(), DEBOUNCE_MS);
        }}
        onBlur={() => void save()}
      />
      <p class="muted small">Saved automatically after a pause in typing and when you leave the editor. Each save processes the document again.</p>
      {state === 'failed' ? (
        <div class="actions">
          <button type="button" onClick={() => void save(base.current, true)}>
            Try saving again
          </button>
        </div>
      ) : null}
      <ErrorBox error={error} />
      {state === 'conflict' ? (
        <section class="conflict" aria-labelledby="conflict-title" data-testid="conflict">
          <h3 id="conflict-title">Someone else saved this document first</h3>
          <p>Your text has not been saved and is still in the editor. Choose which text to keep.</p>
          {theirs ? (
            <>
              <DiffTable theirs={theirs.content} mine={text} theirsAt={when(theirs.updatedAt)} />
              <details>
                <summary>Both texts in full</summary>
                <div class="conflict-texts">
                  <label>
                    Their text (saved {when(theirs.updatedAt)})
                    <textarea readOnly rows={8} value={theirs.content} data-testid="theirs" />
                  </label>
                  <label>
                    Your text
                    <textarea readOnly rows={8} value={text} data-testid="mine" />
                  </label>
                </div>
              </details>
            </>
          ) : (
            <p role="status">Loading their text…</p>
          )}
          <div class="actions">
            <button type="button" class="primary" disabled={!theirs} onClick={() => theirs && void save(theirs.updatedAt, true)}>
              Keep mine (overwrite)
            </button>
            <button
              type="button"
              disabled={!theirs}
              onClick={() => {
                if (!theirs) return;
                textRef.current = savedText.current = theirs.content;
                base.current = theirs.updatedAt;
                conflict.current = false;
                setText(theirs.content);
                setSavedAt(theirs.updatedAt);
                setTheirs(null);
                setState('saved');
              }}
            >
              Take theirs
            </button>
          </div>
        </section>
      ) : null}
    </div>
  );
}

/** Their text and the user's side by side, line by line; changed lines are marked in words as well as colour. */
function DiffTable({ theirs, mine, theirsAt }: { theirs: string; mine: string; theirsAt: string }) {
  const rows = sideBySide(theirs, mine);
  const changed = rows.filter((r) => r.kind === 'changed').length;
  return (
    <>
      <p class="small" role="status">
        {changed === 0 ? 'The two texts are the same.' : `${changed} line${changed === 1 ? '' : 's'} differ.`}
      </p>
      <div class="table-wrap diff-wrap">
        <table class="diff" data-testid="diff">
          <caption class="sr-only">Their text and yours, line by line</caption>
          <colgroup>
            <col class="diff-no-col" />
            <col />
            <col class="diff-no-col" />
            <col />
          </colgroup>
          <thead>
            <tr>
              <th scope="col" colSpan={2}>
                Theirs <span class="muted small">(saved {theirsAt})</span>
              </th>
              <th scope="col" colSpan={2}>
                Yours
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i} class={r.kind === 'same' ? 'diff-same' : 'diff-changed'}>
                <td class="diff-no">{r.leftNo ?? ''}</td>
                <td class={r.kind === 'changed' && r.left !== null ? 'diff-del' : r.kind === 'changed' ? 'diff-none' : ''} data-side="theirs">
                  {r.kind === 'changed' && r.left !== null ? <span class="sr-only">only in theirs: </span> : null}
                  {r.left ?? ''}
                </td>
                <td class="diff-no">{r.rightNo ?? ''}</td>
                <td class={r.kind === 'changed' && r.right !== null ? 'diff-add' : r.kind === 'changed' ? 'diff-none' : ''} data-side="mine">
                  {r.kind === 'changed' && r.right !== null ? <span class="sr-only">only in yours: </span> : null}
                  {r.right ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
