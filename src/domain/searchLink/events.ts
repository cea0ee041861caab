import { DomainEvent } from '../event';
import { EventCatalog } from '../eventTraits';

/**
 * The tools a link's tool endpoint offers: `default`, the spec's `service_search`; `chatgpt`,
 * the `search` and `fetch` pair that ChatGPT connectors and deep research require.
 */
export type ToolProfile = 'default' | 'chatgpt';
export const TOOL_PROFILES: readonly ToolProfile[] = ['default', 'chatgpt'];

type L<T extends string, D> = DomainEvent<T, { linkId: string; workspaceId: string } & D>;

/**
 * The public token itself is never in the log: its SHA-256 (for look-up), a short prefix to
 * recognise it by, and its AES-256-GCM ciphertext under a key kept outside the databases
 * (src/security/tokenVault.ts) so admins can see the link's URL again. `tokenCiphertext` is
 * absent from links created before it existed: those answer `publicUrl: null`.
 */
export type SearchLinkCreated = L<
  'SearchLinkCreated',
  {
    tokenHash: string;
    tokenPrefix: string;
    tokenCiphertext?: string;
    name: string;
    allowedTags: string[];
    expiresAt: string | null;
    historyMode: boolean;
    /** Absent in links created before tool profiles: `default`. */
    toolProfile?: ToolProfile;
    createdAt: string;
  }
>;
export type SearchLinkUpdated = L<'SearchLinkUpdated', { name?: string; allowedTags?: string[]; expiresAt?: string | null; historyMode?: boolean; toolProfile?: ToolProfile; updatedAt: string }>;
export type LinkRevoked = L<'LinkRevoked', { revokedAt: string }>;

export type SearchLinkEvent = SearchLinkCreated | SearchLinkUpdated | LinkRevoked;

export const searchLinkStream = (linkId: string): string => `searchlink-${linkId}`;

/** Audit and encryption traits of every search-link event (see EventTraits). */
export const searchLinkEventTraits: EventCatalog<SearchLinkEvent> = {
  SearchLinkCreated: { audit: ['name', 'allowedTags', 'expiresAt', 'historyMode', 'toolProfile'], encrypted: [] },
  SearchLinkUpdated: { audit: ['name', 'allowedTags', 'expiresAt', 'historyMode', 'toolProfile'], encrypted: [] },
  LinkRevoked: { audit: [], encrypted: [] },
};
