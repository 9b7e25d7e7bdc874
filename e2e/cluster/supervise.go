package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// options of the supervisor; every one has a default that suits the suite.
type options struct {
	dir              string
	port             int
	advertiseAddress string
	controllers      string
	stdinLifetime    bool
	readyTimeout     time.Duration
	// --node: a node next to the control plane (node.go)
	node       bool
	nodeIP     string
	images     string
	containerd string
	ctr        string
	apiSocket  string
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("ebb-cluster", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "target/ebb-cluster", "state directory; wiped at start")
	fs.IntVar(&o.port, "port", 0, "kube-apiserver's secure port on 127.0.0.1 (0: a free one)")
	fs.StringVar(&o.advertiseAddress, "advertise-address", "127.0.0.1",
		"address kube-apiserver advertises for itself")
	fs.StringVar(&o.controllers, "controllers", "garbage-collector-controller,namespace-controller",
		"kube-controller-manager controllers to run (Job, endpoints and HPA controllers stay off: tests write their status)")
	fs.BoolVar(&o.stdinLifetime, "exit-on-stdin-close", false,
		"stop when standard input reaches end of file (a harness that dies takes the cluster with it)")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 3*time.Minute, "how long to wait for the API to become ready")
	fs.BoolVar(&o.node, "node", false,
		"also run a node (containerd, kubelet, kube-proxy, kube-scheduler) and every controller of kube-controller-manager; needs e2e/isolated's namespaces")
	fs.StringVar(&o.nodeIP, "node-ip", "198.19.200.1", "the node's address, on lo (with --node)")
	fs.StringVar(&o.images, "images", "", "directory of OCI image archives to import into the node (with --node)")
	fs.StringVar(&o.containerd, "containerd", "containerd", "containerd binary (with --node)")
	fs.StringVar(&o.ctr, "ctr", "ctr", "containerd's ctr binary, to import images (with --node)")
	fs.StringVar(&o.apiSocket, "api-socket", "",
		"also serve the API server on this Unix socket (a host outside the namespace reaches it with `ebb-cluster relay`)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.node {
		// A node runs what any cluster runs: every controller, the API server reachable from
		// pods at its advertised address.
		o.controllers = "*"
		if o.advertiseAddress == "127.0.0.1" {
			o.advertiseAddress = o.nodeIP
		}
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (subcommands: kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy)", fs.Arg(0))
	}
	return o, nil
}

func supervise(args []string) error {
	o, err := parseOptions(args)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("wipe %s: %w", dir, err)
	}
	for _, sub := range []string{"pki", "etcd", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if o.stdinLifetime {
		ctx = stopOnStdinClose(ctx)
	}

	files, err := writePKI(dir, o.advertiseAddress, o.nodeIP)
	if err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	apiPort := o.port
	if apiPort == 0 {
		if apiPort, err = freePort(); err != nil {
			return err
		}
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := writeKubeconfigs(dir, server, files); err != nil {
		return err
	}

	etcd, err := startEtcd(filepath.Join(dir, "etcd"), filepath.Join(dir, "logs", "etcd.log"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Restarts on request (SIGUSR1); registered before anyone knows the API is ready.
	restart := make(chan os.Signal, 1)
	signal.Notify(restart, syscall.SIGUSR1)
	defer signal.Stop(restart)
	etcdAddress := etcd.Clients[0].Addr().String()
	apiArgs := apiserverArgs(dir, apiPort, o, etcdAddress, files)
	// What `ebb-cluster apiserver` and `ebb-cluster etcd-compact` read (extra.go).
	if err := writeClusterFiles(dir, apiArgs, "http://"+etcdAddress); err != nil {
		return err
	}
	apiLog := filepath.Join(dir, "logs", "kube-apiserver.log")
	apiserver, err := startChild(ctx, self, apiLog, apiArgs)
	if err != nil {
		return err
	}
	children := []*child{apiserver}
	defer func() { stopChildren(children) }()

	if err := waitReady(ctx, server+"/readyz", files, o.readyTimeout, apiserver); err != nil {
		return fmt.Errorf("kube-apiserver: %w (log: %s)", err, apiserver.log)
	}
	kcmPort, err := freePort()
	if err != nil {
		return err
	}
	kcm, err := startChild(ctx, self, filepath.Join(dir, "logs", "kube-controller-manager.log"),
		controllerManagerArgs(dir, kcmPort, o, files))
	if err != nil {
		return err
	}
	children = append(children, kcm)
	if err := waitReady(ctx, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), files, o.readyTimeout, kcm); err != nil {
		return fmt.Errorf("kube-controller-manager: %w (log: %s)", err, kcm.log)
	}

	var nodeExited <-chan error
	if o.node {
		n, err := startNode(ctx, o, dir, self, server, files)
		defer n.stop()
		if err != nil {
			return err
		}
		nodeExited = n.exited()
	}

	if o.apiSocket != "" {
		if err := serveAPISocket(ctx, o.apiSocket, fmt.Sprintf("127.0.0.1:%d", apiPort)); err != nil {
			return fmt.Errorf("api socket: %w", err)
		}
	}

	// The one line a harness waits for.
	fmt.Printf("ebb-cluster: ready at %s, kubeconfig %s\n", server, filepath.Join(dir, "kubeconfig"))

	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-nodeExited:
			return err
		case <-restart:
			// kill -9 and the same command again: same port, same etcd, its log appended to.
			_ = apiserver.cmd.Process.Kill()
			<-apiserver.exited
			if apiserver, err = startChild(ctx, self, apiLog, apiArgs); err != nil {
				return err
			}
			children[0] = apiserver
			if err := waitReady(ctx, server+"/readyz", files, o.readyTimeout, apiserver); err != nil {
				return fmt.Errorf("kube-apiserver after a restart: %w (log: %s)", err, apiserver.log)
			}
			fmt.Println("ebb-cluster: apiserver restarted")
		case err := <-apiserver.exited:
			return fmt.Errorf("kube-apiserver exited: %v (log: %s)", err, apiserver.log)
		case err := <-kcm.exited:
			return fmt.Errorf("kube-controller-manager exited: %v (log: %s)", err, kcm.log)
		case err := <-etcd.Err():
			return fmt.Errorf("etcd failed: %w", err)
		}
	}
}

