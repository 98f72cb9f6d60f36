//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import (
	_ "github.com/Microsoft/windows-container-networking/plugins/sdnbridge"
	_ "github.com/Microsoft/windows-container-networking/plugins/sdnoverlay"
)
