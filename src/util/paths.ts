import path from 'node:path';

/** Repository root, whether running from sources (ts) or from dist/. */
export const repoRoot: string = (() => {
  const here = __dirname;
  const marker = `${path.sep}dist${path.sep}`;
  const i = here.lastIndexOf(marker);
  return i >= 0 ? here.slice(0, i) : path.resolve(here, '..', '..');
})();

/** Compiled JavaScript path of a module given relative to the repo root without extension. */
export function compiledPath(relativeModule: string): string {
  return path.join(repoRoot, 'dist', `${relativeModule}.js`);
}
