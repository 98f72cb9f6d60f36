//go:build tools

// The Linux CNI plugins a netlab pod is set up with (bridge with host-local IPAM, as flannel's
// CNI plugin delegates to, and loopback), pinned here and built by hack/build-netlab.sh.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
)
