/**
 * The console's only way to the service: the public REST API. The access token lives in
 * this module's memory only; the refresh token is an httpOnly cookie the page never sees,
 * scoped to /v1/auth/console, renewed through POST /v1/auth/console/renew.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type SessionState = 'loading' | 'signed-out' | 'signed-in' | 'ended';

const CONSOLE_HEADERS = { 'x-kb-console': '1', 'content-type': 'application/json' };

let accessToken: string | null = null;
let renewTimer: ReturnType<typeof setTimeout> | undefined;
let state: SessionState = 'loading';
const listeners = new Set<(s: SessionState) => void>();

export const sessionState = (): SessionState => state;
export function onSession(f: (s: SessionState) => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}
function setState(s: SessionState): void {
  state = s;
  for (const f of listeners) f(s);
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = 'HTTP_' + res.status;
  let message = `The server answered ${res.status}.`;
  let details: Record<string, unknown> | undefined;
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } | string; message?: string };
    if (body && typeof body.error === 'object') {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      details = body.error.details;
    } else if (body && typeof body.error === 'string') {
      code = body.error;
      message = body.message ?? message;
    }
  } catch {
    /* not JSON */
  }
  return new ApiError(res.status, code, message, details);
}

function adopt(token: string, expiresIn: number): void {
  accessToken = token;
  clearTimeout(renewTimer);
  // Renew silently at 80 % of the token's life (at least 5 s ahead).
  const ms = Math.max(5_000, expiresIn * 1000 * 0.8);
  renewTimer = setTimeout(() => void renew().catch(() => undefined), ms);
  setState('signed-in');
}

let renewing: Promise<boolean> | null = null;

/** One renewal at a time in this tab, and across tabs (Web Locks) so rotation never races. */
export function renew(): Promise<boolean> {
  if (renewing) return renewing;
  const attempt = async (): Promise<boolean> => {
    const res = await fetch('/v1/auth/console/renew', { method: 'POST', headers: CONSOLE_HEADERS, credentials: 'same-origin', body: '{}' });
    if (res.ok) {
      const body = (await res.json()) as { accessToken: string; expiresIn: number };
      adopt(body.accessToken, body.expiresIn);
      return true;
    }
    const wasSignedIn = state === 'signed-in';
    accessToken = null;
    clearTimeout(renewTimer);
    setState(wasSignedIn ? 'ended' : 'signed-out');
    return false;
  };
  // Web Locks exist in secure contexts only (https, localhost).
  const locks: LockManager | undefined = window.isSecureContext ? navigator.locks : undefined;
  const p: Promise<boolean> = (locks ? locks.request('kb-console-renew', () => attempt()).then((x) => x) : attempt()).catch(() => {
    const wasSignedIn = state === 'signed-in';
    accessToken = null;
    setState(wasSignedIn ? 'ended' : 'signed-out');
    return false;
  });
  renewing = p;
  void p.finally(() => (renewing = null));
  return p;
}

export async function signIn(email: string, password: string): Promise<void> {
  const res = await fetch('/v1/auth/console/session', { method: 'POST', headers: CONSOLE_HEADERS, credentials: 'same-origin', body: JSON.stringify({ email, password }) });
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as { accessToken: string; expiresIn: number };
  adopt(body.accessToken, body.expiresIn);
}

/** Second step of a sign-in answered MFA_REQUIRED: the challenge from its details and a TOTP or recovery code. */
export async function signInWithCode(challenge: string, code: string): Promise<void> {
  const res = await fetch('/v1/auth/console/session/mfa', { method: 'POST', headers: CONSOLE_HEADERS, credentials: 'same-origin', body: JSON.stringify({ challenge, code }) });
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as { accessToken: string; expiresIn: number };
  adopt(body.accessToken, body.expiresIn);
}

/** Calls that need no session (mailed links, password reset): JSON in, JSON out, errors as ApiError. */
export async function anonymous<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

