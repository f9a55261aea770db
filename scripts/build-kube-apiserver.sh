#!/usr/bin/env bash
# Builds kube-apiserver 1.20 and installs etcd from Debian's packages, for the controller's
# integration tests. The binary is cached under ${KFMESH_CACHE:-~/.cache/kfmesh} and reused;
# a second run with the binary present only checks that etcd is installed.
#
# Why each step: Debian ships the Kubernetes 1.20 source with vendor/, which builds only in GOPATH
# mode on Debian's Go; its vendored reflect2 crashes under Go 1.19 (map iteration), and the OpenAPI
# validator's zero-value check turns true under Go 1.18+, rejecting "", 0 and false in custom
# resources. Both are replaced by what the code did on the Go it was written for.
set -euo pipefail

cache="${KFMESH_CACHE:-$HOME/.cache/kfmesh}"
bin="$cache/bin/kube-apiserver"
log() { echo "[kube-apiserver] $*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install_packages() {
  local need=()
  command -v etcd >/dev/null || need+=(etcd-server)
  if [ ! -x "$bin" ]; then
    command -v go >/dev/null || need+=(golang-go)
    [ -d /usr/share/gocode/src/github.com/modern-go/reflect2 ] || need+=(golang-github-modern-go-reflect2-dev)
    command -v dpkg-source >/dev/null || need+=(dpkg-dev)
  fi
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

add_source_entry() {
  local src=/etc/apt/sources.list.d/kfmesh-deb-src.sources
  [ -f "$src" ] && return
  log "adding a deb-src entry built from debian.sources"
  sed -e 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | as_root tee "$src" >/dev/null
  as_root apt-get update -qq
}

fetch_source() {
  local dir="$cache/src"
  mkdir -p "$dir"
  if ! ls -d "$dir"/kubernetes-*/ >/dev/null 2>&1; then
    log "fetching the Debian source of kubernetes"
    (cd "$dir" && apt-get source -qq kubernetes >/dev/null)
  fi
  ls -d "$dir"/kubernetes-*/ | head -1
}

patch_source() {
  local k8s="$1"
  log "replacing vendored reflect2 with Debian's copy"
  rm -rf "$k8s/vendor/github.com/modern-go/reflect2"
  cp -r /usr/share/gocode/src/github.com/modern-go/reflect2 "$k8s/vendor/github.com/modern-go/reflect2"
  local f
  for f in vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go vendor/github.com/go-openapi/validate/type.go; do
    [ -f "$k8s/$f" ] || continue
    sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$k8s/$f"
  done
}

generate_openapi() {
  local gopath="$1" k8s="$gopath/src/k8s.io/kubernetes"
  [ -s "$k8s/pkg/generated/openapi/zz_generated.openapi.go" ] && return
  log "generating pkg/generated/openapi"
  (cd "$k8s" && go build -o "$gopath/bin/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen)
  local inputs
  # vendor/k8s.io/* are symlinks into staging/: name each one so that grep follows it.
  inputs=$(cd "$k8s" && grep -rl --include='*.go' '+k8s:openapi-gen=' pkg cmd plugin vendor/k8s.io/*/ \
    | sed 's#//*#/#g' \
    | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' \
    | xargs -n1 dirname | sort -u \
    | sed -e 's#^vendor/##' -e 's#^\(pkg\|cmd\|plugin\)/#k8s.io/kubernetes/\1/#' | paste -sd, -)
  # It lists the API rule violations of every type it reads (hundreds of lines): keep them out of CI's log.
  (cd "$k8s" && "$gopath/bin/openapi-gen" -i "$inputs" -p k8s.io/kubernetes/pkg/generated/openapi \
    -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -o "$gopath/src" \
    >"$cache/openapi-gen.log" 2>&1) || { tail -20 "$cache/openapi-gen.log" >&2; return 1; }
}

build() {
  local source gopath
  source=$(fetch_source)
  source="${source%/}"
  gopath="$cache/gopath"
  mkdir -p "$gopath/src/k8s.io" "$gopath/bin"
  ln -sfn "$source" "$gopath/src/k8s.io/kubernetes"
  patch_source "$source"
  export GOPATH="$gopath" GO111MODULE=off CGO_ENABLED=0 GOFLAGS=
  generate_openapi "$gopath"
  log "building kube-apiserver (several minutes the first time)"
  mkdir -p "$cache/bin"
  (cd "$gopath/src/k8s.io/kubernetes" && go build -o "$bin.tmp" ./cmd/kube-apiserver)
  mv "$bin.tmp" "$bin"
}

install_packages
if [ ! -x "$bin" ]; then
  add_source_entry
  build
fi
log "ready: $bin, $(command -v etcd)"
