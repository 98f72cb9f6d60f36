// Prints the command-line flags and collectors windows_exporter.exe accepts, as JSON
// (hack/build-flag-lists.sh builds it with GOOS=windows and runs it under Wine: the collectors
// and some flags exist only on Windows). Usage: exporter-flags <module source directory>
//
// windows_exporter registers its flags in three places:
//   - the collectors (pkg/collector, public): registered here on a kingpin application, as
//     cmd/windows_exporter does, with the same kingpin version, so the built-in flags (--help,
//     --version, the hidden completion flags) come along;
//   - the web and logging flags of exporter-toolkit and prometheus/common (public): likewise;
//   - its own flags in cmd/windows_exporter/main.go and internal/log/flag (neither importable):
//     read from the module source with go/ast, as app.Flag("name", ...) chains; a flag is a
//     boolean when its chain ends in Bool() or BoolVar().
//
// main.go must still call webflag.AddFlags, flag.AddFlags and collector.NewWithFlags, and
// internal/log/flag must still call promslog's flag.AddFlags: otherwise this fails, since the
// list would be wrong.
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus-community/windows_exporter/pkg/collector"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	webflag "github.com/prometheus/exporter-toolkit/web/kingpinflag"
)

type flag struct {
	Name    string `json:"name"`
	Short   string `json:"short,omitempty"`
	Boolean bool   `json:"boolean"`
	Hidden  bool   `json:"hidden,omitempty"`
	// Source says where the flag was found: "kingpin" (registered here) or a source file.
	Source string `json:"source"`
}

type list struct {
	Program    string   `json:"program"`
	Version    string   `json:"version"`
	Syntax     string   `json:"syntax"`
	Flags      []flag   `json:"flags"`
	Collectors []string `json:"collectors"`
	// DefaultCollectors is collector.DefaultCollectors ("[defaults]" in --collectors.enabled).
	DefaultCollectors string `json:"defaultCollectors"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "exporter-flags: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: exporter-flags <windows_exporter module source directory>")
	}
	dir := os.Args[1]

	app := kingpin.New("windows_exporter", "")
	webflag.AddFlags(app, ":9182")
	promslogflag.AddFlags(app, &promslog.Config{})
	app.Version(version.Print("windows_exporter"))
	app.HelpFlag.Short('h')
	collector.NewWithFlags(app)

	byName := map[string]flag{}
	for _, f := range app.Model().Flags {
		short := ""
		if f.Short != 0 {
			short = string(f.Short)
		}
		byName[f.Name] = flag{Name: f.Name, Short: short, Boolean: f.IsBoolFlag(), Hidden: f.Hidden, Source: "kingpin"}
	}

	mainFile := filepath.Join(dir, "cmd", "windows_exporter", "main.go")
	logFlagFile := filepath.Join(dir, "internal", "log", "flag", "flag.go")
	mainFlags, mainCalls := sourceFlags(mainFile)
	logFlags, logCalls := sourceFlags(logFlagFile)
	for _, call := range []string{"webflag.AddFlags", "flag.AddFlags", "collector.NewWithFlags"} {
		if !mainCalls[call] {
			fail("%s no longer calls %s; update hack/payload/windows-exporter/cmd/exporter-flags to register its flags as it does", mainFile, call)
		}
	}
	if !logCalls["flag.AddFlags"] {
		fail("%s no longer calls promslog's flag.AddFlags; update hack/payload/windows-exporter/cmd/exporter-flags", logFlagFile)
	}
	for _, f := range append(mainFlags, logFlags...) {
		if _, dup := byName[f.Name]; dup {
			fail("flag --%s is registered twice; kingpin would refuse it", f.Name)
		}
		byName[f.Name] = f
	}
	for _, required := range []string{"collectors.enabled", "log.file", "web.listen-address"} {
		if _, ok := byName[required]; !ok {
			fail("no --%s flag found; the sources changed, update hack/payload/windows-exporter/cmd/exporter-flags", required)
		}
	}

	out := list{
		Program:           "windows_exporter",
		Version:           "v" + version.Version,
		Syntax:            "kingpin",
		Collectors:        collector.Available(),
		DefaultCollectors: collector.DefaultCollectors,
	}
	for _, f := range byName {
		out.Flags = append(out.Flags, f)
	}
	sort.Slice(out.Flags, func(i, j int) bool { return out.Flags[i].Name < out.Flags[j].Name })
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fail("cannot write the list: %v", err)
	}
}

// sourceFlags finds the X.Flag(name, ...) chains in file (name a string literal or a constant
// of the file) and the package-qualified calls it makes (e.g. "webflag.AddFlags").
func sourceFlags(file string) ([]flag, map[string]bool) {
	fset := token.NewFileSet()
	parsed, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		fail("cannot parse %s: %v", file, err)
	}
	constants := map[string]string{}
	for _, decl := range parsed.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			for i, name := range value.Names {
				if i < len(value.Values) {
					if lit, ok := value.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						constants[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	calls := map[string]bool{}
	seen := map[*ast.CallExpr]bool{}
	var flags []flag
	ast.Inspect(parsed, func(node ast.Node) bool {
		call, ok := node.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			if pkg, ok := sel.X.(*ast.Ident); ok {
				calls[pkg.Name+"."+sel.Sel.Name] = true
			}
		}
		if seen[call] {
			return true
		}
		// The outermost call of a chain is met first: walk down to its Flag(...) call.
		terminal := ""
		for c := call; c != nil; {
			sel, ok := c.Fun.(*ast.SelectorExpr)
			if !ok {
				break
			}
			if terminal == "" {
				terminal = sel.Sel.Name
			}
			seen[c] = true
			if sel.Sel.Name == "Flag" && len(c.Args) >= 1 {
				name := ""
				switch arg := c.Args[0].(type) {
				case *ast.BasicLit:
					if arg.Kind == token.STRING {
						name, _ = strconv.Unquote(arg.Value)
					}
				case *ast.Ident:
					name = constants[arg.Name]
				}
				if name == "" {
					fail("%s: a Flag call whose name is neither a string nor a constant of the file", fset.Position(c.Pos()))
				}
				flags = append(flags, flag{
					Name:    name,
					Boolean: terminal == "Bool" || terminal == "BoolVar",
					Source:  filepath.ToSlash(filepath.Base(filepath.Dir(file))) + "/" + filepath.Base(file),
				})
				break
			}
			inner, ok := sel.X.(*ast.CallExpr)
			if !ok {
				break
			}
			c = inner
		}
		return true
	})
	return flags, calls
}
