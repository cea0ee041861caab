import { useEffect, useState } from 'preact/hooks';

/** Client-side routes under /app (the server answers index.html for every one of them). */
export const BASE = '/app';

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((f) => f()));

export function navigate(to: string, replace = false): void {
  const url = to.startsWith(BASE) ? to : BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((f) => f());
  window.scrollTo(0, 0);
}

/** The current location under /app: path (without /app) and its query. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, bump] = useState(0);
  useEffect(() => {
    const f = () => bump((n) => n + 1);
    listeners.add(f);
    return () => void listeners.delete(f);
  }, []);
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) || '/' : '/';
  return { path, query: new URLSearchParams(location.search) };
}

/** Intercepts clicks on same-app links (plain left click only). */
export function onLinkClick(e: MouseEvent): void {
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith(BASE) || a.target) return;
  e.preventDefault();
  navigate(href);
}

/**
 * A path parameter the pages may put into an API path as it is: one segment that stays one
 * segment. Pages build request paths from parameters (`/v1/workspaces/${wsId}/documents/${docId}`),
 * so a decoded `/`, `\\`, `?`, `#`, `%` (a second encoding) or a `.`/`..` segment would send the
 * signed-in user's requests, with their token, elsewhere: a link to `/app/w/<ws>/sets/<set>%3F`
 * showed the real set, and its "Remove … from the set" sent DELETE `/api/instruction-sets/<set>?/documents/<doc>`
 * (the whole set was deleted); one with `..%2F` reached any route of the API. Such a parameter matches no page.
 */
const SEGMENT = /^[^/\\?#%]+$/;

export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(':')) {
      let value: string;
      try {
        value = decodeURIComponent(s[i]);
      } catch {
        return null; // a broken %-escape
      }
      if (!SEGMENT.test(value) || value === '.' || value === '..') return null;
      out[p[i].slice(1)] = value;
    } else if (p[i] !== s[i]) return null;
  }
  return out;
}
