// Prints the command-line flags kubelet.exe accepts, as JSON (hack/build-flag-lists.sh builds
// it with GOOS=windows and runs it under Wine, so the Windows-only flags are in the list as on
// Windows). It imports what cmd/kubelet imports, so the same packages register flags.
//
// The kubelet parses its command line itself (DisableFlagParsing) with a flag set that
// NewKubeletCommand keeps to itself; this builds the same set from the same option functions,
// then checks it against the real command's usage text, so a change upstream fails here
// instead of giving a wrong list.
package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"

	"winfleet.local/hack/payload/k8s/flaglist"
)

func main() {
	cmd := app.NewKubeletCommand(context.Background())

	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	config, err := options.NewKubeletConfiguration()
	if err != nil {
		flaglist.Fail("kubelet-flags: " + err.Error())
	}
	options.NewKubeletFlags().AddFlags(fs)
	options.AddKubeletConfigFlags(fs, config)
	options.AddGlobalFlags(fs)
	fs.BoolP("help", "h", false, fmt.Sprintf("help for %s", cmd.Name()))

	var usage bytes.Buffer
	cmd.SetOut(&usage)
	cmd.SetErr(&usage)
	if err := cmd.Usage(); err != nil {
		flaglist.Fail("kubelet-flags: usage: " + err.Error())
	}
	want := fs.FlagUsagesWrapped(2)
	if !strings.HasSuffix(usage.String(), "Flags:\n"+want) {
		flaglist.Fail("kubelet-flags: the flag set built here differs from the one in NewKubeletCommand " +
			"(k8s.io/kubernetes/cmd/kubelet/app/server.go changed how it builds its flags); " +
			"update hack/payload/k8s/cmd/kubelet-flags/main.go to match")
	}

	flaglist.Print(flaglist.List{
		Program:                  "kubelet",
		Version:                  version.Get().GitVersion,
		Syntax:                   "pflag",
		NormalizesWordSeparators: true,
		Flags:                    flaglist.FromFlagSet(fs),
	})
}
