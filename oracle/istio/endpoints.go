package main

import (
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// The part of a Pod and a Service the endpoint-slice controller reads.
type podDoc struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Ports []struct {
				Name          string `json:"name"`
				ContainerPort int32  `json:"containerPort"`
				Protocol      string `json:"protocol"`
			} `json:"ports"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		PodIP      string `json:"podIP"`
		Phase      string `json:"phase"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

type serviceDoc struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Selector map[string]string `json:"selector"`
		Type     string            `json:"type"`
		Ports    []struct {
			Name       string `json:"name"`
			Port       int32  `json:"port"`
			Protocol   string `json:"protocol"`
			TargetPort any    `json:"targetPort"`
		} `json:"ports"`
	} `json:"spec"`
}

// endpointsDoc is the part of an Endpoints object the mirroring controller reads.
type endpointsDoc struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Subsets []struct {
		Addresses []struct {
			IP        string         `json:"ip"`
			TargetRef map[string]any `json:"targetRef"`
		} `json:"addresses"`
		NotReadyAddresses []struct {
			IP        string         `json:"ip"`
			TargetRef map[string]any `json:"targetRef"`
		} `json:"notReadyAddresses"`
		Ports []struct {
			Name     string `json:"name"`
			Port     int32  `json:"port"`
			Protocol string `json:"protocol"`
		} `json:"ports"`
	} `json:"subsets"`
}

