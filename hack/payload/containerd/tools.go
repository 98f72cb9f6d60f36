//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
