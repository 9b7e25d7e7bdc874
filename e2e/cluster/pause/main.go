// Command pause is the node's sandbox ("pause") process: it holds a pod's namespaces, reaps
// the children it inherits, and exits on SIGINT or SIGTERM. Built static (CGO_ENABLED=0) into
// the ebb.dev/pause image by .ci/images.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
