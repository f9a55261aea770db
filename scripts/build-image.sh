#!/usr/bin/env bash
# Builds the controller's image with no container engine and no registry: a root filesystem assembled
# from Debian 13's packages (mmdebstrap, Node.js 20 from Debian) plus the built application and its
# production dependencies, packed as an OCI image layout (umoci) that podman, skopeo, crane or a
# registry take as it is. The Containerfile builds an equivalent image (on the official node:20 base)
# where Docker or Podman can pull.
#
#   bash scripts/build-image.sh            # → build/image/oci (tag = package version), sbom, sizes
#   skopeo copy oci:build/image/oci:0.1.0 docker://REGISTRY/kfmesh:0.1.0
#
# Layers: the Debian base (cached under ${KFMESH_CACHE:-~/.cache/kfmesh}/image, rebuilt when the package
# list below changes) and the application. Timestamps come from the last commit (SOURCE_DATE_EPOCH), so a
# rebuild of the same commit gives the same files. Needs root (umoci unpacks with ownership kept).
set -euo pipefail
cd "$(dirname "$0")/.."

suite=trixie
mirror="${KFMESH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# nodejs: the runtime (20.19 in Debian 13); ca-certificates: for any TLS peer without a CA of its own.
packages=base-files,base-passwd,nodejs,ca-certificates
uid=65532
out="${KFMESH_IMAGE_DIR:-build/image}"
cache="${KFMESH_CACHE:-$HOME/.cache/kfmesh}/image"
version="$(node -p "require('./package.json').version")"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
source_url="${KFMESH_SOURCE_URL:-https://github.com/kfmesh/kfmesh}"
log() { echo "[image] $*" >&2; }