// pkiFiles are the paths of everything writePKI made.
type pkiFiles struct {
	ca, servingCert, servingKey, adminCert, adminKey, kcmCert, kcmKey, serviceAccountKey string
	// the node's: the kubelet's serving pair, and the API server's client pair for it
	kubeletServingCert, kubeletServingKey, kubeletClientCert, kubeletClientKey string
	nodeUsers                                                                  []nodeUser
}

func writePKI(dir, advertiseAddress, nodeIP string) (pkiFiles, error) {
	pki := filepath.Join(dir, "pki")
	var f pkiFiles
	ca, err := newAuthority()
	if err != nil {
		return f, err
	}
	f.ca = filepath.Join(pki, "ca.crt")
	if err := os.WriteFile(f.ca, ca.certPEM(), 0o644); err != nil {
		return f, err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(apiService)}
	if ip := net.ParseIP(advertiseAddress); ip != nil && !ip.IsLoopback() {
		ips = append(ips, ip)
	}
	serving, err := ca.issue("kube-apiserver", nil,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"}, ips)
	if err != nil {
		return f, err
	}
	if f.servingCert, f.servingKey, err = writePair(pki, "apiserver", serving); err != nil {
		return f, err
	}
	// The admin of `kubectl` and of the test harness.
	admin, err := ca.issue("ebb-admin", []string{"system:masters"}, nil, nil)
	if err != nil {
		return f, err
	}
	if f.adminCert, f.adminKey, err = writePair(pki, "admin", admin); err != nil {
		return f, err
	}
	// kube-controller-manager runs every controller under its own identity (no
	// --use-service-account-credentials), so it needs rights over every kind: the garbage
	// collector deletes dependents of any resource, custom ones included.
	kcm, err := ca.issue("system:kube-controller-manager", []string{"system:masters"}, nil, nil)
	if err != nil {
		return f, err
	}
	if f.kcmCert, f.kcmKey, err = writePair(pki, "kube-controller-manager", kcm); err != nil {
		return f, err
	}
	// The node's components, each as the user the bootstrap RBAC policy and the Node
	// authorizer know: the kubelet as system:node:<name>, kube-proxy, kube-scheduler.
	for _, user := range []struct{ name, cn, group string }{
		{"kubelet", "system:node:" + nodeName, "system:nodes"},
		{"kube-proxy", "system:kube-proxy", ""},
		{"kube-scheduler", "system:kube-scheduler", ""},
	} {
		var groups []string
		if user.group != "" {
			groups = []string{user.group}
		}
		pair, err := ca.issue(user.cn, groups, nil, nil)
		if err != nil {
			return f, err
		}
		cert, key, err := writePair(pki, user.name, pair)
		if err != nil {
			return f, err
		}
		f.nodeUsers = append(f.nodeUsers, nodeUser{user.name, cert, key})
	}
	kubeletServing, err := ca.issue(nodeName, nil, []string{nodeName}, []net.IP{net.ParseIP(nodeIP)})
	if err != nil {
		return f, err
	}
	if f.kubeletServingCert, f.kubeletServingKey, err = writePair(pki, "kubelet-serving", kubeletServing); err != nil {
		return f, err
	}
	kubeletClient, err := ca.issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil)
	if err != nil {
		return f, err
	}
	if f.kubeletClientCert, f.kubeletClientKey, err = writePair(pki, "kubelet-client", kubeletClient); err != nil {
		return f, err
	}
	f.serviceAccountKey, err = newServiceAccountKey(pki)
	return f, err
}

// nodeUser is the client identity of one of the node's components.
type nodeUser struct{ name, cert, key string }

