import fc from 'fast-check';
import { analyticsProjection } from '../../projections/analytics/analyticsProjection';
import { analyticsAsOf, foldWholeLogUpTo, foldWorkspaceUpTo, Interval } from '../../queries/analytics/workspaceAnalytics';
import { analyticsContext, appendHistory, HOURS, START, stepArb, tempStores, WORKSPACES } from '../support/analyticsHistory';

/**
 * The asOf answer folds only the workspace's own events (the analytics read model is its
 * index, the log past its checkpoint is read as before); the whole-log fold it replaced is
 * the oracle: on random histories of several workspaces, at random times, with the read
 * model caught up, behind, or empty, both give the same answer.
 */
describe('analytics asOf: the workspace-scoped fold answers as the whole-log fold', () => {
  it('on random histories (uploads, runs, deletions, erasures, searches, link uses, members), at random times', async () => {
    let nonEmpty = 0;
    let behind = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 10, maxLength: 150, size: 'large' }),
        fc.array(fc.integer({ min: -5, max: 105 }), { minLength: 1, maxLength: 3 }),
        // How much of the log the live read model has applied (it follows a moment behind; 0: none, or being rebuilt).
        fc.oneof(fc.constant(100), fc.constant(0), fc.integer({ min: 1, max: 99 }), fc.integer({ min: 1, max: 99 })),
        fc.constantFrom<Interval>('hour', 'day', 'week'),
        fc.boolean(),
        async (steps, times, appliedPercent, interval, laterTo) => {
          const s = tempStores();
          try {
            const built = await appendHistory(s.events, s.keys, steps);
            const head = await s.events.headPosition();
            const projection = analyticsProjection(s.live);
            await projection.prepare!();
            const applied = Math.round((head * appliedPercent) / 100);
            if (applied > 0 && applied < head) behind += 1;
            await projection.apply((await s.events.readAll(0, head + 1)).filter((e) => e.position <= applied));
            const ctx = analyticsContext(s.events, s.live);
            // Random times (before the first event to after the last), and the middle and the end of the history.
            for (const percent of [...times, 50, 100]) {
              const asOf = new Date(Math.round(built.first + ((built.last - built.first) * percent) / 100));
              const to = laterTo ? new Date(built.last + 2 * HOURS) : asOf;
              const from = new Date(START - 48 * HOURS);
              for (const workspaceId of WORKSPACES) {
                const r = { workspaceId, from, to, interval, asOf };
                const scoped = await analyticsAsOf(ctx, r, asOf, foldWorkspaceUpTo);
                const whole = await analyticsAsOf(ctx, r, asOf, foldWholeLogUpTo);
                expect(scoped).toEqual(whole);
                if (whole.documents.added + whole.documents.deleted + whole.searches.searches + whole.processing.runs > 0) nonEmpty += 1;
              }
            }
          } finally {
            await s.close();
          }
        },
      ),
      { numRuns: 60 },
    );
    // The property compared answers with something in them, with the read model part of the way too.
    expect(nonEmpty).toBeGreaterThan(200);
    expect(behind).toBeGreaterThan(15);
  }, 300_000);
});
