#!/usr/bin/env bash
# Builds the Kubernetes API servers and etcd the cluster tests run against, from Go modules through the
# Go module proxy (no binary downloads), and caches them by version under ${KFMESH_CACHE:-~/.cache/kfmesh}:
#
#   bin/kube-apiserver-<v>   for each version in KFMESH_KUBE_VERSIONS (default: the current and the oldest
#                            supported release, see below)
#   bin/etcd-<v>             etcd at the version k8s.io/apiserver of the current release requires
#
# A second run with the binaries present does nothing. Go's own module and build caches (GOMODCACHE,
# GOCACHE) keep what was downloaded and compiled, so a rebuild after a version change is quick.
#
# How: k8s.io/kubernetes is not meant to be required as a module: its go.mod requires every staging module
# (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and replaces it with ./staging/src/.... A small wrapper
# module requires k8s.io/kubernetes at the tag and replaces each of those staging modules with its published
# v0.Y.Z; the list is read from the tag's own go.mod, so it is never written by hand. etcd is built the
# same way from go.etcd.io/etcd/server/v3 (its main package is the module's root).
set -euo pipefail

# The current release: the one whose k8s.io/* modules istio.io/istio at the pseudo-version oracle/istio
# pins requires (k8s.io/apiserver v0.36.1), so one module cache serves both. The oldest: the oldest
# release still patched upstream when 1.36.1 was released (2026-05-12): 1.33 (end of life 2026-06-28).
current=v1.36.1
oldest=v1.33.13
versions="${KFMESH_KUBE_VERSIONS:-$current $oldest}"

cache="${KFMESH_CACHE:-$HOME/.cache/kfmesh}"
log() { echo "[kube-apiserver] $*" >&2; }
command -v go >/dev/null || {
  log "needs Go on PATH (1.26 or newer): the cluster tests build kube-apiserver and etcd with it"
  exit 1
}
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# A Go command with its list of modules downloaded left out of the log (hundreds of lines on a cold cache).
quiet_go() {
  local status=0
  go "$@" 2> >(grep -v -e '^go: downloading ' -e '^go: added ' >&2) || status=$?
  return $status
}

# Runs a wrapper module's build in a fresh folder: $1 folder, then the command.
in_module() {
  local dir="$1"
  shift
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && "$@")
}

# The `replace` lines the wrapper needs: every module the tag's go.mod replaces with a local staging
# folder, replaced instead with its published version (k8s.io/X v0.Y.Z for Kubernetes v1.Y.Z).
staging_replaces() {
  local modfile="$1" staging="$2"
  awk -v v="$staging" '
    /^replace \($/ { inside = 1; next }
    inside && /^\)$/ { inside = 0; next }
    { line = $0; sub(/^replace /, "", line) }
    (inside || /^replace /) && line ~ /=> \.\/staging\// { split(line, f, " "); print "replace " f[1] " => " f[1] " " v }
  ' "$modfile"
}

build_apiserver() {
  local version="$1" out="$cache/bin/kube-apiserver-$1"
  [ -x "$out" ] && return
  local minor="${version#v1.}"
  minor="${minor%%.*}"
  local staging="v0.${version#v1.}" dir="$cache/build/kube-apiserver-$version"
  log "building kube-apiserver $version from k8s.io/kubernetes (several minutes the first time)"
  in_module "$dir" go mod init kfmesh.test/kube-apiserver >/dev/null 2>&1
  (cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" >download.json)
  local modfile
  modfile=$(sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p' "$dir/download.json")
  staging_replaces "$modfile" "$staging" >>"$dir/go.mod"
  local count
  count=$(grep -c '^replace ' "$dir/go.mod")
  [ "$count" -gt 20 ] || {
    log "found only $count staging modules in $modfile"
    exit 1
  }
  # The version the server reports (GET /version), as Kubernetes' own build stamps it.
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  (
    cd "$dir"
    quiet_go get "k8s.io/kubernetes@$version" >/dev/null
    quiet_go build -trimpath -ldflags "$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  )
  mv "$out.tmp" "$out"
}

# etcd at the version the current release's k8s.io/apiserver requires.
etcd_version() {
  local dir="$cache/build/etcd-version" staging="v0.${current#v1.}"
  in_module "$dir" go mod init kfmesh.test/etcd-version >/dev/null 2>&1
  (cd "$dir" && go mod download -json "k8s.io/apiserver@$staging" >download.json)
  local modfile
  modfile=$(sed -n 's/^\s*"GoMod": "\(.*\)",$/\1/p' "$dir/download.json")
  awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$modfile"
}

build_etcd() {
  local version="$1" out="$cache/bin/etcd-$1"
  [ -x "$out" ] && return
  local dir="$cache/build/etcd-$version"
  log "building etcd $version from go.etcd.io/etcd/server/v3"
  in_module "$dir" go mod init kfmesh.test/etcd >/dev/null 2>&1
  (
    cd "$dir"
    quiet_go get "go.etcd.io/etcd/server/v3@$version" >/dev/null
    quiet_go build -trimpath -ldflags "-s -w" -o "$out.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$out.tmp" "$out"
}

mkdir -p "$cache/bin"
start=$(date +%s)
etcd=$(etcd_version)
[ -n "$etcd" ] || {
  log "could not read etcd's version from k8s.io/apiserver's go.mod"
  exit 1
}
build_etcd "$etcd"
for version in $versions; do build_apiserver "$version"; done
# The tests read which binaries to use from here.
{
  echo "current=$current"
  echo "oldest=$oldest"
  echo "etcd=$etcd"
} >"$cache/bin/kube-versions.env.tmp"
mv "$cache/bin/kube-versions.env.tmp" "$cache/bin/kube-versions.env"
rm -rf "$cache/build"
log "ready in $(($(date +%s) - start)) s: kube-apiserver $versions, etcd $etcd in $cache/bin"
