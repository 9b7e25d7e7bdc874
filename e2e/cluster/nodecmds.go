//go:build !nonode

package main

import (
	"context"

	"github.com/spf13/cobra"
	kubeproxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// The node's commands, linked in every build but the k8s-1.28 one (built with -tags nonode:
// the oldest release is checked node-less, and its commands' constructors differ).
func init() {
	commands["kube-scheduler"] = func() *cobra.Command { return scheduler.NewSchedulerCommand() }
	commands["kubelet"] = func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) }
	commands["kube-proxy"] = kubeproxy.NewProxyCommand
}
