package main

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/yaml"
)

// crdDefaults applies the `default:` values of CRD schemas to custom objects, as the API server does on
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

// apply fills in the defaults of a document's kind, when a CRD describes it.
func (d crdDefaults) apply(doc string) (string, error) {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return "", err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if !strings.Contains(apiVersion, "/") {
		return doc, nil
	}
	s, ok := d[apiVersion+"/"+kind]
	if !ok {
		return doc, nil
	}
	structuraldefaulting.Default(obj, s)
	out, err := yaml.Marshal(obj)
	return string(out), err
}
