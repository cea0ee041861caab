import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The boundary check (`npm run boundaries`) must fail the build on a forbidden import.
 * dependency-cruiser is ESM-only, so it runs as its CLI, against the repository's own
 * `.dependency-cruiser.cjs`, on a small fixture tree laid out like the project.
 */
const REPO = join(__dirname, '..', '..');
const DEPCRUISE = join(REPO, 'node_modules', '.bin', 'depcruise');

interface Violation {
  rule: string;
  from: string;
  to: string;
}

/** Runs exactly what `npm run boundaries` runs, and reads its `error rule: from → to` lines. */
function cruise(cwd: string): { status: number | null; violations: Violation[]; output: string } {
  const run = spawnSync(
    DEPCRUISE,
    ['src', 'commands', 'queries', 'projections', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'],
    { cwd, encoding: 'utf8' },
  );
  if (run.error) throw run.error;
  const output = run.stdout + run.stderr;
  const violations = [...output.matchAll(/^\s*error (\S+): (\S+) → (\S+)$/gm)].map(([, rule, from, to]) => ({ rule, from, to }));
  return { status: run.status, violations, output };
}

describe('import boundaries (dependency-cruiser)', () => {
  let dir: string;
  const write = (path: string, text: string): void => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kb-boundaries-'));
    copyFileSync(join(REPO, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
    for (const top of ['src', 'commands', 'queries', 'projections']) mkdirSync(join(dir, top));
    write('tsconfig.json', JSON.stringify({ compilerOptions: { module: 'commonjs', strict: true } }));
    write('src/domain/event.ts', "import { createHash } from 'node:crypto';\nexport const id = (s: string): string => createHash('sha256').update(s).digest('hex');\n");
    write('src/ports/eventStore.ts', "import { id } from '../domain/event';\nexport interface EventStore { id: typeof id }\n");
    write('src/adapters/sqlite/sqliteEventStore.ts', "import type { EventStore } from '../../ports/eventStore';\nexport const store = {} as EventStore;\n");
    write('src/container.ts', "import { store } from './adapters/sqlite/sqliteEventStore';\nexport const root = store;\n");
    write('projections/document/documentProjection.ts', "export interface DocumentView { id: string }\n");
    write('queries/document/documentQueries.ts', "import type { DocumentView } from '../../projections/document/documentProjection';\nexport const one = (d: DocumentView): string => d.id;\n");
    write('src/http/routes/documentsRoute.ts', "import { one } from '../../../queries/document/documentQueries';\nexport const route = one;\n");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('passes a tree whose imports flow one way (node built-ins allowed)', () => {
    const result = cruise(dir);
    expect(result.output).toContain('no dependency violations found');
    expect(result.violations).toEqual([]);
    expect(result.status).toBe(0);
  });

  it('fails when a query imports an adapter', () => {
    write('queries/search/searchService.ts', "import { store } from '../../src/adapters/sqlite/sqliteEventStore';\nexport const s = store;\n");
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.violations).toEqual([
      { rule: 'adapters-only-in-the-composition-root', from: 'queries/search/searchService.ts', to: 'src/adapters/sqlite/sqliteEventStore.ts' },
    ]);
  });

  it('fails when a route imports a projection', () => {
    write('src/http/routes/tagRoutes.ts', "import type { DocumentView } from '../../../projections/document/documentProjection';\nexport type V = DocumentView;\n");
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.violations.map((v) => [v.rule, v.from])).toEqual([
      ['routes-call-use-cases-not-projections', 'src/http/routes/tagRoutes.ts'],
    ]);
  });

  it('fails when code below http imports http', () => {
    write('src/http/auth.ts', 'export const API_KEY_PREFIX = "kb_";\n');
    write('commands/user/userCommands.ts', "import { API_KEY_PREFIX } from '../../src/http/auth';\nexport const p = API_KEY_PREFIX;\n");
    const result = cruise(dir);
    expect(result.status).not.toBe(0);
    expect(result.violations.map((v) => v.rule)).toEqual(['nothing-below-http-imports-http']);
  });
});
