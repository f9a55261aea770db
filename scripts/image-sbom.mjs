// The image's bill of materials (CycloneDX 1.5 JSON, on stdout): npm's own SBOM of the production
// dependencies (`npm sbom --omit dev`, from the lock file) plus every Debian package of the image's root
// filesystem (its dpkg status). Usage: node scripts/image-sbom.mjs ROOTFS VERSION CREATED
//
// npm writes a random serial number and the current time; both are replaced (the serial by a hash of
// the contents, the time by the image's creation time) so that the same image gives the same bytes.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const [rootfs, version, created] = process.argv.slice(2);
if (!rootfs || !version || !created) {
  console.error('usage: node scripts/image-sbom.mjs ROOTFS VERSION CREATED');
  process.exit(2);
}

const npm = JSON.parse(
  execFileSync('npm', ['sbom', '--omit', 'dev', '--package-lock-only', '--sbom-format', 'cyclonedx'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  }),
);

/** Installed packages from a dpkg status file: name, version, architecture, source package. */
function debianPackages(status) {
  return status
    .split(/\n\n+/)
    .map((stanza) => {
      const field = (name) => stanza.match(new RegExp(`^${name}: (.*)$`, 'm'))?.[1];
      return {
        name: field('Package'),
        version: field('Version'),
        arch: field('Architecture'),
        installed: /^Status: .* installed$/m.test(stanza),
      };
    })
    .filter((p) => p.name && p.version && p.installed)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const debian = debianPackages(readFileSync(join(rootfs, 'var/lib/dpkg/status'), 'utf8')).map((p) => ({
  'bom-ref': `deb:${p.name}@${p.version}`,
  type: 'library',
  name: p.name,
  version: p.version,
  purl: `pkg:deb/debian/${p.name}@${encodeURIComponent(p.version)}?arch=${p.arch}&distro=debian-13`,
}));

const app = npm.metadata.component;
const body = {
  metadata: {
    timestamp: created,
    tools: npm.metadata.tools,
    component: {
      'bom-ref': `image:kfmesh@${version}`,
      type: 'container',
      name: 'kfmesh',
      version,
      licenses: [{ license: { id: 'Apache-2.0' } }],
    },
  },
  components: [{ ...app, name: 'kfmesh', type: 'application' }, ...npm.components, ...debian],
  dependencies: [
    { ref: `image:kfmesh@${version}`, dependsOn: [app['bom-ref'], ...debian.map((d) => d['bom-ref'])] },
    ...npm.dependencies,
  ],
};
const digest = createHash('sha256').update(JSON.stringify(body)).digest('hex');
const uuid = `${digest.slice(0, 8)}-${digest.slice(8, 12)}-5${digest.slice(13, 16)}-a${digest.slice(17, 20)}-${digest.slice(20, 32)}`;
const { $schema, bomFormat, specVersion } = npm;
const bom = { $schema, bomFormat, specVersion, serialNumber: `urn:uuid:${uuid}`, version: 1, ...body };
process.stdout.write(`${JSON.stringify(bom, null, 2)}\n`);
