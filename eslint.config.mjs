import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', '.tmp/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // One router factory: every route is case-sensitive (/V1/... is a 404, not /v1/...).
    files: ['src/**/*.ts'],
    ignores: ['src/http/routes/module.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.name='Router']", message: 'Use router() from src/http/routes/module.ts (case-sensitive routing).' },
        { selector: "CallExpression[callee.property.name='Router']", message: 'Use router() from src/http/routes/module.ts (case-sensitive routing).' },
      ],
    },
  },
  {
    // Issue 11, finding 5: ids from outside must never key a plain object, where `constructor`,
    // `__proto__` or `toString` already "exist". State and read models keyed by ids use Map.
    files: ['src/domain/**/*.ts', 'projections/**/*.ts', 'queries/**/*.ts', 'commands/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "TSTypeReference[typeName.name='Record'][typeArguments.params.0.type='TSStringKeyword']:not([typeArguments.params.1.type='TSUnknownKeyword'])",
          message: 'A Record<string, ...> keyed by ids treats built-in names (constructor, __proto__) as entries: use a Map (a bag of fields is Record<string, unknown>).',
        },
        {
          selector: 'TSIndexSignature',
          message: 'An index signature keyed by ids treats built-in names (constructor, __proto__) as entries: use a Map.',
        },
        {
          selector: "BinaryExpression[operator='in']",
          message: '`key in object` also finds inherited properties (constructor, toString): use Map.has or Object.hasOwn.',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
