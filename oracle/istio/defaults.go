package main

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"sigs.k8s.io/yaml"
)

// crdDefaults are the CRD schemas whose `default:` values the API server applies to custom objects on
// every write (with the API server's own defaulting code): Istio's controllers read objects as a cluster
// stores them, defaults filled in (an HTTPRoute match without a path is a PathPrefix "/" match).
type crdDefaults map[string]*structuralschema.Structural

// loadCRDs reads the CRDs in the given files, one structural schema per group, version and kind.
func loadCRDs(files []string) (crdDefaults, error) {
	out := crdDefaults{}
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		for _, doc := range documents(string(text)) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := yaml.Unmarshal([]byte(doc), &crd); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			if crd.Kind != "CustomResourceDefinition" {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
					continue
				}
				internal := &apiextensions.JSONSchemaProps{}
				if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
					return nil, fmt.Errorf("%s: %s/%s: %w", file, crd.Name, v.Name, err)
				}
				s, err := structuralschema.NewStructural(internal)
				if err != nil {
					return nil, fmt.Errorf("%s: %s/%s: %w", file, crd.Name, v.Name, err)
				}
				out[crd.Spec.Group+"/"+v.Name+"/"+crd.Spec.Names.Kind] = s
			}
		}
	}
	return out, nil
}

// of is the schema of a kind (`group/version` and kind), when a CRD describes it.
func (d crdDefaults) of(apiVersion, kind string) (*structuralschema.Structural, bool) {
	if !strings.Contains(apiVersion, "/") {
		return nil, false
	}
	s, ok := d[apiVersion+"/"+kind]
	return s, ok
}
