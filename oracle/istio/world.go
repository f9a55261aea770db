package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	k8sv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/config/schema/gvk"
)

// The proxies' Istio version: the pinned snapshot's own (its VERSION file says 1.31).
const proxyVersion = "1.31.0"

// kubeKinds are the Kubernetes kinds Istio's registries read, by apiVersion group; Istio's and the
// Gateway API's kinds are added from Istio's own schema collection.
var kubeKinds = map[string]bool{
	"Namespace": true, "Service": true, "Pod": true, "Endpoints": true, "Secret": true, "Node": true,
	"EndpointSlice": true, "Ingress": true, "IngressClass": true,
}

// world is one platform's configuration in Istio's own discovery server.
type world struct {
	server   *xds.FakeDiscoveryServer
	rejected []string
	proxies  map[string]*proxyConfig
	// ztunnel is the policies istiod sends ztunnel, read from the ambient index on first use.
	ztunnel *ztunnelPolicies
}

// proxyConfig is what Istio generates for one proxy.
type proxyConfig struct {
	in        ProxyIn
	proxy     *model.Proxy
	listeners []*listener.Listener
	routes    map[string]*route.RouteConfiguration
	clusters  map[string]*cluster.Cluster
	// endpoints counts the endpoints of each EDS cluster.
	endpoints map[string]int
}

// failer stands in for *testing.T where Istio's test fixtures need one: a fatal failure ends the
// process with the message (the caller reports it), cleanups run at exit.
type failer struct{ cleanups []func() }

func (f *failer) Fail()               { f.Fatal("failed") }
func (f *failer) FailNow()            { f.Fatal("failed") }
func (f *failer) Fatal(args ...any)   { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *failer) Log(args ...any)     {}
func (f *failer) Logf(string, ...any) {}
func (f *failer) Helper()             {}
func (f *failer) Skip(args ...any)    { f.Fatal(args...) }
func (f *failer) Cleanup(fn func())   { f.cleanups = append(f.cleanups, fn) }
func (f *failer) TempDir() string     { d, _ := os.MkdirTemp("", "oracle"); return d }
func (f *failer) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "oracle: Istio's fixture failed: "+format+"\n", args...)
	os.Exit(1)
}

func (f *failer) close() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// newWorld loads the platform into Istio's fake discovery server and generates every proxy's
// configuration.
func newWorld(t *failer, input Input) (*world, error) {
	defaults, err := loadCRDs(input.CRDs)
	if err != nil {
		return nil, fmt.Errorf("the CRDs: %w", err)
	}
	kube, configs, rejected, err := split(input.Objects, defaults)
	if err != nil {
		return nil, err
	}
	if os.Getenv("ORACLE_DUMP_OBJECTS") != "" {
		fmt.Fprintln(os.Stderr, kube)
	}
	meshConfig := mesh.DefaultMeshConfig()
	if strings.TrimSpace(input.Mesh) != "" {
		if meshConfig, err = mesh.ApplyMeshConfigDefaults(input.Mesh); err != nil {
			return nil, fmt.Errorf("the mesh configuration: %w", err)
		}
	}
	server := xds.NewFakeDiscoveryServer(t, xds.FakeOptions{
		Configs:                configs,
		KubernetesObjectString: kube,
		MeshConfig:             meshConfig,
	})
	settle(t, server)
	w := &world{server: server, rejected: rejected, proxies: map[string]*proxyConfig{}}
	for _, p := range input.Proxies {
		if _, dup := w.proxies[p.ID]; dup {
			return nil, fmt.Errorf("proxy %q given twice", p.ID)
		}
		w.proxies[p.ID] = w.generate(p)
	}
	return w, nil
}

