//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/main/windows/win-bridge"
	_ "github.com/containernetworking/plugins/plugins/main/windows/win-overlay"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
)
