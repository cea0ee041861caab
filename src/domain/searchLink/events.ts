import { DomainEvent } from '../event';

type L<T extends string, D> = DomainEvent<T, { linkId: string; workspaceId: string } & D>;

/** The public token itself is never in the log: only its SHA-256 and a short prefix to recognise it by. */
export type SearchLinkCreated = L<
  'SearchLinkCreated',
  { tokenHash: string; tokenPrefix: string; name: string; allowedTags: string[]; expiresAt: string | null; historyMode: boolean; createdAt: string }
>;
export type SearchLinkUpdated = L<'SearchLinkUpdated', { name?: string; allowedTags?: string[]; expiresAt?: string | null; historyMode?: boolean; updatedAt: string }>;
export type LinkRevoked = L<'LinkRevoked', { revokedAt: string }>;

export type SearchLinkEvent = SearchLinkCreated | SearchLinkUpdated | LinkRevoked;

export const searchLinkStream = (linkId: string): string => `searchlink-${linkId}`;
