//go:build tools

// Keeps the Windows command the payload builds in go.mod.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/meta/flannel"
)
