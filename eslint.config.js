// ESLint flat config: typescript-eslint strict, plus a guard that keeps the pure core free of I/O.
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import { layers, restrictedZones } from './scripts/layers.mjs';
import kfmesh from './scripts/eslint-typed-fields.mjs';

const pureCore = [
  'src/model/**',
  // load/ reads files and clusters in files.ts, cluster.ts, prometheus.ts and schema.ts (its schemas, once).
  'src/load/snapshot.ts',
  'src/load/parse.ts',
  'src/load/documents.ts',
  'src/load/mesh-config.ts',
  'src/load/exposition.ts',
  'src/kserve/**',
  'src/kubeflow/**',
  'src/ambient/**',
  'src/mesh/**',
  'src/analyze/**',
  'src/explain/**',
  'src/verify/**',
  'src/render/**',
  'src/example/**',
  'src/plan/**',
  'src/controller/desired.ts',
  'src/console/graph.ts',
  'src/console/api.ts',
  'src/console/layout.ts',
  'src/console/collapse.ts',
  'src/console/observed.ts',
];

// One YAML façade (src/load/yaml.ts): no other module imports a YAML library.
const yamlPaths = ['yaml', 'js-yaml'].map((name) => ({
  name,
  message: 'read and write YAML through src/load/yaml.ts, the one module that imports a YAML library',
}));

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/model/generated/**'] },
  ...tseslint.configs.strict,
  {
    // The folder layers (scripts/layers.mjs, docs/architecture.md): a folder imports only the folders
    // below it, and no file takes part in an import cycle.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver()],
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: restrictedZones(layers) }],
    },
  },
  {
    // Label, annotation and kind keys are spelled once, in src/model/vocabulary.ts.
    files: ['src/**/*.ts'],
    // istio-annotations.ts is Istio's annotation catalogue: a table of keys by nature.
    ignores: ['src/model/vocabulary.ts', 'src/model/specs.ts', 'src/model/istio-annotations.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          // Kind keys handed to the typed accessors are checked by the compiler against model/specs.ts.
          selector: String.raw`Literal[value=/^([a-z0-9-]+\.)+[a-z]+\/(?!v[0-9]+((alpha|beta)[0-9]+)?$)[A-Za-z][\w.-]*$/]:not(CallExpression[callee.name=/^(specOf|specIfKind|statusOf|isKind)$/] > Literal)`,
          message: 'a label, annotation or kind key: name it from src/model/vocabulary.ts',
        },
        {
          selector: "Literal[value='istio-injection']",
          message: 'a label key: name it from src/model/vocabulary.ts',
        },
      ],
    },
  },
  {
    // A Kubernetes object's spec, status and data are read through model/specs.ts only (type-aware).
    files: ['src/**/*.ts'],
    ignores: ['src/model/**', 'src/ui/**'],
    languageOptions: {
      parserOptions: {
        // The lint tests feed rules code as a file that is not on disk (src/mesh/probe.ts).
        projectService: { allowDefaultProject: ['src/*/probe.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { kfmesh },
    rules: { 'kfmesh/typed-fields': 'error' },
  },
  {
    // Leaving fields out of a copy with a rest pattern is how TypeScript spells omit.
    rules: { '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/load/yaml.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: yamlPaths }] },
  },
  {
    files: pureCore,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: yamlPaths,
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
