/**
 * What metrics cost: durable appends with and without the metrics sink (16 concurrent writers,
 * group commit), the group-commit sizes seen, and the time to render the exposition.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteEventStore } from '../src/adapters/sqlite/sqliteEventStore';
import { prometheusMetrics } from '../src/adapters/metrics/prometheusMetrics';
import { Metrics, noMetrics } from '../src/ports/metrics';
import { NewEvent } from '../src/domain/event';

function event(i: number): NewEvent {
  return { id: randomUUID(), type: 'BenchEvent', data: { i }, metadata: { actorId: 'bench', authMethod: 'system', correlationId: randomUUID(), occurredAt: new Date().toISOString(), schemaVersion: 1, workspaceId: '' } };
}

async function appendRate(metrics: Metrics, n: number, concurrency: number): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-bench-metrics-'));
  const store = new SqliteEventStore(path.join(dir, 'events.db'), { synchronous: 'full', metrics });
  let next = 0;
  const t = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      while (next < n) {
        next++;
        await store.append(`bench-c${c}`, [event(next)], 'any');
      }
    }),
  );
  const rate = n / (Number(process.hrtime.bigint() - t) / 1e9);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return rate;
}

export async function benchMetrics(): Promise<void> {
  const n = 10_000;
  const prom = prometheusMetrics();
  // Alternate to spread disk noise over both.
  const without: number[] = [];
  const withMetrics: number[] = [];
  for (let round = 0; round < 3; round++) {
    without.push(await appendRate(noMetrics, n, 16));
    withMetrics.push(await appendRate(prom, n, 16));
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(`  appends, 16 concurrent writers, fsync per commit, median of 3: without metrics ${Math.round(median(without))} events/s, with metrics ${Math.round(median(withMetrics))} events/s`);
  for (let i = 0; i < 2000; i++) prom.httpRequest({ method: 'GET', route: `/v1/route${i % 60}/:id`, status: 200, seconds: 0.001 * (i % 50) });
  const body = (await prom.exposition()).body;
  const batches = /kb_event_store_group_commit_appends_sum (\S+)\n[^]*?kb_event_store_group_commit_appends_count (\S+)/.exec(body);
  if (batches) console.log(`  group commit: ${(Number(batches[1]) / Number(batches[2])).toFixed(1)} appends per commit on average`);
  const t = process.hrtime.bigint();
  const runs = 50;
  for (let i = 0; i < runs; i++) await prom.exposition();
  console.log(`  /metrics exposition with 60 routes: ${(Number(process.hrtime.bigint() - t) / 1e6 / runs).toFixed(2)} ms per render, ${Math.round(body.length / 1024)} KiB`);
}
