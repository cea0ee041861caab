import { DomainEvent } from './event';

/**
 * What every event type declares beside its definition, so that adding an event cannot
 * forget it: which `data` fields an audit entry may show, and where document text sits.
 */
export interface EventTraits<Data> {
  /** Fields of `data` an audit entry may show besides ids. Never text, vectors, tokens or hashes. */
  readonly audit: readonly (keyof Data & string)[];
  /**
   * Paths of document text (and what is derived from it) in `data`, `[]` stepping into an
   * array. The event store seals them with the document's own key: erasing the key erases them.
   */
  readonly encrypted: readonly (readonly [keyof Data & string, ...string[]])[];
  /** false: operational telemetry (searches), not an entry of the workspace audit trail. Default true. */
  readonly trail?: false;
}

/** One entry per event type of a union: a missing (or misspelt) type does not compile. */
export type EventCatalog<E extends DomainEvent> = { readonly [K in E['type']]: EventTraits<Extract<E, { type: K }>['data']> };
