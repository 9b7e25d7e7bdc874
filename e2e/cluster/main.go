// Command ebb-cluster runs a small, real Kubernetes control plane on 127.0.0.1 for ebb's
// end-to-end suite: an embedded etcd, kube-apiserver and kube-controller-manager, all built
// from the official Kubernetes modules (no downloaded binaries).
//
// One binary, several roles (the way hyperkube used to ship them):
//
//	ebb-cluster [flags]                 supervisor: etcd in-process, the others as children
//	ebb-cluster kube-apiserver ...      the upstream kube-apiserver command, unchanged
//	ebb-cluster kube-controller-manager ...
//	ebb-cluster kube-scheduler ...      with --node only (node.go): the scheduler, kubelet
//	ebb-cluster kubelet ...             and kube-proxy of the same release, so a pod runs on
//	ebb-cluster kube-proxy ...          a real node next to the control plane
//	ebb-cluster relay ...               on the host: TCP to a cluster's --api-socket (relay.go)
//	ebb-cluster apiserver --dir D --port P   one more kube-apiserver for the cluster in D (extra.go)
//	ebb-cluster etcd-compact --dir D    compacts the etcd of the cluster in D (extra.go)
//
// The supervisor wipes and fills --dir (certificates, kubeconfigs, etcd data, audit log,
// component logs), prints exactly one line on stdout when the API is ready, and runs until
// SIGTERM/SIGINT or until its standard input closes (so a test harness that dies takes the
// cluster with it). On SIGUSR1 it restarts its kube-apiserver (same port, same etcd) and prints
// `ebb-cluster: apiserver restarted` once it is ready again.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// commands are the upstream commands this binary runs by name; nodecmds.go adds the node's.
var commands = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
}

// tools are this binary's own commands besides the supervisor.
var tools = map[string]func([]string) error{
	"relay":        relay,
	"apiserver":    extraAPIServer,
	"etcd-compact": etcdCompact,
}

func main() {
	if len(os.Args) > 1 {
		if newCommand, ok := commands[os.Args[1]]; ok {
			command := newCommand()
			command.SetArgs(os.Args[2:])
			os.Exit(cli.Run(command))
		}
	}
	if len(os.Args) > 1 {
		if run, ok := tools[os.Args[1]]; ok {
			if err := run(os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "ebb-cluster %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	if err := supervise(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "ebb-cluster: %v\n", err)
		os.Exit(1)
	}
}
