package main

// What the suite needs to test controllers through API server restarts, freezes and etcd
// compaction:
//
//	ebb-cluster apiserver --dir DIR --port PORT [-- FLAG...]
//	    one more kube-apiserver for the cluster a supervisor runs in DIR: the main one's
//	    arguments (DIR/kube-apiserver.args) on the same etcd, with its own port, log
//	    (DIR/logs/kube-apiserver-PORT.log) and audit log (DIR/audit-PORT.log); FLAGs after `--`
//	    are appended (e.g. --watch-cache=false). It execs the kube-apiserver role of this
//	    binary: the process the caller started IS the API server (SIGSTOP freezes it, SIGKILL
//	    kills it), and it gets SIGKILL when the thread that started it ends.
//	ebb-cluster etcd-compact --dir DIR
//	    moves the revision of the cluster's etcd (DIR/etcd-endpoint) two steps on (two writes of
//	    a key outside the API server's /registry), compacts it there, physically, and prints
//	    that revision: every resourceVersion a client has seen is then older than the compacted
//	    revision by two or more, and a watch resumed from one meets 410 Expired even on a server
//	    without watch cache (etcd still serves a watch from the compacted revision itself, which
//	    is what one write less would leave).
//
// The supervisor restarts its own kube-apiserver on SIGUSR1 (supervise.go).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/grpclog"
)

// Files the supervisor writes into its directory for the commands above.
const (
	apiserverArgsFile = "kube-apiserver.args" // JSON array: the main server's arguments
	etcdEndpointFile  = "etcd-endpoint"       // http://127.0.0.1:PORT
)

func writeClusterFiles(dir string, apiArgs []string, etcdEndpoint string) error {
	data, err := json.MarshalIndent(apiArgs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, apiserverArgsFile), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, etcdEndpointFile), []byte(etcdEndpoint+"\n"), 0o644)
}

// extraAPIServer runs `ebb-cluster apiserver`; it returns only on error (else it execs).
func extraAPIServer(args []string) error {
	fs := flag.NewFlagSet("ebb-cluster apiserver", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory of a running ebb-cluster")
	port := fs.Int("port", 0, "secure port on 127.0.0.1 of this kube-apiserver")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *port <= 0 {
		return errors.New("apiserver needs --dir and --port")
	}
	d, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(d, apiserverArgsFile))
	if err != nil {
		return fmt.Errorf("%w (is an ebb-cluster supervisor running in %s?)", err, d)
	}
	var main []string
	if err := json.Unmarshal(data, &main); err != nil {
		return fmt.Errorf("%s: %w", apiserverArgsFile, err)
	}
	argv, err := extraAPIServerArgs(main, d, *port, fs.Args())
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Its log: this process's standard output and error, which the exec keeps.
	log, err := os.OpenFile(filepath.Join(d, "logs", fmt.Sprintf("kube-apiserver-%d.log", *port)),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The parent-death signal and the exec on one thread: the signal is a property of the
	// thread that sets it, and survives the exec only if that thread is the one that execs.
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", errno)
	}
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(log.Fd()), fd, 0); err != nil {
			return fmt.Errorf("redirect to %s: %w", log.Name(), err)
		}
	}
	return syscall.Exec(self, append([]string{self}, argv...), os.Environ())
}

// extraAPIServerArgs are the main server's arguments with this one's port, audit log and
// no endpoint reconciler (the `kubernetes` Service's endpoints stay the main server's), then
// extra.
func extraAPIServerArgs(main []string, dir string, port int, extra []string) ([]string, error) {
	if len(main) == 0 || main[0] != "kube-apiserver" {
		return nil, fmt.Errorf("%s does not start with kube-apiserver", apiserverArgsFile)
	}
	replaced := map[string]string{
		"--secure-port":              strconv.Itoa(port),
		"--audit-log-path":           filepath.Join(dir, fmt.Sprintf("audit-%d.log", port)),
		"--endpoint-reconciler-type": "none",
	}
	argv := []string{main[0]}
	for _, arg := range main[1:] {
		name, _, _ := strings.Cut(arg, "=")
		if _, ok := replaced[name]; !ok {
			argv = append(argv, arg)
		}
	}
	for _, name := range []string{"--secure-port", "--audit-log-path", "--endpoint-reconciler-type"} {
		argv = append(argv, name+"="+replaced[name])
	}
	return append(argv, extra...), nil
}

// etcdCompact runs `ebb-cluster etcd-compact`.
func etcdCompact(args []string) error {
	fs := flag.NewFlagSet("ebb-cluster etcd-compact", flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory of a running ebb-cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("etcd-compact needs --dir")
	}
	endpoint, err := os.ReadFile(filepath.Join(*dir, etcdEndpointFile))
	if err != nil {
		return err
	}
	// gRPC's chatter on closing the connection is no news.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{strings.TrimSpace(string(endpoint))},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var revision int64
	for i := 0; i < 2; i++ {
		resp, err := client.Put(ctx, "/ebb-cluster/compaction", time.Now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			return err
		}
		revision = resp.Header.Revision
	}
	if _, err := client.Compact(ctx, revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compact at %d: %w", revision, err)
	}
	fmt.Println(revision)
	return nil
}
