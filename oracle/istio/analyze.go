package main

// The analyze mode: what `istioctl analyze` reports on files, from Istio's own analyzers at the pinned
// version. Files are loaded the way Istio's analyzer tests load them (pkg/config/analysis/analyzers,
// setupAnalyzerForCase): runtime kinds (Pods, Namespaces, Secrets, ...) are kept, which istioctl's plain
// file mode drops, and istioctl's file-mode default resources (a stand-in ingress gateway) are added.
//
// Usage: oracle analyze [--mesh-config FILE] [--analyzer NAME]... [--suppress CODE=RESOURCE]... PATH...
// A PATH that is a directory is read whole (its .yaml, .yml and .json files, sorted). The answer is one
// JSON document (AnalyzeOutput) on standard output.

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"istio.io/istio/pkg/config/analysis"
	"istio.io/istio/pkg/config/analysis/analyzers"
	"istio.io/istio/pkg/config/analysis/diag"
	"istio.io/istio/pkg/config/analysis/local"
	"istio.io/istio/pkg/config/analysis/msg"
)

// AnalyzeOutput is the answer of the analyze mode.
type AnalyzeOutput struct {
	// Analyzers is every analyzer the combination holds (Metadata().Name), with the kinds it reads.
	Analyzers []AnalyzerInfo `json:"analyzers"`
	// Skipped is the analyzers Istio did not run because an input kind they need is not served.
	Skipped []string `json:"skipped"`
	// Messages is what each analyzer reported, sorted.
	Messages []AnalyzeMessage `json:"messages"`
	// Catalogue is every message type Istio defines (code, name, level).
	Catalogue []MessageTypeInfo `json:"catalogue"`
	// LoadErrors is what Istio could not read from the files (it reads the rest).
	LoadErrors string `json:"loadErrors,omitempty"`
}

// AnalyzerInfo names one analyzer and the kinds it reads.
type AnalyzerInfo struct {
	// Name is the analyzer's name as istioctl's --analyzer flag takes it (Metadata().Name).
	Name string `json:"name"`
	// Type is its Go type as Istio's analyzer tests name it (package.Type; the schema validation analyzers
	// as the tests import them, schemaValidation.CollectionValidationAnalyzer).
	Type   string   `json:"type"`
	Inputs []string `json:"inputs"`
}

// AnalyzeMessage is one message of one analyzer, about one object (or none).
type AnalyzeMessage struct {
	// Analyzer is the analyzer's type (AnalyzerInfo.Type).
	Analyzer  string `json:"analyzer"`
	Code      string `json:"code"`
	Level     string `json:"level"`
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Text      string `json:"text"`
}

// MessageTypeInfo is one message type of Istio's catalogue.
type MessageTypeInfo struct {
	Code     string `json:"code"`
	Level    string `json:"level"`
	Template string `json:"template"`
}

