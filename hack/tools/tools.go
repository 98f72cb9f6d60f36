//go:build tools

// Go tools the build and tests use (helm for the chart, crane for the image), pinned here and
// built into a cache directory by hack/build-tools.sh.
package tools

import (
	_ "github.com/google/go-containerregistry/cmd/crane"
	_ "helm.sh/helm/v4/cmd/helm"
)