// settle waits until the Gateway API controller has converted what it read, then has the push context
// computed again with everything in it and waits for that push: the fake server's own start waits only for
// the registries and the configuration store.
func settle(t *failer, server *xds.FakeDiscoveryServer) {
	if gwc := server.Env().GatewayAPIController; gwc != nil {
		deadline := time.Now().Add(30 * time.Second)
		for !gwc.HasSynced() {
			if time.Now().After(deadline) {
				t.Fatal("the Gateway API controller did not sync in 30 s")
			}
			time.Sleep(time.Millisecond)
		}
	}
	server.Discovery.ConfigUpdate(&model.PushRequest{Forced: true, Reason: model.NewReasonStats(model.GlobalUpdate)})
	server.EnsureSynced(t)
}

// split sorts the documents: Kubernetes objects Istio reads (and Istio's and the Gateway API's, which
// its Kubernetes controllers read too) into one YAML stream, Istio's and the Gateway API's into configs
// converted with the cluster's domain and validated as Istio's webhook validates them.
func split(objects string, defaults crdDefaults) (kube string, configs []config.Config, rejected []string, err error) {
	var docs []string
	for i, doc := range documents(objects) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			return "", nil, nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if s, ok := defaults.of(head.APIVersion, head.Kind); ok {
			if doc, err = editDoc(doc, func(obj map[string]any) { structuraldefaulting.Default(obj, s) }); err != nil {
				return "", nil, nil, fmt.Errorf("document %d: %w", i+1, err)
			}
		}
		group, version := "", head.APIVersion
		if g, v, ok := strings.Cut(head.APIVersion, "/"); ok {
			group, version = g, v
		}
		schema, istio := collections.PilotGatewayAPI().FindByGroupVersionAliasesKind(config.GroupVersionKind{
			Group: group, Version: version, Kind: head.Kind,
		})
		switch {
		case istio:
			obj := crd.IstioKind{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return "", nil, nil, fmt.Errorf("document %d (%s): %w", i+1, head.Kind, err)
			}
			cfg, err := crd.ConvertObject(schema, &obj, "cluster.local")
			if err == nil {
				_, err = schema.ValidateConfig(*cfg)
			}
			if err != nil {
				rejected = append(rejected, fmt.Sprintf("%s %s/%s: %v", head.Kind, head.Metadata.Namespace, head.Metadata.Name, err))
				continue
			}
			configs = append(configs, *cfg)
			// An API server serves every version of a kind; Istio's controllers watch the one they were
			// built for, which a fake client does not convert to: write the object at that version.
			canonical := schema.GroupVersionKind()
			if canonical.Version != version {
				if doc, err = editDoc(doc, func(obj map[string]any) { obj["apiVersion"] = canonical.GroupVersion() }); err != nil {
					return "", nil, nil, fmt.Errorf("document %d (%s): %w", i+1, head.Kind, err)
				}
			}
			docs = append(docs, doc)
		case kubeKinds[head.Kind] && (group == "" || group == "discovery.k8s.io" || group == "networking.k8s.io"):
			if edit := serverDefaults[head.Kind]; edit != nil {
				if doc, err = editDoc(doc, edit); err != nil {
					return "", nil, nil, fmt.Errorf("document %d (%s %s/%s): %w", i+1, head.Kind, head.Metadata.Namespace, head.Metadata.Name, err)
				}
			}
			docs = append(docs, doc)
		}
	}
	sort.Strings(rejected)
	services, err := deployedServices(configs, docs)
	if err != nil {
		return "", nil, nil, err
	}
	docs = append(docs, services...)
	docs = append(docs, endpointSlices(docs)...)
	return strings.Join(docs, "\n---\n"), configs, rejected, nil
}

