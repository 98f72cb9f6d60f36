//go:build tools

// Keeps the Windows node commands the payload builds in go.mod.
package tools

import (
	_ "k8s.io/component-base/logs/kube-log-runner"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
