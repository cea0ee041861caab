import { Config } from '../config/config';

/** Something a process starts and stops. */
export interface Component {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Everything a process could start; a role picks from these. */
export interface RoleParts {
  /** The projection runner: runs the projections (subscribe mode) or watches their checkpoints (poll mode). */
  runner: Component;
  /** Publishes the log to the event feed (KB_FEED=kafka). */
  feedPublisher?: Component;
  /** Enqueues one processing job per run (KB_FEED=kafka). */
  dispatcher?: Component;
  /** Background services: document processor, instruction-set cleanup, query-history sweeper, erasure. */
  services: Component[];
}

export interface RolePlan {
  /** The full HTTP API, or only /healthz (and /readyz for the projector). */
  http: 'api' | 'health';
  /** Started in this order, stopped in reverse. */
  components: Component[];
}

/**
 * What each KB_ROLE runs:
 * - all: HTTP API + projections (+ feed publisher and dispatcher with Kafka) + background services;
 * - api: HTTP API; the runner only watches the projector's checkpoints (read-your-writes, /readyz);
 * - projector: projections (+ feed publisher and dispatcher with Kafka); /healthz and /readyz;
 * - worker: background services (the processor consumes the job queue with Kafka); /healthz.
 */
export function planRole(role: Config['role'], parts: RoleParts): RolePlan {
  const pipeline = [parts.feedPublisher, parts.dispatcher].filter((c): c is Component => c !== undefined);
  switch (role) {
    case 'all':
      return { http: 'api', components: [parts.runner, ...pipeline, ...parts.services] };
    case 'api':
      return { http: 'api', components: [parts.runner] };
    case 'projector':
      return { http: 'health', components: [parts.runner, ...pipeline] };
    case 'worker':
      return { http: 'health', components: [...parts.services] };
    default: {
      const never: never = role;
      throw new Error(`unknown role ${String(never)}`);
    }
  }
}

/** Whether a process of this role runs the projections itself (else its runner polls their checkpoints). */
export function runsProjections(role: Config['role']): boolean {
  return role === 'all' || role === 'projector';
}
