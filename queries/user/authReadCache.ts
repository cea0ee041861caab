import { RecordedEvent } from '../../src/domain/event';
import { documentEventTraits } from '../../src/domain/document/events';
import { embeddingModelEventTraits } from '../../src/domain/embeddingModel/events';
import { instructionSetEventTraits } from '../../src/domain/instructionSet/events';
import { searchEventTraits } from '../../src/domain/search/events';
import { searchLinkEventTraits } from '../../src/domain/searchLink/events';
import { Role, WorkspaceSettings } from '../../src/domain/workspace/events';
import { ReadStore } from '../../src/ports/readStore';
import { apiKeysCollection, sessionsCollection, usersCollection, UserView } from '../../projections/user/userProjection';
import { sha256Hex } from '../../src/util/crypto';
import { memberId, membersCollection, workspacesCollection } from '../../projections/workspace/workspaceProjection';
import { identityRequirementUnmet } from '../workspace/membership';

/**
 * Event types that change none of the rows authentication reads (sessions, users, members,
 * workspaces' identity settings): those of documents, instruction sets, search links,
 * searches and embedding models, and tags. Any other type, one added later included, makes
 * the cache forget everything.
 */
const IRRELEVANT_TO_AUTH: ReadonlySet<string> = new Set([
  ...Object.keys(documentEventTraits),
  ...Object.keys(instructionSetEventTraits),
  ...Object.keys(searchLinkEventTraits),
  ...Object.keys(searchEventTraits),
  ...Object.keys(embeddingModelEventTraits),
  'TagCreated',
  'TagUpdated',
  'TagDeleted',
]);

/** Entries kept per kind; past it the oldest is dropped. */
const MAX_ENTRIES = 10_000;

type IdentityFields = Pick<UserView, 'id' | 'email' | 'emailVerified' | 'mfa'>;
type IdentitySettings = Pick<WorkspaceSettings, 'requireMfa' | 'requireVerifiedEmail'>;

/**
 * The read models every authenticated request reads (its session or API key, its user, its
 * membership and the workspace's identity settings), remembered between requests (issue 13: four SQLite reads
 * per request were ~10% of a durable command's CPU on the event loop).
 *
 * Invalidated by events: the projection runner of this process tells it of every batch it has
 * applied, after the read models changed and before anyone waiting for that batch is answered
 * (ProjectionRunner.onApplied), and a batch with any event that could change these rows
 * (anything but document, instruction-set, search-link, search, embedding-model and tag events)
 * empties it. So a revoked session or key, or a removed member, is refused from the moment the revocation
 * is answered, as when every request read the store. A read that was under way while a batch was
 * applied is not remembered (it may predate the change). Only found rows are remembered.
 *
 * Use it only where the projections run in this process (runner in `subscribe` mode): in an API
 * process whose projections run elsewhere (`poll`) nothing would tell it of changes.
 */
export class AuthReadCache {
  /** Live API keys by the SHA-256 of their token. */
  private readonly apiKeys = new Map<string, Readonly<{ id: string; userId: string }>>();
  private readonly sessions = new Map<string, Readonly<{ id: string; userId: string }>>();
  private readonly users = new Map<string, Readonly<IdentityFields>>();
  private readonly members = new Map<string, Role>();
  private readonly workspaces = new Map<string, Readonly<IdentitySettings>>();
  /** Moves at every invalidation: a read begun before it is not remembered. */
  private generation = 0;

  constructor(private readonly store: ReadStore) {}

  /** A batch applied by this process's projections (`undefined`: its events are unknown). */
  applied(events: readonly Pick<RecordedEvent, 'type'>[] | undefined): void {
    if (events !== undefined && events.every((e) => IRRELEVANT_TO_AUTH.has(e.type))) return;
    this.generation += 1;
    this.apiKeys.clear();
    this.sessions.clear();
    this.users.clear();
    this.members.clear();
    this.workspaces.clear();
  }

  /** As `liveApiKeyByToken`: the live (not revoked) API key whose hash is that of `token`, or null. */
  liveApiKey(token: string): Promise<Readonly<{ id: string; userId: string }> | null> {
    const keyHash = sha256Hex(token);
    return this.read(this.apiKeys, keyHash, async () => {
      const key = (await apiKeysCollection(this.store).find({ keyHash }, { limit: 1 }))[0];
      return key && !key.revoked ? Object.freeze({ id: key.id, userId: key.userId }) : null;
    });
  }

  /** As `liveSession`: the session if it exists and is not revoked, else null. */
  liveSession(sessionId: string): Promise<Readonly<{ id: string; userId: string }> | null> {
    return this.read(this.sessions, sessionId, async () => {
      const s = await sessionsCollection(this.store).get(sessionId);
      return s && !s.revoked ? Object.freeze({ id: s.id, userId: s.userId }) : null;
    });
  }

  /** As `userById`, the fields authentication uses. */
  user(userId: string): Promise<Readonly<IdentityFields> | null> {
    return this.read(this.users, userId, async () => {
      const u = await usersCollection(this.store).get(userId);
      return u ? Object.freeze({ id: u.id, email: u.email, emailVerified: u.emailVerified, mfa: u.mfa }) : null;
    });
  }

  /** As `memberRole`. */
  memberRole(workspaceId: string, userId: string): Promise<Role | null> {
    const id = memberId(workspaceId, userId);
    return this.read(this.members, id, async () => (await membersCollection(this.store).get(id))?.role ?? null);
  }

  /** As `unmetIdentityRequirement`. */
  async unmetIdentityRequirement(workspaceId: string, userId: string, authMethod: string): Promise<'mfa' | 'verified_email' | null> {
    const settings = await this.read(this.workspaces, workspaceId, async () => {
      const w = await workspacesCollection(this.store).get(workspaceId);
      return w ? Object.freeze({ requireMfa: w.settings.requireMfa, requireVerifiedEmail: w.settings.requireVerifiedEmail }) : null;
    });
    return identityRequirementUnmet(settings ?? undefined, authMethod, () => this.user(userId));
  }

  private async read<V>(map: Map<string, V>, key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = map.get(key);
    if (hit !== undefined) return hit;
    const generation = this.generation;
    const value = await load();
    if (value !== null && generation === this.generation) {
      map.set(key, value);
      if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value as string);
    }
    return value;
  }
}
