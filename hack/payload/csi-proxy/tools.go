//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import _ "github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy"
