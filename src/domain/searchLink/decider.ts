import { domainError } from '../errors';
import { SearchLinkEvent, TOOL_PROFILES, ToolProfile } from './events';

export interface SearchLinkState {
  status: 'none' | 'active' | 'revoked';
  linkId: string;
  workspaceId: string;
  name: string;
  allowedTags: string[];
  expiresAt: string | null;
  historyMode: boolean;
  toolProfile: ToolProfile;
}

/**
 * Commands carry what the decider cannot see in its own stream, read by the handler at
 * the edge: whether the workspace allows links, and which tag ids exist in it.
 */
export type SearchLinkCommand =
  | {
      type: 'CreateSearchLink';
      linkId: string;
      workspaceId: string;
      tokenHash: string;
      tokenPrefix: string;
      /** The token sealed by the token vault (never the token itself). */
      tokenCiphertext: string;
      name: string;
      allowedTags: string[];
      expiresAt: string | null;
      historyMode: boolean;
      /** Absent: `default`. */
      toolProfile?: ToolProfile;
      linksEnabled: boolean;
      workspaceTags: string[];
      now: Date;
    }
  | {
      type: 'UpdateSearchLink';
      workspaceId: string;
      name?: string;
      allowedTags?: string[];
      expiresAt?: string | null;
      historyMode?: boolean;
      toolProfile?: ToolProfile;
      linksEnabled: boolean;
      workspaceTags: string[];
      now: Date;
    }
  | { type: 'RevokeSearchLink'; workspaceId: string; now: Date };

export const NAME_MAX = 200;
export const ALLOWED_TAGS_MAX = 100;

function initialState(): SearchLinkState {
  return { status: 'none', linkId: '', workspaceId: '', name: '', allowedTags: [], expiresAt: null, historyMode: false, toolProfile: 'default' };
}

function evolve(s: SearchLinkState, e: SearchLinkEvent): SearchLinkState {
  switch (e.type) {
    case 'SearchLinkCreated':
      return {
        status: 'active',
        linkId: e.data.linkId,
        workspaceId: e.data.workspaceId,
        name: e.data.name,
        allowedTags: e.data.allowedTags,
        expiresAt: e.data.expiresAt,
        historyMode: e.data.historyMode,
        toolProfile: e.data.toolProfile ?? 'default',
      };
    case 'SearchLinkUpdated':
      return {
        ...s,
        name: e.data.name ?? s.name,
        allowedTags: e.data.allowedTags ?? s.allowedTags,
        expiresAt: e.data.expiresAt !== undefined ? e.data.expiresAt : s.expiresAt,
        historyMode: e.data.historyMode ?? s.historyMode,
        toolProfile: e.data.toolProfile ?? s.toolProfile,
      };
    case 'LinkRevoked':
      return { ...s, status: 'revoked' };
    default: {
      const _never: never = e;
      return _never;
    }
  }
}

function checkTags(allowedTags: string[], workspaceTags: string[]): string[] {
  const unique = [...new Set(allowedTags)];
  if (unique.length > ALLOWED_TAGS_MAX) throw domainError('VALIDATION_ERROR', `At most ${ALLOWED_TAGS_MAX} allowed tags.`);
  const known = new Set(workspaceTags);
  const unknown = unique.filter((t) => !known.has(t));
  if (unknown.length) throw domainError('VALIDATION_ERROR', 'allowedTags: some ids are not tags of this workspace.', { fields: [{ field: 'allowedTags', problem: 'unknown tag ids' }], unknownTags: unknown });
  return unique;
}

function checkExpiry(expiresAt: string | null | undefined, now: Date): void {
  if (expiresAt === undefined || expiresAt === null) return;
  if (Date.parse(expiresAt) <= now.getTime()) throw domainError('VALIDATION_ERROR', 'expiresAt must be in the future.', { fields: [{ field: 'expiresAt', problem: 'must be in the future' }] });
}