func runAnalyze(args []string, out io.Writer) error {
	var meshConfig string
	var selected, suppress, paths []string
	for i := 0; i < len(args); i++ {
		flagValue := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", args[i])
			}
			i++
			return args[i], nil
		}
		var err error
		switch args[i] {
		case "--mesh-config":
			meshConfig, err = flagValue()
		case "--analyzer":
			var v string
			v, err = flagValue()
			selected = append(selected, v)
		case "--suppress":
			var v string
			v, err = flagValue()
			suppress = append(suppress, v)
		default:
			paths = append(paths, args[i])
		}
		if err != nil {
			return err
		}
	}
	files, err := inputFiles(paths)
	if err != nil {
		return err
	}

	combined := analyzers.AllCombined()
	if len(selected) > 0 {
		combined = analyzers.NamedCombined(selected...)
	}
	sa := local.NewSourceAnalyzer(combined, "", "istio-system", nil)
	var suppressions []local.AnalysisSuppression
	for _, s := range suppress {
		code, res, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("%q is not CODE=RESOURCE", s)
		}
		suppressions = append(suppressions, local.AnalysisSuppression{Code: code, ResourceName: res})
	}
	sa.SetSuppressions(suppressions)
	if meshConfig != "" {
		if err := sa.AddFileKubeMeshConfig(meshConfig); err != nil {
			return fmt.Errorf("mesh config %s: %w", meshConfig, err)
		}
	}
	var readers []local.ReaderSource
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return err
		}
		defer r.Close()
		readers = append(readers, local.ReaderSource{Name: f, Reader: r})
	}
	output := AnalyzeOutput{Skipped: []string{}, Messages: []AnalyzeMessage{}}
	if err := sa.AddTestReaderKubeSource(readers); err != nil {
		output.LoadErrors = err.Error()
	}
	if err := sa.AddDefaultResources(); err != nil {
		return fmt.Errorf("default resources: %w", err)
	}
	cancel := make(chan struct{})
	defer close(cancel)
	result, err := sa.Analyze(cancel)
	if err != nil {
		return err
	}
	output.Analyzers = analyzerInfos(combined)
	types := map[string]string{}
	for _, a := range output.Analyzers {
		types[a.Name] = a.Type
	}
	output.Skipped = append(output.Skipped, result.SkippedAnalyzers...)
	sort.Strings(output.Skipped)
	for analyzer, msgs := range result.MappedMessages {
		for _, m := range msgs {
			output.Messages = append(output.Messages, message(types[analyzer], m))
		}
	}
	sort.Slice(output.Messages, func(i, j int) bool {
		a, b := output.Messages[i], output.Messages[j]
		return strings.Join([]string{a.Analyzer, a.Code, a.Kind, a.Namespace, a.Name, a.Text}, "\x00") <
			strings.Join([]string{b.Analyzer, b.Code, b.Kind, b.Namespace, b.Name, b.Text}, "\x00")
	})
	for _, t := range msg.All() {
		output.Catalogue = append(output.Catalogue, MessageTypeInfo{Code: t.Code(), Level: t.Level().String(), Template: t.Template()})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", " ")
	return enc.Encode(output)
}

func analyzerInfos(combined analysis.CombinedAnalyzer) []AnalyzerInfo {
	byName := map[string]AnalyzerInfo{}
	for _, a := range analyzers.All() {
		info := AnalyzerInfo{Name: a.Metadata().Name, Type: typeOf(a), Inputs: []string{}}
		for _, in := range a.Metadata().Inputs {
			info.Inputs = append(info.Inputs, in.Kind)
		}
		byName[info.Name] = info
	}
	var infos []AnalyzerInfo
	for _, name := range combined.AnalyzerNames() {
		infos = append(infos, byName[name])
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	return infos
}

// typeOf is an analyzer's Go type as Istio's analyzer tests name it.
func typeOf(a analysis.Analyzer) string {
	t := reflect.TypeOf(a)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := path.Base(t.PkgPath()) + "." + t.Name()
	if name == "schema.ValidationAnalyzer" {
		return "schemaValidation.CollectionValidationAnalyzer"
	}
	return name
}

func message(analyzer string, m diag.Message) AnalyzeMessage {
	out := AnalyzeMessage{
		Analyzer: analyzer,
		Code:     m.Type.Code(),
		Level:    m.Type.Level().String(),
		Text:     fmt.Sprintf(m.Type.Template(), m.Parameters...),
	}
	if m.Resource != nil && m.Resource.Origin != nil {
		// The origin's comparator is Kind/name/namespace.
		parts := strings.SplitN(m.Resource.Origin.Comparator(), "/", 3)
		if len(parts) == 3 {
			out.Kind, out.Name, out.Namespace = parts[0], parts[1], parts[2]
		}
		if out.Namespace == "" && m.Resource.Metadata.FullName.Namespace != "" {
			out.Namespace = string(m.Resource.Metadata.FullName.Namespace)
		}
	}
	return out
}

// inputFiles expands directories to the YAML and JSON files under them, sorted.
func inputFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var under []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch filepath.Ext(path) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					under = append(under, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(under)
		files = append(files, under...)
	}
	return files, nil
}
