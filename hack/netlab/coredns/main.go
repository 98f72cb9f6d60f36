// CoreDNS for the network test world (sim/netlab), built by hack/build-netlab.sh from the Go
// module proxy with only the plugins a cluster DNS Service needs there: kubernetes (Services and
// EndpointSlices from the API server), errors and log (what it answered, in its log), health and
// ready (a readiness the test waits on). The stock binary's plugin list (core/plugin) pulls in
// every cloud backend; this one sets the directive list itself, in the order of CoreDNS's
// plugin.cfg, and imports only those plugins.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The directives in plugin.cfg's order (the order a query passes through them).
var directives = []string{"ready", "health", "errors", "log", "kubernetes"}

func main() {
	if err := dnsserver.SetDirectives(directives); err != nil {
		panic(err)
	}
	coremain.Run()
}
