/** Every id the service issues is a UUID (randomUUID); anything else names nothing. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (u: unknown): u is string => typeof u === 'string' && UUID_PATTERN.test(u);
