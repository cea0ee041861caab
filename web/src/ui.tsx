import { ComponentChildren } from 'preact';
import { useCallback, useEffect, useId, useRef, useState } from 'preact/hooks';
import { ApiError, Status } from './api';
import { useSubmit } from './useSubmit';

/** A modal dialog: the native <dialog> with showModal() makes the rest of the page inert (focus stays inside). */
export function Dialog(props: { open: boolean; title: string; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  // Several dialogs live on one page: each is named by its own heading.
  const titleId = `dialog-title-${useId()}`;
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={props.onClose} onCancel={props.onClose}>
      <h2 id={titleId}>{props.title}</h2>
      {props.open ? props.children : null}
    </dialog>
  );
}

export function Confirm(props: { open: boolean; title: string; message: string; action: string; onConfirm: () => void | Promise<void>; onClose: () => void }) {
  const { busy, error, run } = useSubmit();
  return (
    <Dialog open={props.open} title={props.title} onClose={props.onClose}>
      <p>{props.message}</p>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="button" onClick={props.onClose}>
          Cancel
        </button>
        <button
          type="button"
          class="danger"
          disabled={busy}
          onClick={() =>
            void run(async () => {
              await props.onConfirm();
              props.onClose();
            })
          }
        >
          {props.action}
        </button>
      </div>
    </Dialog>
  );
}

const STATUS_WORDS: Record<Status, string> = { PENDING: 'Pending', PROCESSING: 'Processing', VERIFIED: 'Verified', FAILED: 'Failed' };
export function StatusBadge({ status }: { status: Status }) {
  return <span class={`badge status-${status.toLowerCase()}`}>{STATUS_WORDS[status] ?? status}</span>;
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiError ? `${error.message} (${error.code})` : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

/** Load something; `reload` runs it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load()
      .then((d) => {
        if (!live) return;
        setData(d);
        setError(null);
      })
      .catch((e) => live && setError(e))
      .finally(() => live && setLoading(false));
    return () => {
      live = false;
    };
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  return { data, error, loading, reload };
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? 'Copied' : label}
    </button>
  );
}

export const when = (iso: string) => new Date(iso).toLocaleString();

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Time travel: a date-time picker that loads a resource as it was then (`load` gets the time
 * as ISO 8601; the API's `?asOf=`) and shows it with `children(past, shownAt)`. A 404 means
 * the resource did not exist yet, said as `notFound`.
 */
export function AsOfPanel<T>({
  label,
  inputName,
  notFound,
  load,
  children,
}: {
  label: string;
  inputName: string;
  notFound: string;
  load: (isoTime: string) => Promise<T>;
  children: (past: T, shownAt: string) => ComponentChildren;
}) {
  const [at, setAt] = useState('');
  const [past, setPast] = useState<{ value: T; shownAt: string } | null>(null);
  const { busy, error, run, fail } = useSubmit();
  return (
    <>
      <h2>As of a past time</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          setPast(null);
          const t = new Date(at);
          if (Number.isNaN(t.getTime())) return fail(new Error('Choose a date and time.'));
          void run(
            async () => setPast({ value: await load(t.toISOString()), shownAt: t.toLocaleString() }),
            (err) => (err instanceof ApiError && err.status === 404 ? new Error(notFound) : err),
          );
        }}
      >
        <label class="grow">
          {label}
          <input type="datetime-local" step={1} name={inputName} required value={at} onInput={(e) => setAt((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" disabled={busy}>
          Show
        </button>
      </form>
      <ErrorBox error={error} />
      {past ? children(past.value, past.shownAt) : null}
    </>
  );
}
