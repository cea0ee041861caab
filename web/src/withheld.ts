/**
 * GET /v1/workspaces leaves out the workspaces whose identity settings (requireMfa,
 * requireVerifiedEmail) the caller does not meet, and says so only in two headers:
 * `KB-Workspaces-Withheld: <n>` and, when n > 0, `KB-Workspaces-Withheld-Reasons:
 * CODE=n, CODE=n` (the codes those workspaces' routes answer). This reads them defensively:
 * header values are untrusted text, so anything malformed is ignored, never thrown, and
 * nothing of them but parsed numbers and known codes reaches the page.
 */

export const WITHHELD_HEADER = 'KB-Workspaces-Withheld';
export const WITHHELD_REASONS_HEADER = 'KB-Workspaces-Withheld-Reasons';

/** A known reason, or OTHER for a code this console does not know (or a count no reason accounts for). */
export type WithheldReason = 'MFA_ENROLMENT_REQUIRED' | 'EMAIL_NOT_VERIFIED' | 'OTHER';

export interface Withheld {
  /** How many workspaces are left out (1 … MAX_WITHHELD). */
  count: number;
  /** One entry per reason, known reasons first in a fixed order, each count ≥ 1; their sum is `count`. */
  reasons: { reason: WithheldReason; count: number }[];
}

/** Above this a count is not believed (nobody is a member of a million workspaces). */
export const MAX_WITHHELD = 100_000;
/** A longer reasons header is not read at all (the server's is a few dozen characters). */
const MAX_REASONS_LENGTH = 1_000;
/** At most this many `CODE=n` pairs are read. */
const MAX_PAIRS = 20;
/** In the order they are told: a second factor is set up on a confirmed address only, so the address comes first. */
const KNOWN: readonly WithheldReason[] = ['EMAIL_NOT_VERIFIED', 'MFA_ENROLMENT_REQUIRED'];

function count(text: string): number | null {
  const t = text.trim();
  if (!/^[0-9]{1,7}$/.test(t)) return null;
  const n = Number(t);
  return n <= MAX_WITHHELD ? n : null;
}

/**
 * The withheld workspaces from the two header values (null when a header is absent), or null
 * when there are none to tell of: count header absent, 0, malformed or absurd. Reasons that are
 * malformed or unknown, and any part of the count no reason accounts for, become OTHER; a
 * reasons header claiming more than the count is cut down to it.
 */
export function parseWithheld(countHeader: string | null | undefined, reasonsHeader: string | null | undefined): Withheld | null {
  if (typeof countHeader !== 'string') return null;
  const total = count(countHeader);
  if (total === null || total === 0) return null;

  const byReason = new Map<WithheldReason, number>();
  if (typeof reasonsHeader === 'string' && reasonsHeader.length <= MAX_REASONS_LENGTH) {
    for (const pair of reasonsHeader.split(',').slice(0, MAX_PAIRS)) {
      const m = /^\s*([A-Za-z_]{1,64})\s*=\s*([0-9]{1,7})\s*$/.exec(pair);
      if (!m) continue;
      const n = count(m[2]);
      if (n === null || n === 0) continue;
      const code = m[1].toUpperCase();
      const reason: WithheldReason = (KNOWN as readonly string[]).includes(code) ? (code as WithheldReason) : 'OTHER';
      byReason.set(reason, (byReason.get(reason) ?? 0) + n);
    }
  }

  const reasons: Withheld['reasons'] = [];
  let left = total;
  for (const reason of [...KNOWN, 'OTHER' as const]) {
    const n = Math.min(byReason.get(reason) ?? 0, left);
    if (n > 0) reasons.push({ reason, count: n });
    left -= n;
  }
  if (left > 0) {
    const other = reasons.find((r) => r.reason === 'OTHER');
    if (other) other.count += left;
    else reasons.push({ reason: 'OTHER', count: left });
  }
  return { count: total, reasons };
}
