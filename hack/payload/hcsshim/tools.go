//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import _ "github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1"
