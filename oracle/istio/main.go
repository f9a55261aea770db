// Command oracle answers, for a platform and a list of requests, what Istio's own code generates for each
// proxy and what that configuration does with each request. kfmesh's differential tests compare its model
// with these answers.
//
// Usage: oracle < input.json > answers.json (the formats are Input and Output in protocol.go), or
// oracle analyze ... for what istioctl analyze reports (analyze.go), or oracle analyzer-cases DIR for the
// cases of Istio's analyzer tests (cases.go), or
// oracle regex for what RE2's syntax and semantics (Go's regexp) say about patterns (regex.go).
//
// Istio's configuration comes from its own packages at the pinned version (go.mod): the fake discovery
// server Istio's tests use (pilot/test/xds), fed the platform's Kubernetes objects and Istio and Gateway
// API configuration, builds the listeners, routes and clusters of each proxy. What Envoy then does with a
// request is evaluated by package envoy, written from Envoy's documented semantics.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	istiolog "istio.io/istio/pkg/log"
)

func main() {
	// Istio's components log their progress; the answers are the output.
	for _, scope := range istiolog.Scopes() {
		scope.SetOutputLevel(istiolog.NoneLevel)
	}
	var err error
	if len(os.Args) > 1 && os.Args[1] == "analyze" {
		err = runAnalyze(os.Args[2:], os.Stdout)
	} else if len(os.Args) > 1 && os.Args[1] == "analyzer-cases" {
		err = runAnalyzerCases(os.Args[2:], os.Stdout)
	} else if len(os.Args) > 1 && os.Args[1] == "regex" {
		err = runRegex(os.Stdin, os.Stdout)
	} else {
		err = run(os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var input Input
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&input); err != nil {
		return fmt.Errorf("reading the input: %w", err)
	}
	output, err := answer(input)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", " ")
	return enc.Encode(output)
}
