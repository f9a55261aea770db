package main

// oracle analyzer-cases DIR: the cases of Istio's own analyzer tests at the pinned version, read from the
// test table in DIR/pkg/config/analysis/analyzers/analyzers_test.go (DIR is the istio.io/istio module's
// directory) with Go's parser, the message variables resolved to codes through msg/messages.gen.go. The
// output is a JSON list in the shape of kfmesh's conformance cases (name, analyzer, inputs relative to
// the analyzers directory, meshConfig, skipAll, expect).

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

type analyzerCase struct {
	Name         string            `json:"name"`
	Analyzer     string            `json:"analyzer"`
	Inputs       []string          `json:"inputs"`
	MeshConfig   *string           `json:"meshConfig"`
	MeshNetworks *string           `json:"meshNetworks"`
	SkipAll      bool              `json:"skipAll"`
	Expect       []expectedMessage `json:"expect"`
}

type expectedMessage struct {
	Code      string  `json:"code"`
	Message   string  `json:"message"`
	Kind      string  `json:"kind"`
	Namespace *string `json:"namespace"`
	Name      string  `json:"name"`
}

func runAnalyzerCases(args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: oracle analyzer-cases ISTIO_MODULE_DIR")
	}
	dir := filepath.Join(args[0], "pkg/config/analysis")
	codes, err := messageCodes(filepath.Join(dir, "msg/messages.gen.go"))
	if err != nil {
		return err
	}
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "analyzers/analyzers_test.go"), nil, 0)
	if err != nil {
		return err
	}
	var grid *ast.CompositeLit
	ast.Inspect(file, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok && len(spec.Names) == 1 && spec.Names[0].Name == "testGrid" {
			grid, _ = spec.Values[0].(*ast.CompositeLit)
		}
		return grid == nil
	})
	if grid == nil {
		return fmt.Errorf("no testGrid in analyzers_test.go")
	}
	cases := []analyzerCase{}
	for _, element := range grid.Elts {
		c, err := caseOf(element.(*ast.CompositeLit), codes)
		if err != nil {
			return err
		}
		cases = append(cases, c)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(cases)
}

// caseOf reads one testCase literal: its fields by name.
func caseOf(lit *ast.CompositeLit, codes map[string]string) (analyzerCase, error) {
	c := analyzerCase{Inputs: []string{}, Expect: []expectedMessage{}}
	for _, e := range lit.Elts {
		kv := e.(*ast.KeyValueExpr)
		switch kv.Key.(*ast.Ident).Name {
		case "name":
			c.Name = stringOf(kv.Value)
		case "inputFiles":
			for _, f := range kv.Value.(*ast.CompositeLit).Elts {
				c.Inputs = append(c.Inputs, stringOf(f))
			}
		case "meshConfigFile":
			s := stringOf(kv.Value)
			c.MeshConfig = &s
		case "meshNetworksFile":
			s := stringOf(kv.Value)
			c.MeshNetworks = &s
		case "skipAll":
			c.SkipAll = kv.Value.(*ast.Ident).Name == "true"
		case "analyzer":
			c.Analyzer = analyzerType(kv.Value)
		case "expected":
			for _, m := range kv.Value.(*ast.CompositeLit).Elts {
				parts := m.(*ast.CompositeLit).Elts
				variable := parts[0].(*ast.SelectorExpr).Sel.Name
				code, ok := codes[variable]
				if !ok {
					return c, fmt.Errorf("case %s: message %s is not in messages.gen.go", c.Name, variable)
				}
				c.Expect = append(c.Expect, expectedOf(code, variable, stringOf(parts[1])))
			}
		}
	}
	return c, nil
}

// analyzerType names the analyzer as `pkg.Type`: `&pkg.Type{}`, or `pkg.Constructor(...)` for schema validation.
func analyzerType(e ast.Expr) string {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X.(*ast.CompositeLit).Type
	}
	if call, ok := e.(*ast.CallExpr); ok {
		e = call.Fun
	}
	sel := e.(*ast.SelectorExpr)
	return sel.X.(*ast.Ident).Name + "." + sel.Sel.Name
}

// expectedOf reads an origin as Istio's tests write it: `Kind name` or `Kind namespace/name`.
func expectedOf(code, message, origin string) expectedMessage {
	kind, rest, _ := strings.Cut(origin, " ")
	m := expectedMessage{Code: code, Message: message, Kind: kind, Name: rest}
	if ns, name, ok := strings.Cut(rest, "/"); ok {
		m.Namespace, m.Name = &ns, name
	}
	return m
}

func stringOf(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(s, "testdata/")
}

// messageCodes maps each message variable of messages.gen.go to its code.
func messageCodes(path string) (map[string]string, error) {
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	codes := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Values) != 1 {
			return true
		}
		if call, ok := spec.Values[0].(*ast.CallExpr); ok && len(call.Args) >= 2 {
			codes[spec.Names[0].Name] = stringOf(call.Args[1])
		}
		return true
	})
	return codes, nil
}
