import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { DTS_PATH, generateEventTypes } from '../../scripts/generateEventTypes';

const root = path.resolve(__dirname, '..', '..');

describe('types/kb-events.d.ts (the published event types of ad-hoc projections)', () => {
  it('is what scripts/generateEventTypes.ts makes from src/domain/*/events.ts (run npm run types:events)', () => {
    expect(fs.readFileSync(path.join(root, DTS_PATH), 'utf8')).toBe(generateEventTypes(root));
  });

  it('type-checks the examples against it, and rejects a projection reading a field no event has', () => {
    const check = (files: string[]) => {
      const program = ts.createProgram(files, { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, types: [] });
      return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    };
    const examples = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.ts'));
    expect(examples.length).toBeGreaterThanOrEqual(2);
    expect(check(examples.map((f) => path.join(root, 'examples', f)))).toEqual([]);

    const wrong = path.join(root, 'examples', '.wrong.tmp.ts');
    fs.writeFileSync(wrong, `import type { KbEvent } from '../types/kb-events';\nexport const f = (e: KbEvent) => (e.type === 'DocumentProcessingFailed' ? e.data.reason : null);\n`);
    try {
      expect(check([wrong]).join('\n')).toMatch(/Property 'reason' does not exist/);
    } finally {
      fs.rmSync(wrong);
    }
  });
});