func writeKubeconfigs(dir, server string, f pkiFiles) error {
	write := func(path, user, cert, key string) error {
		config := clientcmdapi.NewConfig()
		config.Clusters["ebb"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: f.ca}
		config.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
		config.Contexts["ebb"] = &clientcmdapi.Context{Cluster: "ebb", AuthInfo: user}
		config.CurrentContext = "ebb"
		return clientcmd.WriteToFile(*config, path)
	}
	if err := write(filepath.Join(dir, "kubeconfig"), "admin", f.adminCert, f.adminKey); err != nil {
		return err
	}
	for _, u := range f.nodeUsers {
		if err := write(filepath.Join(dir, u.name+".kubeconfig"), u.name, u.cert, u.key); err != nil {
			return err
		}
	}
	return write(filepath.Join(dir, "kube-controller-manager.kubeconfig"), "kube-controller-manager", f.kcmCert, f.kcmKey)
}

// auditPolicy records who did what to which object, without bodies: enough for the suite to
// count a controller's writes by its ServiceAccount.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func apiserverArgs(dir string, port int, o options, etcdAddress string, f pkiFiles) []string {
	policy := filepath.Join(dir, "audit-policy.yaml")
	_ = os.WriteFile(policy, []byte(auditPolicy), 0o644)
	args := []string{
		"kube-apiserver",
		"--etcd-servers=http://" + etcdAddress,
		"--secure-port=" + strconv.Itoa(port),
		"--advertise-address=" + o.advertiseAddress,
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + f.servingCert,
		"--tls-private-key-file=" + f.servingKey,
		"--client-ca-file=" + f.ca,
		"--service-account-key-file=" + f.serviceAccountKey,
		"--service-account-signing-key-file=" + f.serviceAccountKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + filepath.Join(dir, "audit.log"),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--profiling=false",
		"--v=1",
	}
	if o.node {
		// Pods reach the API server at its advertised address (through the `kubernetes`
		// Service), the API server reaches the kubelet (logs, exec) at the node's address.
		return append(args,
			"--bind-address=0.0.0.0",
			"--kubelet-client-certificate="+f.kubeletClientCert,
			"--kubelet-client-key="+f.kubeletClientKey,
			"--kubelet-certificate-authority="+f.ca,
			"--kubelet-preferred-address-types=InternalIP")
	}
	return append(args,
		"--bind-address=127.0.0.1",
		// Webhooks that name a Service are called at its endpoints, not its ClusterIP: there
		// is no kube-proxy here, and this is how the suite reaches a webhook served by a local
		// process.
		"--enable-aggregator-routing=true",
		"--endpoint-reconciler-type=none")
}

func controllerManagerArgs(dir string, port int, o options, f pkiFiles) []string {
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	args := []string{
		"kube-controller-manager",
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "pki", "kube-controller-manager"),
		"--controllers=" + o.controllers,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--root-ca-file=" + f.ca,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--profiling=false",
		"--v=1",
	}
	if o.node {
		args = append(args,
			"--allocate-node-cidrs=true",
			"--cluster-cidr="+clusterCIDR,
			"--node-cidr-mask-size=24",
			// The HPA controller acts every 5 s here (15 s upstream): the suite waits less.
			"--horizontal-pod-autoscaler-sync-period=5s")
	}
	return args
}

func startEtcd(dataDir, logFile string) (*embed.Etcd, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg := embed.NewConfig()
	cfg.Name = "ebb"
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Test data: durability buys nothing, fsync costs every write.
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{logFile}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, errors.New("not ready after 60s")
	}
}

// child is a component running as a subprocess (of this binary, or containerd).
type child struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan error
}

func startChild(ctx context.Context, self, logFile string, args []string) (*child, error) {
	// Appended to: a restarted component keeps its earlier log (--dir starts empty).
	out, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout = out
	cmd.Stderr = out
	// A supervisor that is killed outright must not leave components behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	c := &child{name: args[0], cmd: cmd, log: logFile, exited: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		out.Close()
		c.exited <- err
		close(c.exited)
	}()
	return c, nil
}

// stopChildren asks every component to stop (SIGTERM), newest first, and kills what has not
// stopped after a grace period.
func stopChildren(children []*child) {
	for i := len(children) - 1; i >= 0; i-- {
		c := children[i]
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
}

// waitReady polls a health endpoint with the admin identity until it answers 200.
func waitReady(ctx context.Context, endpoint string, f pkiFiles, timeout time.Duration, c *child) error {
	// kube-controller-manager serves a self-signed certificate of its own.
	client, err := adminClient(f, !strings.Contains(endpoint, "/readyz"))
	if err != nil {
		return err
	}
	return waitFor(ctx, timeout, c, func() error {
		resp, err := client.Get(endpoint)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// stopOnStdinClose returns a context that ends when standard input reaches end of file.
func stopOnStdinClose(parent context.Context) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		cancel()
	}()
	return ctx
}