# A digest of the built files the image carries; `--dist-digest` prints the tree's (the image test
# compares it with the one recorded at build time).
dist_digest() { (cd dist && find src ui -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-64; }
if [ "${1:-}" = --dist-digest ]; then
  dist_digest
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "build-image.sh: run as root (umoci keeps the files' owners when it unpacks and repacks)" >&2
  exit 2
fi

install_tools() {
  local need=()
  command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
  command -v umoci >/dev/null || need+=(umoci)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

# The Debian part: only the listed packages and what they depend on, without documentation (but each
# package's copyright file, its licence terms), manuals,
# locales, character-set converters (Node.js does not use iconv), corepack or TypeScript typings.
# chrootless: the custom variant has no shell or dpkg inside to run maintainer scripts with.
base_rootfs() {
  local key tar
  key="$(printf '%s %s %s %s' "$suite" "$packages" "$uid" "$(sed -n '/^trim_base()/,/^}/p' "$0")" | sha256sum | cut -c1-16)"
  tar="$cache/base-$suite-$key.tar"
  if [ ! -s "$tar" ]; then
    mkdir -p "$cache"
    log "assembling the Debian $suite base ($packages)"
    mmdebstrap --quiet --mode=chrootless --variant=custom --include="$packages" \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --customize-hook="bash $(realpath "$0") --trim-base \"\$1\"" \
      "$suite" "${tar%.tar}.part.tar" "$mirror"
    mv "${tar%.tar}.part.tar" "$tar"
  fi
  echo "$tar"
}

# Runs inside mmdebstrap's customize hook, on the new root ($1).
trim_base() {
  local root="$1"
  [ ! -d "$root/usr/share/doc" ] || find "$root/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$root"/usr/share/man "$root"/usr/share/locale "$root"/usr/share/info \
    "$root"/usr/lib/x86_64-linux-gnu/gconv "$root"/usr/lib/aarch64-linux-gnu/gconv \
    "$root"/usr/share/nodejs/corepack "$root"/usr/share/nodejs/@types "$root"/usr/bin/corepack \
    "$root"/var/cache/apt "$root"/var/lib/apt/lists "$root"/var/cache/debconf/*-old "$root"/var/log/*
  # update-ca-certificates needs a shell; the bundle it would write is every Mozilla certificate in turn.
  mkdir -p "$root/etc/ssl/certs"
  find "$root/usr/share/ca-certificates/mozilla" -name '*.crt' | LC_ALL=C sort | xargs cat \
    >"$root/etc/ssl/certs/ca-certificates.crt"
  # The image's user: no shell, no home, the same number Kubernetes' runAsNonRoot checks.
  echo "kfmesh:x:$uid:$uid:kfmesh:/nonexistent:/usr/sbin/nologin" >>"$root/etc/passwd"
  echo "kfmesh:x:$uid:" >>"$root/etc/group"
  mkdir -p "$root/tmp" && chmod 1777 "$root/tmp"
}

# The application: dist/ as `npm run build` wrote it, with the production dependencies of the lock file.
stage_app() {
  local dir="$1"
  [ -f dist/src/cli/main.js ] || { log "building"; npm run build >/dev/null; }
  mkdir -p "$dir/opt/kfmesh/dist"
  cp package.json package-lock.json LICENSE README.md "$dir/opt/kfmesh/"
  cp -r dist/src dist/ui "$dir/opt/kfmesh/dist/"
  log "installing the production dependencies"
  (cd "$dir/opt/kfmesh" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  # Typings, source maps and documents are read by no one at run time, nor native builds for other systems.
  find "$dir/opt/kfmesh/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
    -o -name '*.map' -o -iname '*.md' \) -delete
  find "$dir/opt/kfmesh/node_modules" -path '*/prebuilds/*' -maxdepth 4 -type d -prune \
    ! -name "linux-$(node -p process.arch)" -exec rm -rf {} +
  find "$dir/opt/kfmesh/node_modules" -mindepth 2 -maxdepth 3 -type d \( -name test -o -name tests \
    -o -name __tests__ \) ! -path '*/dist/*' -prune -exec rm -rf {} +
  rm -rf "$dir/opt/kfmesh/node_modules/.package-lock.json"
  # No kfmesh on PATH: its `#!/usr/bin/env node` line needs an env the image does not have; the
  # entrypoint names node and the script.
  find "$dir/opt" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
}

if [ "${1:-}" = --trim-base ]; then
  trim_base "$2"
  exit 0
fi

install_tools
base="$(base_rootfs)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
layout="$out/oci"
rm -rf "$layout"
mkdir -p "$out"
umoci init --layout "$layout"
umoci new --image "$layout:$version"
umoci unpack --image "$layout:$version" "$work/bundle" >/dev/null

log "layer 1: the Debian base"
tar -xf "$base" -C "$work/bundle/rootfs"
umoci repack --image "$layout:$version" --history.created "$created" \
  --history.created_by "mmdebstrap --variant=custom --include=$packages $suite" "$work/bundle"

log "layer 2: kfmesh $version"
stage_app "$work/bundle/rootfs"
umoci repack --image "$layout:$version" --history.created "$created" \
  --history.created_by "kfmesh $version: dist/ and its production dependencies" "$work/bundle"

umoci config --image "$layout:$version" --created "$created" --history.created "$created" \
  --history.created_by "kfmesh $version: configuration" \
  --config.user "$uid:$uid" --config.workingdir / \
  --config.entrypoint /usr/bin/node --config.entrypoint /opt/kfmesh/dist/src/cli/main.js \
  --config.cmd --help --config.env NODE_ENV=production \
  --config.label "org.opencontainers.image.title=kfmesh" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.licenses=Apache-2.0" \
  --config.label "org.opencontainers.image.source=$source_url" \
  --config.label "org.opencontainers.image.created=$created" \
  --config.label "org.opencontainers.image.base.name=debian:$suite" \
  --manifest.annotation "org.opencontainers.image.version=$version" \
  --manifest.annotation "org.opencontainers.image.licenses=Apache-2.0" \
  --manifest.annotation "org.opencontainers.image.source=$source_url"
umoci gc --layout "$layout"

log "bill of materials"
node scripts/image-sbom.mjs "$work/bundle/rootfs" "$version" "$created" >"$out/sbom.cdx.json"

unpacked="$(du -sb "$work/bundle/rootfs" | cut -f1)"
packed="$(find "$layout/blobs" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')"
printf '{"image":"%s:%s","unpackedBytes":%s,"packedBytes":%s}\n' "$layout" "$version" "$unpacked" "$packed" \
  >"$out/size.json"
# What the image holds of dist/, for the image test to tell an image older than the build.
dist_digest >"$out/dist.sha256"
log "$layout:$version — $((unpacked / 1048576)) MiB unpacked, $((packed / 1048576)) MiB packed (gzip layers)"
