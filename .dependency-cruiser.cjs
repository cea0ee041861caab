/**
 * Import boundaries (docs/architecture.md): imports flow one way,
 *   http → commands | queries → core, ports → domain,
 * and adapters are known to the composition root only. `npm test` runs this check.
 */
const ROOT = '^src/(container|main|cli)\\.ts$|^src/app/|^src/roles/';
module.exports = {
  forbidden: [
    { name: 'domain-is-pure', severity: 'error', comment: 'The domain imports only the domain.', from: { path: '^src/domain/' }, to: { pathNot: '^src/domain/', dependencyTypesNot: ['core'] } },
    { name: 'ports-see-domain-only', severity: 'error', from: { path: '^src/ports/' }, to: { pathNot: '^src/(ports|domain)/', dependencyTypesNot: ['core'] } },
    { name: 'core-sees-ports-and-domain', severity: 'error', from: { path: '^src/core/' }, to: { pathNot: '^src/(core|ports|domain)/', dependencyTypesNot: ['core'] } },
    { name: 'adapters-only-in-the-composition-root', severity: 'error', comment: 'Everything but the composition root sees ports, never adapters.', from: { pathNot: `${ROOT}|^src/adapters/|^test/|^bench/` }, to: { path: '^src/adapters/' } },
    { name: 'adapters-do-not-reach-up', severity: 'error', from: { path: '^src/adapters/' }, to: { path: '^(src/(http|mcp|roles|app)|commands|queries|projections)/' } },
    { name: 'nothing-below-http-imports-http', severity: 'error', from: { path: '^(commands|queries|projections|src/(core|domain|ports|adapters|processing|audit|search|config|security))/' }, to: { path: '^src/(http|mcp)/' } },
    { name: 'projections-do-not-import-commands-or-queries', severity: 'error', from: { path: '^projections/' }, to: { path: '^(commands|queries)/' } },
    { name: 'queries-do-not-import-commands', severity: 'error', from: { path: '^queries/' }, to: { path: '^commands/' } },
    {
      name: 'routes-call-use-cases-not-projections',
      severity: 'error',
      comment: 'A route calls a use case or a query; projections are read through queries.',
      from: { path: '^src/(http|mcp)/' },
      to: { path: '^projections/' },
    },
    { name: 'routes-do-not-decide', severity: 'error', comment: 'A route calls a use case; it neither loads aggregates nor decides.', from: { path: '^src/(http/routes|mcp)/' }, to: { path: '^(src/core/commandHandler\\.ts|src/domain/.*/decider\\.ts)$' } },
    { name: 'only-the-root-imports-roles', severity: 'error', from: { pathNot: `${ROOT}|^test/|^bench/` }, to: { path: '^src/roles/' } },
    { name: 'no-circular', severity: 'error', from: { path: '^(src|commands|queries|projections)/' }, to: { circular: true } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