// endpointSlices are the EndpointSlices Kubernetes' endpoint-slice controller writes for the platform
// (which Istio reads for endpoints, and a file of objects does not hold): one per Service with a selector,
// holding the pods with an IP that the selector picks, each port resolved to the pod's number (a named
// targetPort by the pod's container port of that name; a pod without it is left out of that port), ready
// as the pod's Ready condition says; and for a Service without a selector, the slices its Endpoints object
// is mirrored into (the endpoint-slice mirroring controller). Services that already have slices in the
// input are left alone.
func endpointSlices(docs []string) []string {
	var pods []podDoc
	var services []serviceDoc
	var endpoints []endpointsDoc
	selectorless := map[string]bool{}
	have := map[string]bool{}
	for _, doc := range docs {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal([]byte(doc), &head) != nil {
			continue
		}
		switch head.Kind {
		case "Pod":
			var p podDoc
			if yaml.Unmarshal([]byte(doc), &p) == nil && p.Status.PodIP != "" {
				pods = append(pods, p)
			}
		case "Service":
			var s serviceDoc
			if yaml.Unmarshal([]byte(doc), &s) != nil || s.Spec.Type == "ExternalName" {
				continue
			}
			if len(s.Spec.Selector) > 0 {
				services = append(services, s)
			} else {
				selectorless[s.Metadata.Namespace+"/"+s.Metadata.Name] = true
			}
		case "Endpoints":
			var e endpointsDoc
			if yaml.Unmarshal([]byte(doc), &e) == nil {
				endpoints = append(endpoints, e)
			}
		case "EndpointSlice":
			if svc := head.Metadata.Labels["kubernetes.io/service-name"]; svc != "" {
				have[head.Metadata.Namespace+"/"+svc] = true
			}
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Metadata.Name < pods[j].Metadata.Name })
	var out []string
	for _, s := range services {
		if have[s.Metadata.Namespace+"/"+s.Metadata.Name] {
			continue
		}
		// One slice per distinct resolution of the ports, as the controller groups endpoints.
		type group struct {
			ports     []map[string]any
			endpoints []map[string]any
		}
		groups := map[string]*group{}
		var order []string
		for _, p := range pods {
			if p.Metadata.Namespace != s.Metadata.Namespace || !selects(s.Spec.Selector, p.Metadata.Labels) {
				continue
			}
			if p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
				continue
			}
			var ports []map[string]any
			key := ""
			for _, sp := range s.Spec.Ports {
				number, ok := targetNumber(sp.TargetPort, sp.Port, p)
				if !ok {
					continue
				}
				protocol := sp.Protocol
				if protocol == "" {
					protocol = "TCP"
				}
				ports = append(ports, map[string]any{"name": sp.Name, "port": number, "protocol": protocol})
				key += fmt.Sprintf("%s=%d,", sp.Name, number)
			}
			g, ok := groups[key]
			if !ok {
				g = &group{ports: ports}
				groups[key] = g
				order = append(order, key)
			}
			ready := false
			for _, c := range p.Status.Conditions {
				if c.Type == "Ready" {
					ready = c.Status == "True"
				}
			}
			g.endpoints = append(g.endpoints, map[string]any{
				"addresses":  []string{p.Status.PodIP},
				"conditions": map[string]any{"ready": ready, "serving": ready, "terminating": false},
				"targetRef":  map[string]any{"kind": "Pod", "name": p.Metadata.Name, "namespace": p.Metadata.Namespace},
			})
		}
		for i, key := range order {
			g := groups[key]
			out = append(out, sliceDoc(fmt.Sprintf("%s-%d", s.Metadata.Name, i), s.Metadata.Namespace,
				s.Metadata.Name, "endpointslice-controller.k8s.io", g.ports, g.endpoints))
		}
	}
	for _, e := range endpoints {
		key := e.Metadata.Namespace + "/" + e.Metadata.Name
		if !selectorless[key] || have[key] {
			continue
		}
		for i, subset := range e.Subsets {
			var ports []map[string]any
			for _, p := range subset.Ports {
				protocol := p.Protocol
				if protocol == "" {
					protocol = "TCP"
				}
				ports = append(ports, map[string]any{"name": p.Name, "port": p.Port, "protocol": protocol})
			}
			var eps []map[string]any
			add := func(ip string, ref map[string]any, ready bool) {
				ep := map[string]any{
					"addresses":  []string{ip},
					"conditions": map[string]any{"ready": ready, "serving": ready, "terminating": false},
				}
				if ref != nil {
					ep["targetRef"] = ref
				}
				eps = append(eps, ep)
			}
			for _, a := range subset.Addresses {
				add(a.IP, a.TargetRef, true)
			}
			for _, a := range subset.NotReadyAddresses {
				add(a.IP, a.TargetRef, false)
			}
			out = append(out, sliceDoc(fmt.Sprintf("%s-mirror-%d", e.Metadata.Name, i), e.Metadata.Namespace,
				e.Metadata.Name, "endpointslicemirroring-controller.k8s.io", ports, eps))
		}
	}
	return out
}

// sliceDoc is one EndpointSlice of a Service, written by the named controller.
func sliceDoc(name, namespace, service, managedBy string, ports, endpoints []map[string]any) string {
	text, _ := yaml.Marshal(map[string]any{
		"apiVersion":  "discovery.k8s.io/v1",
		"kind":        "EndpointSlice",
		"addressType": "IPv4",
		"metadata": map[string]any{
			"name":      name,
			"namespace": namespace,
			"labels": map[string]any{
				"kubernetes.io/service-name":             service,
				"endpointslice.kubernetes.io/managed-by": managedBy,
			},
		},
		"ports":     ports,
		"endpoints": endpoints,
	})
	return string(text)
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// targetNumber resolves a Service port's targetPort for one pod: a number as it is, a name by the pod's
// container port of that name (false when the pod has none), unset as the Service port.
func targetNumber(target any, port int32, p podDoc) (int32, bool) {
	switch t := target.(type) {
	case nil:
		return port, true
	case float64:
		return int32(t), true
	case int:
		return int32(t), true
	case int64:
		return int32(t), true
	case string:
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == t {
					return cp.ContainerPort, true
				}
			}
		}
		var n int32
		if _, err := fmt.Sscan(t, &n); err == nil && fmt.Sprint(n) == t {
			return n, true
		}
		return 0, false
	}
	return 0, false
}
