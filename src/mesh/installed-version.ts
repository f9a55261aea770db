/**
 * The Istio version an input runs (docs/semantics.md, Behaviour by Istio version): what istiod's image
 * says, else what the proxies' images say. Every command simulates that version unless told another, and
 * says where it took it from.
 */
import type { KubeObject } from '../model/object.ts';
import { podTemplateOf, specOf } from '../model/specs.ts';
import type { Snapshot } from '../load/snapshot.ts';
import { GroupKind } from '../model/vocabulary.ts';
import {
  compareVersions,
  formatIstioVersion,
  NewestModelledVersion,
  OldestModelledVersion,
  type IstioVersion,
} from './istio-version.ts';

/** The version to simulate and where it came from, in words (`istiod's image gcr.io/istio-release/pilot:1.28.0`). */
export interface VersionChoice {
  version: IstioVersion;
  source: string;
}

/** `…/pilot:1.28.0`, `…/proxyv2:1.26.2-distroless`: the component and its X.Y. */
const imagePattern = /(?:^|\/)(pilot|proxyv2):(\d+)\.(\d+)(?:\.\d+)?(?:[-_][A-Za-z0-9._-]*)?(?:@.*)?$/;

interface Seen {
  image: string;
  version: IstioVersion;
  istiod: boolean;
  /** The Deployment `istiod` itself (not a revision's `istiod-<rev>`). */
  defaultRevision: boolean;
}

function imagesOf(snapshot: Snapshot): Seen[] {
  const seen: Seen[] = [];
  const look = (owner: KubeObject, containers: readonly { image?: string }[]) => {
    for (const c of containers) {
      const match = imagePattern.exec(c.image ?? '');
      if (!match) continue;
      seen.push({
        image: c.image ?? '',
        version: { major: Number(match[2]), minor: Number(match[3]) },
        istiod: match[1] === 'pilot',
        defaultRevision: owner.metadata.name === 'istiod',
      });
    }
  };
  for (const d of snapshot.list(GroupKind.Deployment)) look(d, podTemplateOf(d).spec?.containers ?? []);
  for (const p of snapshot.list(GroupKind.Pod)) look(p, specOf(p, '/Pod').containers ?? []);
  return seen;
}

/**
 * The version the input's istiod runs (the default revision's when there are several), else its proxies'
 * (the oldest of them: the data plane lags the control plane in an upgrade); undefined when no image
 * names one. A version outside the modelled range is simulated as the nearest modelled one, and said so.
 */
export function installedIstioVersion(snapshot: Snapshot): VersionChoice | undefined {
  const seen = imagesOf(snapshot);
  const istiod = seen.filter((s) => s.istiod);
  const chosen =
    istiod.find((s) => s.defaultRevision) ??
    istiod[0] ??
    [...seen].sort((a, b) => a.version.major - b.version.major || a.version.minor - b.version.minor)[0];
  if (!chosen) return undefined;
  const whose = chosen.istiod ? "istiod's image" : "the proxies' image";
  const source = `${whose} ${chosen.image}`;
  const v = chosen.version;
  const version = clampToModelled(v);
  if (compareVersions(version, v) === 0) return { version, source };
  const word = compareVersions(v, version) < 0 ? 'older' : 'newer';
  return {
    version,
    source: `${source}: ${formatIstioVersion(v)} is ${word} than the ${word === 'older' ? 'oldest' : 'newest'} modelled, ${formatIstioVersion(version)}`,
  };
}

/**
 * The version observed metrics report: `istio_build`'s `tag` (istiod's, `component="pilot"`, else a
 * proxy's), as the nearest modelled version; undefined when they have none.
 */
export function observedIstioVersion(
  samples: readonly { name: string; labels: Readonly<Record<string, string>> }[],
): VersionChoice | undefined {
  const builds = samples.filter((s) => s.name === 'istio_build' && /^\d+\.\d+/.test(s.labels['tag'] ?? ''));
  const build = builds.find((s) => s.labels['component'] === 'pilot') ?? builds[0];
  const tag = build?.labels['tag'];
  if (!build || tag === undefined) return undefined;
  const [major = 0, minor = 0] = tag.split('.').map(Number);
  const version = clampToModelled({ major, minor });
  const nearest =
    compareVersions(version, { major, minor }) === 0 ? '' : `, simulated as ${formatIstioVersion(version)}`;
  return {
    version,
    source: `the metrics' istio_build (${build.labels['component'] ?? 'istio'} ${tag}${nearest})`,
  };
}

function clampToModelled(v: IstioVersion): IstioVersion {
  if (compareVersions(v, OldestModelledVersion) < 0) return OldestModelledVersion;
  return compareVersions(v, NewestModelledVersion) > 0 ? NewestModelledVersion : v;
}

/** The version to simulate: the one given (a flag), else the input's, else the newest modelled. */
export function chooseIstioVersion(
  snapshot: Snapshot,
  given?: IstioVersion,
  flag = '--istio-version',
): VersionChoice {
  if (given) return { version: given, source: flag };
  return (
    installedIstioVersion(snapshot) ?? {
      version: NewestModelledVersion,
      source: 'the newest modelled: no Istio image in the input',
    }
  );
}
