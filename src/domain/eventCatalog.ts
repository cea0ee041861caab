import { documentEventTraits } from './document/events';
import { embeddingModelEventTraits } from './embeddingModel/events';
import { instructionSetEventTraits } from './instructionSet/events';
import { searchLinkEventTraits } from './searchLink/events';
import { searchEventTraits } from './search/events';
import { userEventTraits } from './user/events';
import { workspaceEventTraits } from './workspace/events';

/** Traits with their field names widened to strings, for look-up by type name. */
interface AnyTraits {
  readonly audit: readonly string[];
  readonly encrypted: readonly (readonly string[])[];
  readonly trail?: false;
}

/** The traits of every event type in the log, by type. */
export const EVENT_TRAITS: ReadonlyMap<string, AnyTraits> = new Map(
  [documentEventTraits, workspaceEventTraits, instructionSetEventTraits, searchLinkEventTraits, userEventTraits, searchEventTraits, embeddingModelEventTraits].flatMap((catalog) =>
    Object.entries<AnyTraits>(catalog),
  ),
);

/** Where document text sits in events of `type` (none for an unknown type). */
export function encryptedPathsOf(type: string): readonly (readonly string[])[] {
  return EVENT_TRAITS.get(type)?.encrypted ?? [];
}

/** The `data` fields an audit entry may show for `type`, besides ids (none for an unknown type). */
export function auditFieldsOf(type: string): readonly string[] {
  return EVENT_TRAITS.get(type)?.audit ?? [];
}

/** Whether events of `type` are entries of the workspace audit trail (searches are not). */
export function inAuditTrail(type: string): boolean {
  return EVENT_TRAITS.get(type)?.trail !== false;
}