function checkToolProfile(profile: ToolProfile | undefined): void {
  if (profile !== undefined && !TOOL_PROFILES.includes(profile)) throw domainError('VALIDATION_ERROR', `toolProfile: one of ${TOOL_PROFILES.join(', ')}.`);
}

function checkName(name: string | undefined): void {
  if (name !== undefined && name.length > NAME_MAX) throw domainError('VALIDATION_ERROR', `name: at most ${NAME_MAX} characters.`);
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

function decide(c: SearchLinkCommand, s: SearchLinkState): SearchLinkEvent[] {
  switch (c.type) {
    case 'CreateSearchLink': {
      if (s.status !== 'none') throw domainError('CONFLICT', 'Search link already exists.');
      if (!c.linksEnabled) throw domainError('PUBLIC_LINKS_DISABLED', 'Public search links are disabled for this workspace.');
      if (!/^[0-9a-f]{64}$/.test(c.tokenHash)) throw new Error('tokenHash must be a hex SHA-256');
      if (!/^v1:[A-Za-z0-9_-]+$/.test(c.tokenCiphertext)) throw new Error('tokenCiphertext must be a sealed token (v1:...)');
      checkName(c.name);
      checkExpiry(c.expiresAt, c.now);
      checkToolProfile(c.toolProfile);
      const allowedTags = checkTags(c.allowedTags, c.workspaceTags);
      return [
        {
          type: 'SearchLinkCreated',
          data: {
            linkId: c.linkId,
            workspaceId: c.workspaceId,
            tokenHash: c.tokenHash,
            tokenPrefix: c.tokenPrefix,
            tokenCiphertext: c.tokenCiphertext,
            name: c.name,
            allowedTags,
            expiresAt: c.expiresAt ? new Date(c.expiresAt).toISOString() : null,
            historyMode: c.historyMode,
            // Recorded only when not the default, as links created before profiles existed read.
            ...(c.toolProfile !== undefined && c.toolProfile !== 'default' ? { toolProfile: c.toolProfile } : {}),
            createdAt: c.now.toISOString(),
          },
        },
      ];
    }
    case 'UpdateSearchLink': {
      if (s.status !== 'active' || s.workspaceId !== c.workspaceId) throw domainError('NOT_FOUND', 'Search link not found or revoked.');
      if (!c.linksEnabled) throw domainError('PUBLIC_LINKS_DISABLED', 'Public search links are disabled for this workspace.');
      checkName(c.name);
      checkExpiry(c.expiresAt, c.now);
      checkToolProfile(c.toolProfile);
      const changes: { name?: string; allowedTags?: string[]; expiresAt?: string | null; historyMode?: boolean; toolProfile?: ToolProfile } = {};
      if (c.name !== undefined && c.name !== s.name) changes.name = c.name;
      if (c.allowedTags !== undefined) {
        const tags = checkTags(c.allowedTags, c.workspaceTags);
        if (!sameSet(tags, s.allowedTags)) changes.allowedTags = tags;
      }
      if (c.expiresAt !== undefined) {
        const next = c.expiresAt === null ? null : new Date(c.expiresAt).toISOString();
        if (next !== s.expiresAt) changes.expiresAt = next;
      }
      if (c.historyMode !== undefined && c.historyMode !== s.historyMode) changes.historyMode = c.historyMode;
      if (c.toolProfile !== undefined && c.toolProfile !== s.toolProfile) changes.toolProfile = c.toolProfile;
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'SearchLinkUpdated', data: { linkId: s.linkId, workspaceId: s.workspaceId, ...changes, updatedAt: c.now.toISOString() } }];
    }
    case 'RevokeSearchLink':
      if (s.status !== 'active' || s.workspaceId !== c.workspaceId) throw domainError('NOT_FOUND', 'Search link not found or revoked.');
      return [{ type: 'LinkRevoked', data: { linkId: s.linkId, workspaceId: s.workspaceId, revokedAt: c.now.toISOString() } }];
    default: {
      const _never: never = c;
      return _never;
    }
  }
}

export const searchLinkDecider = { initialState, evolve, decide };
