//go:build tools

// Keeps the Windows node commands the payload builds in go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
