import { Projection, readModelProjection } from '../../src/core/projection';
import { ReadStore } from '../../src/ports/readStore';
import { SearchLinkEvent, ToolProfile } from '../../src/domain/searchLink/events';
import { WorkspaceEvent } from '../../src/domain/workspace/events';

export interface SearchLinkView {
  id: string;
  workspaceId: string;
  /** SHA-256 (hex) of the public token: what a public request is looked up by. */
  tokenHash: string;
  tokenPrefix: string;
  /** The token sealed with AES-256-GCM under the install's key (kept outside the databases); null for links created before. */
  tokenCiphertext?: string | null;
  name: string;
  allowedTags: string[];
  expiresAt: string | null;
  historyMode: boolean;
  /** Absent in rows projected before tool profiles existed: `default`. */
  toolProfile?: ToolProfile;
  revoked: boolean;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

export const searchLinksCollection = (s: ReadStore) =>
  s.collection<SearchLinkView>('search_links', [{ fields: ['tokenHash'], unique: true }, { fields: ['workspaceId'] }]);

/** Operational data kept beside the read models (not derived from the log; see queries/searchLink/linkUsage.ts). */
export const LINK_USAGE = 'link_usage';
export const LINK_QUERY_HISTORY = 'link_query_history';

export function searchLinkProjection(store: ReadStore): Projection {
  const links = searchLinksCollection(store);
  return readModelProjection('search_links', store, ['search_links'], async (event) => {
    const e = event as unknown as SearchLinkEvent | WorkspaceEvent;
    switch (e.type) {
      case 'SearchLinkCreated':
        await links.put({
          id: e.data.linkId,
          workspaceId: e.data.workspaceId,
          tokenHash: e.data.tokenHash,
          tokenPrefix: e.data.tokenPrefix,
          tokenCiphertext: e.data.tokenCiphertext ?? null,
          name: e.data.name,
          allowedTags: e.data.allowedTags,
          expiresAt: e.data.expiresAt,
          historyMode: e.data.historyMode,
          toolProfile: e.data.toolProfile ?? 'default',
          revoked: false,
          createdAt: e.data.createdAt,
          updatedAt: e.data.createdAt,
          revokedAt: null,
        });
        break;
      case 'SearchLinkUpdated': {
        const l = await links.get(e.data.linkId);
        if (!l) break;
        await links.put({
          ...l,
          name: e.data.name ?? l.name,
          allowedTags: e.data.allowedTags ?? l.allowedTags,
          expiresAt: e.data.expiresAt !== undefined ? e.data.expiresAt : l.expiresAt,
          historyMode: e.data.historyMode ?? l.historyMode,
          toolProfile: e.data.toolProfile ?? l.toolProfile ?? 'default',
          updatedAt: e.data.updatedAt,
        });
        // Turning history off forgets what was kept (it is not part of the log).
        if (e.data.historyMode === false) await store.collection(LINK_QUERY_HISTORY, [{ fields: ['linkId'] }]).deleteMany({ linkId: e.data.linkId });
        break;
      }
      case 'LinkRevoked': {
        const l = await links.get(e.data.linkId);
        if (l) await links.put({ ...l, revoked: true, revokedAt: e.data.revokedAt, updatedAt: e.data.revokedAt });
        await store.collection(LINK_QUERY_HISTORY, [{ fields: ['linkId'] }]).deleteMany({ linkId: e.data.linkId });
        break;
      }
      // TagDeleted changes nothing here on purpose: the deleted id stays in allowedTags and
      // matches no document, so a link's scope can only narrow, never widen to the workspace.
      case 'WorkspaceDeleted': {
        const gone = await links.find({ workspaceId: e.data.workspaceId });
        await links.deleteMany({ workspaceId: e.data.workspaceId });
        const ids = gone.map((l) => l.id);
        if (ids.length) {
          await store.collection(LINK_QUERY_HISTORY, [{ fields: ['linkId'] }]).deleteMany({ linkId: { $in: ids } });
          await store.collection(LINK_USAGE, [{ fields: ['linkId'] }]).deleteMany({ linkId: { $in: ids } });
        }
        break;
      }
      default:
        break;
    }
  });
}
