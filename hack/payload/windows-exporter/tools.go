//go:build tools

// Keeps the Windows commands the payload builds in go.mod.
package tools

import _ "github.com/prometheus-community/windows_exporter/cmd/windows_exporter"
