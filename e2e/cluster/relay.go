package main

// The API server lives in e2e/isolated's network namespace; a shell on the host reaches it
// through a Unix socket, which is a file and so crosses network namespaces:
//
//	inside:  ebb-cluster --api-socket DIR/api.sock   forwards each connection to the API server
//	host:    ebb-cluster relay --listen 127.0.0.1:PORT --socket DIR/api.sock
//
// TLS passes through untouched: kubectl on the host checks the API server's own certificate
// (valid for 127.0.0.1) and presents its client certificate to it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// relay runs `ebb-cluster relay`: TCP on the host to the Unix socket of a cluster.
func relay(args []string) error {
	fs := flag.NewFlagSet("ebb-cluster relay", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:6443", "host address to listen on")
	socket := fs.String("socket", "", "the cluster's --api-socket")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *socket == "" {
		return errors.New("relay needs --socket (the path ebb-cluster --api-socket listens on)")
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Printf("ebb-cluster relay: %s -> %s\n", l.Addr(), *socket)
	return forward(ctx, l, "unix", *socket)
}

// serveAPISocket listens on path and forwards every connection to the API server's address.
func serveAPISocket(ctx context.Context, path, apiAddress string) error {
	_ = os.Remove(path)
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	go func() {
		if err := forward(ctx, l, "tcp", apiAddress); err != nil {
			fmt.Fprintf(os.Stderr, "ebb-cluster: api socket: %v\n", err)
		}
	}()
	return nil
}

// forward accepts on l until ctx ends and pipes each connection to network/address.
func forward(ctx context.Context, l net.Listener, network, address string) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		in, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer in.Close()
			out, err := net.Dial(network, address)
			if err != nil {
				return
			}
			defer out.Close()
			var wg sync.WaitGroup
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				// Half-close, so the other direction can finish what it is sending.
				if c, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = c.CloseWrite()
				}
			}
			go pipe(out, in)
			go pipe(in, out)
			wg.Wait()
		}()
	}
}
