import { RecordedEvent } from '../domain/event';
import { DEFAULT_SETTINGS } from '../domain/workspace/events';
import { registerSchemaVersion, schemaVersionOf } from './eventSchemas';

/** Turns `data` of one schema version into the next version's shape. */
export type Upcaster = (data: unknown, event: RecordedEvent) => unknown;

const upcasters = new Map<string, Map<number, Upcaster>>();

/**
 * Register how to read `type` at `fromVersion` as `fromVersion + 1`. The event's current
 * version (the one new events are written with) becomes at least `fromVersion + 1`.
 */
export function registerUpcaster(type: string, fromVersion: number, fn: Upcaster): void {
  let byVersion = upcasters.get(type);
  if (!byVersion) upcasters.set(type, (byVersion = new Map()));
  byVersion.set(fromVersion, fn);
  if (schemaVersionOf(type) < fromVersion + 1) registerSchemaVersion(type, fromVersion + 1);
}

/** The event read as the current shape of its type: each step's upcaster applied in turn. */
export function upcast<E extends RecordedEvent>(event: E): E {
  const byVersion = upcasters.get(event.type);
  if (!byVersion) return event;
  let version = event.metadata?.schemaVersion ?? 1;
  const target = schemaVersionOf(event.type);
  if (version >= target) return event;
  let data = event.data;
  while (version < target) {
    const step = byVersion.get(version);
    if (!step) throw new Error(`no upcaster for ${event.type} v${version}`);
    data = step(data, event);
    version += 1;
  }
  return { ...event, data, metadata: { ...event.metadata, schemaVersion: version } };
}

/**
 * Version 1 of WorkspaceCreated had no settings: read it with the defaults, which is what
 * such a workspace has always behaved as.
 */
registerUpcaster('WorkspaceCreated', 1, (data) => {
  const d = data as Record<string, unknown>;
  return d.settings === undefined ? { ...d, settings: { ...DEFAULT_SETTINGS } } : d;
});
