import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { DependencyContainer } from 'tsyringe';
import { buildContainer, closeContainer } from '../../src/container';
import { loadConfig } from '../../src/config/config';
import { AppContext } from '../../src/app/context';
import { CommandContext } from '../../src/core/commandHandler';
import { userStream } from '../../src/domain/user/events';
import { sha256Hex } from '../../src/util/crypto';
import { registerUser } from '../../commands/user/userCommands';
import { usersCollection } from '../../projections/user/userProjection';
import { requestPasswordReset, ResetRequestSteps } from '../../commands/user/emailFlows';

const logger = pino({ level: 'silent' });

/**
 * POST /v1/auth/forgot-password answers first, then does this; what it does must not tell whether the
 * address has an account. No durations are measured: the steps are, through spies.
 */
describe('a password-reset request after its answer (the same steps for every address)', () => {
  let dir: string;
  let ctx: AppContext;
  let di: DependencyContainer;
  const cc = (): CommandContext => ({ actorId: null, authMethod: 'system', correlationId: randomUUID(), now: new Date() });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-reset-'));
    ({ ctx, di } = await buildContainer(loadConfig({ KB_DATA_DIR: dir, KB_FORGOT_PASSWORD_JITTER_MS: '1500' }), logger));
    await ctx.runner.start();
    const r = await registerUser(ctx, cc(), { email: 'known@example.com', password: 'correct horse battery', name: 'Known' });
    await ctx.runner.waitFor(r.position, 5000);
  }, 60_000);

  afterAll(async () => {
    await closeContainer(di);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The default steps, wrapped: each call is recorded; the pause waits for the test to release it. */
  function spied() {
    const calls: string[] = [];
    const pauses: number[] = [];
    let release: () => void = () => undefined;
    const paused = new Promise<void>((r) => (release = r));
    const steps: ResetRequestSteps = {
      pause: (ms) => {
        calls.push('pause');
        pauses.push(ms);
        return paused;
      },
      findAccount: async (email) => {
        calls.push('findAccount');
        return (await usersCollection(ctx.readStore).find({ email }, { limit: 1 }))[0];
      },
      compose: (email) => {
        calls.push(`compose ${email}`);
      },
      record: async () => {
        calls.push('record');
        return 1;
      },
    };
    return { steps, calls, pauses, release };
  }

  it('nothing is looked up, composed or recorded before a random pause of 0..KB_FORGOT_PASSWORD_JITTER_MS, for either kind of address', async () => {
    for (const email of ['known@example.com', 'nobody@example.com']) {
      const s = spied();
      const done = requestPasswordReset(ctx, cc(), email, s.steps);
      await new Promise((r) => setImmediate(r));
      // Before the pause ends: only the pause (before: the look-up and the append ran at once).
      expect([email, s.calls]).toEqual([email, ['pause']]);
      expect(s.pauses[0]).toBeGreaterThanOrEqual(0);
      expect(s.pauses[0]).toBeLessThanOrEqual(1500);
      s.release();
      await done;
    }
  });

  it('an unknown address runs the same steps as an account (look-up, the mail composed), all but the append', async () => {
    const known = spied();
    known.release();
    await requestPasswordReset(ctx, cc(), 'known@example.com', known.steps);
    const unknown = spied();
    unknown.release();
    await requestPasswordReset(ctx, cc(), 'nobody@example.com', unknown.steps);
    expect(known.calls).toEqual(['pause', 'findAccount', 'compose known@example.com', 'record']);
    // Before: a single read, nothing composed.
    expect(unknown.calls).toEqual(['pause', 'findAccount', 'compose nobody@example.com']);
  });

  it('the pause is random, not a constant both kinds share by chance', async () => {
    const seen = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const s = spied();
      s.release();
      await requestPasswordReset(ctx, cc(), 'nobody@example.com', s.steps);
      seen.add(s.pauses[0]);
    }
    expect(seen.size).toBeGreaterThan(1);
  });

  it('with the real steps: an account gets its PasswordResetRequested (the mail follows from the log), an unknown address writes nothing', async () => {
    const before = (await ctx.eventStore.readStream(userStream(sha256Hex('known@example.com')))).length;
    // The pause itself is real here: kept short.
    const quick = { ...ctx, config: { ...ctx.config, identity: { ...ctx.config.identity, forgotPasswordJitterMs: 5 } } } as AppContext;
    const r = await requestPasswordReset(quick, cc(), 'known@example.com');
    expect(r.position).toBeGreaterThan(0);
    const after = await ctx.eventStore.readStream(userStream(sha256Hex('known@example.com')));
    expect(after.slice(before).map((e) => e.type)).toEqual(['PasswordResetRequested']);
    expect((await requestPasswordReset(quick, cc(), 'nobody@example.com')).position).toBe(0);
    expect(await ctx.eventStore.readStream(userStream(sha256Hex('nobody@example.com')))).toEqual([]);
  });
});
