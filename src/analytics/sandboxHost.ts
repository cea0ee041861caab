/*
 * The child process an ad-hoc projection runs in (npm run kb -- project). It is started
 * by projectRunner.ts with Node's permission model: it may read only this file and the
 * analyst's module (and its folder); no writes, no child processes, no workers, and an
 * empty environment. It imports nothing of the service: the events arrive over the IPC
 * channel in batches, already decrypted (erased text stays empty) and redacted.
 *
 * Protocol (parent → child): { kind: 'load', module } · { kind: 'batch', events } · { kind: 'end' }
 *          (child → parent): { kind: 'ready' } · { kind: 'ack', count } · { kind: 'result', json } · { kind: 'error', message }
 */

import os from 'node:os';
import { pathToFileURL } from 'node:url';

/*
 * The permission model has no say over signals: a module could stop or kill any process of
 * the same user, and SIGUSR1 (process.kill or process._debugProcess) opens a Node process's
 * inspector on 127.0.0.1:9229, which the module could then drive over the network: the
 * service's own process, its keys and data dir included. Signals (and re-nicing other
 * processes) are taken away before the module loads; the bindings behind them are out of
 * reach (process.binding is refused under the model).
 */
const refuse = (name: string) => () => {
  throw Object.assign(new Error(`Access to this API has been restricted: ${name} (sandbox)`), { code: 'ERR_ACCESS_DENIED' });
};
for (const name of ['kill', '_kill', '_debugProcess', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups']) {
  Object.defineProperty(process, name, { value: refuse(`process.${name}`), writable: false, configurable: false, enumerable: false });
}
Object.defineProperty(os, 'setPriority', { value: refuse('os.setPriority'), writable: false, configurable: false });

interface AnalystModule {
  initialState: unknown;
  evolve: (state: unknown, event: unknown) => unknown;
  result: (state: unknown) => unknown;
}

type ParentMessage = { kind: 'load'; module: string } | { kind: 'batch'; events: { position: number }[] } | { kind: 'end' };

// Kept as a real dynamic import (TypeScript would turn import() into require()), so ES modules load too.
const importModule = new Function('url', 'return import(url)') as (url: string) => Promise<Record<string, unknown>>;

let projection: AnalystModule | null = null;
let state: unknown;

function send(message: unknown): Promise<void> {
  return new Promise((resolve, reject) => process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())));
}

function fail(message: string): void {
  void send({ kind: 'error', message }).finally(() => process.exit(1));
}

/** Maps, Sets and bigints become JSON (objects, arrays and strings). */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Map) return Object.fromEntries(value);
  if (value instanceof Set) return [...value];
  if (typeof value === 'bigint') return value.toString();
  return value;
}

function pick(mod: Record<string, unknown>): AnalystModule {
  const candidates = [mod, mod.default as Record<string, unknown> | undefined].filter((m): m is Record<string, unknown> => !!m && typeof m === 'object');
  for (const m of candidates) {
    if (typeof m.evolve === 'function' && typeof m.result === 'function' && m.initialState !== undefined) return m as unknown as AnalystModule;
  }
  throw new Error('the module must export initialState (a value or a function returning one), evolve(state, event) and result(state)');
}

async function onMessage(message: ParentMessage): Promise<void> {
  switch (message.kind) {
    case 'load': {
      projection = pick(await importModule(pathToFileURL(message.module).href));
      state = typeof projection.initialState === 'function' ? (projection.initialState as () => unknown)() : structuredClone(projection.initialState);
      await send({ kind: 'ready' });
      return;
    }
    case 'batch': {
      const p = projection!;
      for (const event of message.events) {
        try {
          state = p.evolve(state, event);
        } catch (err) {
          throw new Error(`evolve failed at position ${event.position}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        }
      }
      await send({ kind: 'ack', count: message.events.length });
      return;
    }
    case 'end': {
      const value = projection!.result(state);
      await send({ kind: 'result', json: JSON.stringify(value === undefined ? null : value, replacer) });
      process.exit(0);
    }
  }
}

// Messages are handled one at a time, in order.
let queue = Promise.resolve();
process.on('message', (m: ParentMessage) => {
  queue = queue.then(() => onMessage(m)).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
});
process.on('disconnect', () => process.exit(0));
