/**
 * Current schema version of each event type's `data`. Types not listed are at version 1.
 * Raise a version together with an upcaster that reads the older shape.
 */
const currentVersions = new Map<string, number>();

export function registerSchemaVersion(type: string, version: number): void {
  currentVersions.set(type, version);
}

export function schemaVersionOf(type: string): number {
  return currentVersions.get(type) ?? 1;
}
