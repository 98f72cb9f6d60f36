// Prints the command-line flags kube-proxy.exe accepts, as JSON (hack/build-flag-lists.sh
// builds it with GOOS=windows and runs it under Wine, so the Windows-only flags are in the list
// as on Windows). It imports what cmd/kube-proxy imports, so the same packages register flags
// (kube-proxy also takes every flag of Go's global flag set), and runs the real command through
// component-base's cli.Run, which adds the logging flags and word-separator normalization,
// with only its RunE replaced: the flag set listed is the one the real command parses.
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/component-base/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"

	"winfleet.local/hack/payload/k8s/flaglist"
)

func main() {
	cmd := app.NewProxyCommand()
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		flaglist.Print(flaglist.List{
			Program:                  "kube-proxy",
			Version:                  version.Get().GitVersion,
			Syntax:                   "pflag",
			NormalizesWordSeparators: true,
			Flags:                    flaglist.FromFlagSet(cmd.Flags()),
		})
		return nil
	}
	os.Args = os.Args[:1]
	os.Exit(cli.Run(cmd))
}
