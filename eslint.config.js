// ESLint flat config: typescript-eslint strict, plus a guard that keeps the pure core free of I/O.
import tseslint from 'typescript-eslint';

const pureCore = [
  'src/model/**',
  'src/kserve/**',
  'src/kubeflow/**',
  'src/ambient/**',
  'src/mesh/**',
  'src/analyze/**',
  'src/verify/**',
  'src/render/**',
  'src/example/**',
  'src/controller/plan.ts',
  'src/console/graph.ts',
  'src/console/api.ts',
  'src/console/layout.ts',
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**'] },
  ...tseslint.configs.strict,
  {
    // Leaving fields out of a copy with a rest pattern is how TypeScript spells omit.
    rules: { '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
  {
    files: pureCore,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'path', 'child_process', 'http'], message: 'the core is pure: no I/O' },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'the core is pure: no environment or process access' },
      ],
    },
  },
);