export async function signUp(name: string, email: string, password: string): Promise<void> {
  const res = await fetch('/v1/auth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, email, password }) });
  if (!res.ok) throw await errorOf(res);
  await signIn(email, password);
}

export async function signOut(): Promise<void> {
  clearTimeout(renewTimer);
  accessToken = null;
  try {
    await fetch('/v1/auth/console/logout', { method: 'POST', headers: CONSOLE_HEADERS, credentials: 'same-origin', body: '{}' });
  } finally {
    setState('signed-out');
  }
}

/** A JSON call with the access token; one silent renewal and retry on 401. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return (await apiWithHeaders<T>(method, path, body)).body;
}

/** As `api`, with the answer's headers too (for the few answers that say something in them). */
export async function apiWithHeaders<T>(method: string, path: string, body?: unknown): Promise<{ body: T; headers: Headers }> {
  const send = () =>
    fetch(path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(accessToken ? { authorization: `Bearer ${accessToken}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  let res = await send();
  if (res.status === 401 && (await renew())) res = await send();
  if (!res.ok) throw await errorOf(res);
  if (res.status === 204) return { body: undefined as T, headers: res.headers };
  return { body: (await res.json()) as T, headers: res.headers };
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = (path: string) => api<void>('DELETE', path);

/** Multipart upload through XMLHttpRequest, for its upload progress events. */
export function upload<T>(path: string, form: FormData, onProgress: (loaded: number, total: number) => void): { promise: Promise<T>; abort: () => void } {
  const xhr = new XMLHttpRequest();
  const promise = new Promise<T>((resolve, reject) => {
    const go = (retried: boolean) => {
      xhr.open('POST', path);
      if (accessToken) xhr.setRequestHeader('authorization', `Bearer ${accessToken}`);
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : 0);
      xhr.onerror = () => reject(new ApiError(0, 'NETWORK', 'The upload could not reach the server.'));
      xhr.onabort = () => reject(new ApiError(0, 'ABORTED', 'Upload cancelled.'));
      xhr.onload = () => {
        if (xhr.status === 401 && !retried) {
          void renew().then((ok) => (ok ? go(true) : reject(new ApiError(401, 'UNAUTHORIZED', 'Session ended.'))));
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(xhr.responseText);
        } catch {
          parsed = undefined;
        }
        if (xhr.status >= 200 && xhr.status < 300) return resolve(parsed as T);
        const e = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
        reject(new ApiError(xhr.status, e?.code ?? `HTTP_${xhr.status}`, e?.message ?? `The server answered ${xhr.status}.`));
      };
      xhr.send(form);
    };
    go(false);
  });
  return { promise, abort: () => xhr.abort() };
}

// ---- shapes of the API's answers the console reads ----
export type Role = 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER';
export interface Workspace {
  id: string;
  name: string;
  role: Role;
  createdAt: string;
  documentCount: number;
  memberCount: number;
  settings?: { allowPublicSearchLinks: boolean; defaultDocumentPurpose: string };
}
export type Status = 'PENDING' | 'PROCESSING' | 'VERIFIED' | 'FAILED';
export interface Tag {
  id: string;
  name: string;
  color: string;
}
export interface DocumentRow {
  id: string;
  title: string;
  purpose: string;
  processingStatus: Status;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}
export interface DocumentDetail {
  id: string;
  workspaceId: string;
  title: string;
  filename: string;
  mimeType: string;
  size: number;
  purpose: string;
  uploadStatus: string;
  processingStatus: Status;
  tags: Tag[];
  chunkCount: number;
  tokenCount: number;
  createdAt: string;
  updatedAt: string;
  error?: { code: string; message: string };
}
export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; pages: number };
}
export interface SearchAnswer {
  query: string;
  results: { documentId: string; documentTitle: string; content: string; score: number; chunkIndex: number; metadata: { page?: number; section?: string } }[];
  processingTime: number;
}
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}
export interface AuditEntry {
  id: string;
  position: number;
  time: string;
  actor: { userId: string | null; email: string | null; authMethod: string };
  action: string;
  subject: { type: string; id: string };
  summary: Record<string, unknown>;
}
export interface Me {
  id: string;
  email: string;
  name: string;
  emailVerified?: boolean;
  mfaEnabled?: boolean;
}
