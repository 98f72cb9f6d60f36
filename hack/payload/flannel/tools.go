//go:build tools

// flanneld.exe's imports (its main.go, github.com/flannel-io/flannel), pinned here so that
// go.sum holds every module the Windows build needs. hack/build-payload.sh copies upstream's
// main.go into a temporary directory without the tencentvpc and udp backend imports, as
// hack/build-netlab.sh does for Linux (the module proxy refuses the tencentvpc backend's
// github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc), and builds it with this go.mod;
// on Windows both packages are empty (tencentvpc_windows.go, udp_windows.go), so flanneld.exe
// loses nothing. It refuses to build when main.go imports a package that is not listed here.
package tools

import (
	_ "github.com/coreos/go-systemd/v22/daemon"
	_ "github.com/coreos/pkg/flagutil"
	_ "github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/alloc"
	_ "github.com/flannel-io/flannel/pkg/backend/extension"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw"
	_ "github.com/flannel-io/flannel/pkg/backend/ipip"
	_ "github.com/flannel-io/flannel/pkg/backend/ipsec"
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"
	_ "github.com/flannel-io/flannel/pkg/backend/wireguard"
	_ "github.com/flannel-io/flannel/pkg/ip"
	_ "github.com/flannel-io/flannel/pkg/ipmatch"
	_ "github.com/flannel-io/flannel/pkg/subnet"
	_ "github.com/flannel-io/flannel/pkg/subnet/etcd"
	_ "github.com/flannel-io/flannel/pkg/subnet/kube"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/iptables"
	_ "github.com/flannel-io/flannel/pkg/trafficmngr/nftables"
	_ "github.com/flannel-io/flannel/pkg/version"
	_ "github.com/joho/godotenv"
	_ "k8s.io/klog/v2"
)
