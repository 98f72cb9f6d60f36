// Microsoft's sdnbridge/sdnoverlay CNI plugins in their own module; upstream's replaces (both
// to published versions) are copied, since a dependency's replaces are ignored. The checksum
// database proxied here lacks v0.3.2, so go.sum records the hash the module proxy served.
module winfleet.local/hack/payload/sdn

go 1.26.0

godebug default=go1.21

require github.com/Microsoft/windows-container-networking v0.3.2

require (
	github.com/Microsoft/go-winio v0.5.2 // indirect
	github.com/Microsoft/hcsshim v0.8.26 // indirect
	github.com/containerd/cgroups v1.0.3 // indirect
	github.com/containernetworking/cni v1.1.2 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/groupcache v0.0.0-20200121045136-8c9f03a8e57e // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/sirupsen/logrus v1.8.1 // indirect
	go.opencensus.io v0.23.0 // indirect
	golang.org/x/sys v0.28.0 // indirect
)

replace (
	github.com/opencontainers/runc => github.com/opencontainers/runc v1.1.5
	golang.org/x/sys => golang.org/x/sys v0.1.0
)
