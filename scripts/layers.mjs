/**
 * The folder layers of src/: each folder, and the folders its files may import (besides their own).
 * Lint turns this table into import restrictions (eslint.config.js), and docs/architecture.md draws it.
 * The table lists folders from the bottom up; a folder may only name folders listed before it, so no
 * folder cycle can be allowed (test/unit/layers.test.ts checks both).
 */
/** The core a shell runs: the simulator and what is built on it. */
const simulation = [
  'model',
  'load',
  'mesh',
  'flows',
  'render',
  'ambient',
  'analyze',
  'explain',
  'verify',
  'plan',
];

export const layers = [
  { folder: 'model', may: [], about: 'object types, the vocabulary of labels and names, errors, findings' },
  { folder: 'kube', may: ['model'], about: 'the Kubernetes API client' },
  { folder: 'load', may: ['model', 'kube'], about: 'reading files and clusters into a snapshot' },
  {
    folder: 'mesh',
    may: ['model', 'load'],
    about: 'Istio compiled: services, routes, policies, and the data-plane simulator',
  },
  { folder: 'kserve', may: ['model', 'load'], about: "KServe's networking objects for an InferenceService" },
  { folder: 'kubeflow', may: ['model', 'load'], about: "Kubeflow's Profile, Notebook and waypoint objects" },
  {
    folder: 'flows',
    may: ['model', 'load', 'mesh', 'kserve', 'kubeflow'],
    about: 'the flows a Kubeflow platform lives on, from its objects',
  },
  {
    folder: 'render',
    may: ['model', 'load', 'kserve', 'kubeflow'],
    about: 'the desired state of a platform',
  },
  {
    folder: 'ambient',
    may: ['model', 'load', 'mesh', 'kserve', 'kubeflow', 'flows'],
    about: 'the migration from sidecar to ambient mode',
  },
  {
    folder: 'analyze',
    may: ['model', 'load', 'mesh', 'kserve', 'kubeflow', 'flows', 'ambient'],
    about: 'the analyzer and its rules',
  },
  {
    folder: 'verify',
    may: ['model', 'load', 'mesh', 'kserve', 'kubeflow', 'flows'],
    about: 'request cases, the equivalence proof and its probes of what controllers create next',
  },
  {
    folder: 'explain',
    may: ['model', 'load', 'mesh', 'verify'],
    about: 'observed Istio metrics traced back to the configuration',
  },
  {
    folder: 'plan',
    may: ['model', 'load', 'mesh', 'kserve', 'kubeflow', 'flows', 'ambient', 'verify'],
    about: 'the migration as steps, every state between them simulated',
  },
  {
    folder: 'example',
    may: ['model', 'load', 'kserve', 'kubeflow', 'render', 'ambient'],
    about: 'the built-in example platform',
  },
  { folder: 'controller', may: ['model', 'kube', 'load', 'render'], about: 'the controller and its manager' },
  {
    folder: 'console',
    may: [...simulation, 'kubeflow'],
    about: "the console's server and API",
  },
  // The page in the browser: only the console's wire types, its pure layout, colours and filters.
  {
    folder: 'ui',
    may: [
      'console/wire.ts',
      'console/layout.ts',
      'console/collapse.ts',
      'console/palette.ts',
      'console/differences.ts',
      'model/trace-result.ts',
      'model/checked.ts',
    ],
    about: 'the console page',
  },
  {
    folder: 'cli',
    may: [...simulation, 'kube', 'example', 'controller', 'console'],
    about: 'the kfmesh command: flags, files, exit codes',
  },
];

/** `import-x/no-restricted-paths` zones: for each folder, every other folder (or file) it may not import. */
export function restrictedZones(table) {
  const folders = table.map((l) => l.folder);
  return table.flatMap(({ folder, may }) => {
    const files = may.filter((m) => m.includes('/'));
    return folders
      .filter((other) => other !== folder && !may.includes(other))
      .map((other) => {
        const except = files
          .filter((f) => f.startsWith(`${other}/`))
          .map((f) => `./${f.slice(other.length + 1)}`);
        return {
          target: `./src/${folder}`,
          from: `./src/${other}`,
          ...(except.length > 0 ? { except } : {}),
          message: `src/${folder} may import only ${may.join(', ') || 'nothing outside itself'} (scripts/layers.mjs)`,
        };
      });
  });
}