// deployedServices are the Services Istio's gateway deployment controller creates for Gateways of its
// classes, when the platform does not list them: <gateway>-istio for class istio, and for class
// istio-waypoint the gateway's own name, each selecting the gateway's pods by
// gateway.networking.k8s.io/gateway-name; the gateway's pods serve the Gateway's configuration only as
// targets of that Service. A waypoint Gateway also gets the status addresses the controller writes once its
// pods are ready (the Service's hostname and cluster IP), without which istiod does not take it for a
// waypoint. Gateway documents are rewritten in place; the Services are returned.
func deployedServices(configs []config.Config, docs []string) ([]string, error) {
	have := map[string]bool{}
	gatewayDocs := map[string]int{}
	for i, doc := range docs {
		var head struct {
			Kind     string                           `json:"kind"`
			Metadata struct{ Name, Namespace string } `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &head) != nil {
			continue
		}
		switch head.Kind {
		case "Service":
			have[head.Metadata.Namespace+"/"+head.Metadata.Name] = true
		case "Gateway":
			gatewayDocs[head.Metadata.Namespace+"/"+head.Metadata.Name] = i
		}
	}
	var out []string
	waypoints := 0
	for _, c := range configs {
		if c.GroupVersionKind != gvk.KubernetesGateway {
			continue
		}
		spec, ok := c.Spec.(*k8sv1.GatewaySpec)
		if !ok {
			continue
		}
		class := string(spec.GatewayClassName)
		name := c.Name + "-" + class
		switch class {
		case "istio":
		case "istio-waypoint":
			name = c.Name
		default:
			continue
		}
		var clusterIP string
		if class == "istio-waypoint" {
			waypoints++
			clusterIP = fmt.Sprintf("10.252.%d.%d", waypoints/250, waypoints%250+1)
			if i, ok := gatewayDocs[c.Namespace+"/"+c.Name]; ok {
				edited, err := editDoc(docs[i], func(obj map[string]any) {
					status, _ := obj["status"].(map[string]any)
					if status == nil {
						status = map[string]any{}
						obj["status"] = status
					}
					if addresses, _ := status["addresses"].([]any); len(addresses) == 0 {
						status["addresses"] = []any{
							map[string]any{"type": "Hostname", "value": name + "." + c.Namespace + ".svc.cluster.local"},
							map[string]any{"type": "IPAddress", "value": clusterIP},
						}
					}
				})
				if err != nil {
					return nil, fmt.Errorf("Gateway %s/%s: %w", c.Namespace, c.Name, err)
				}
				docs[i] = edited
			}
		}
		if have[c.Namespace+"/"+name] {
			continue
		}
		ports := []map[string]any{}
		seen := map[int32]bool{}
		for _, l := range spec.Listeners {
			if seen[int32(l.Port)] {
				continue
			}
			seen[int32(l.Port)] = true
			ports = append(ports, map[string]any{
				"name": fmt.Sprintf("%s-%d", strings.ToLower(string(l.Protocol)), l.Port), "port": l.Port,
				"targetPort": l.Port, "protocol": "TCP",
			})
		}
		svcSpec := map[string]any{
			"selector": map[string]any{"gateway.networking.k8s.io/gateway-name": c.Name},
			"ports":    ports,
		}
		if clusterIP != "" {
			svcSpec["clusterIP"] = clusterIP
		}
		svc := map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": c.Namespace, "labels": map[string]any{
				"gateway.networking.k8s.io/gateway-name": c.Name,
			}},
			"status": map[string]any{},
			"spec":   svcSpec,
		}
		if text, err := yaml.Marshal(svc); err == nil {
			out = append(out, string(text))
		}
	}
	return out, nil
}

// serverDefaults are what the API server defaults in built-in kinds and a fake client does not: a Service
// port's protocol (TCP) and targetPort (the port); a Pod container port's protocol (TCP), which a Service's
// named targetPort is matched with.
var serverDefaults = map[string]func(obj map[string]any){
	"Service": func(obj map[string]any) {
		spec, _ := obj["spec"].(map[string]any)
		for _, port := range mapsIn(spec["ports"]) {
			setDefault(port, "protocol", "TCP")
			setDefault(port, "targetPort", port["port"])
		}
	},
	"Pod": func(obj map[string]any) {
		spec, _ := obj["spec"].(map[string]any)
		for _, key := range []string{"containers", "initContainers"} {
			for _, container := range mapsIn(spec[key]) {
				for _, port := range mapsIn(container["ports"]) {
					setDefault(port, "protocol", "TCP")
				}
			}
		}
	},
}

// mapsIn is the objects of a list (other items left out).
func mapsIn(list any) []map[string]any {
	items, _ := list.([]any)
	out := make([]map[string]any, 0, len(items))
	for _, item := range items {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func setDefault(obj map[string]any, key string, value any) {
	if _, set := obj[key]; !set {
		obj[key] = value
	}
}

// editDoc parses a document, changes it in place and writes it again.
func editDoc(doc string, edit func(obj map[string]any)) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "", err
	}
	edit(obj)
	out, err := yaml.Marshal(obj)
	return string(out), err
}

// documents splits a YAML stream at its `---` lines, leaving out empty documents.
func documents(s string) []string {
	var out []string
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		if strings.TrimSpace(doc) != "" {
			out = append(out, doc)
		}
		cur = nil
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimLeft(line, "-")) == "" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// generate builds one proxy's listeners, routes and clusters as istiod would send them.
func (w *world) generate(in ProxyIn) *proxyConfig {
	kind := model.SidecarProxy
	switch in.Type {
	case "router":
		kind = model.Router
	case "waypoint":
		kind = model.Waypoint
	}
	p := &model.Proxy{
		Type:            kind,
		ID:              in.Name + "." + in.Namespace,
		IPAddresses:     []string{in.IP},
		Labels:          in.Labels,
		ConfigNamespace: in.Namespace,
		DNSDomain:       in.Namespace + ".svc.cluster.local",
		Metadata: &model.NodeMetadata{
			Namespace:      in.Namespace,
			Labels:         in.Labels,
			ServiceAccount: in.ServiceAccount,
			IstioVersion:   proxyVersion,
			ClusterID:      "Kubernetes",
		},
	}
	p = w.server.SetupProxy(p)
	listeners := w.server.Listeners(p)
	pc := &proxyConfig{
		in:        in,
		proxy:     p,
		listeners: listeners,
		routes:    map[string]*route.RouteConfiguration{},
		clusters:  map[string]*cluster.Cluster{},
	}
	for _, rc := range w.server.RoutesFromListeners(p, listeners) {
		pc.routes[rc.GetName()] = rc
	}
	for _, c := range w.server.Clusters(p) {
		pc.clusters[c.GetName()] = c
	}
	pc.endpoints = map[string]int{}
	for _, cla := range w.server.Endpoints(p) {
		n := 0
		for _, l := range cla.GetEndpoints() {
			n += len(l.GetLbEndpoints())
		}
		pc.endpoints[cla.GetClusterName()] = n
	}
	return pc
}

// dump writes one proxy's generated configuration to standard error (ORACLE_DUMP=proxy-id), for a person
// reading why an answer is what it is.
func (w *world) dump(id string) {
	pc, ok := w.proxies[id]
	if !ok {
		fmt.Fprintf(os.Stderr, "no proxy %q\n", id)
		return
	}
	if gwc := w.server.Env().GatewayAPIController; gwc != nil {
		for _, c := range gwc.List(gvk.Gateway, "") {
			fmt.Fprintf(os.Stderr, "derived gateway %s/%s: %v\n", c.Namespace, c.Name, c.Spec)
		}
	}
	for _, st := range pc.proxy.ServiceTargets {
		fmt.Fprintf(os.Stderr, "service target %s port %d -> %d\n", st.Service.Hostname, st.Port.Port, st.Port.TargetPort)
	}
	for _, l := range pc.listeners {
		fmt.Fprintln(os.Stderr, protojson.Format(l))
	}
	for _, r := range pc.routes {
		fmt.Fprintln(os.Stderr, protojson.Format(r))
	}
}
