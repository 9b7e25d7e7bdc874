package main

// The node (--node): containerd, kubelet, kube-proxy and kube-scheduler next to the control
// plane, so pods run for real. Everything lives inside the private network, mount and PID
// namespaces that e2e/isolated makes; the supervisor refuses to start a node anywhere else.
//
// Addresses all come from 198.18.0.0/15 (RFC 2544, never routed): pods 198.18.0.0/16 (this
// node's range 198.18.0.0/24), Services 198.19.0.0/17, the node itself nodeIP on lo.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	nodeName    = "ebb-node"
	clusterCIDR = "198.18.0.0/16"
	podCIDR     = "198.18.0.0/24" // the first range kube-controller-manager hands out
	serviceCIDR = "198.19.0.0/17"
	apiService  = "198.19.0.1" // the `kubernetes` Service: the first address of serviceCIDR
	// runDir holds each node's state (/run/<name>: containerd's, the kubelet's, CNI's): a tmpfs
	// private to the namespace, so it goes when the namespace goes, and socket paths stay short.
	runDir = "/run"
	// nodeLock serialises nodes in one namespace: a second node waits until the first has
	// stopped (they would share the kubelet's port, the bridge and kube-proxy's chains).
	nodeLock = "/run/ebb-node.lock"
	// pauseImage is the sandbox image; .ci/images builds it from e2e/cluster/pause.
	pauseImage = "ebb.dev/pause:dev"
)

// node is a running node: its processes and the cgroup tree its pods run in.
type node struct {
	children   []*child
	name       string // "ebb-node-<random>"
	cgroupRoot string // "/<name>", under every cgroup hierarchy
	state      string // runDir/<name>
	lock       *os.File
}

// checkNodeIsolation refuses to run a node where it could touch the host: the network
// namespace must hold nothing but lo (a fresh one), and /run and the kubelet's fixed log
// directories must be mounts of their own (made by e2e/isolated in a private mount namespace).
func checkNodeIsolation(nodeIP string) error {
	if os.Geteuid() != 0 {
		return errors.New("a node needs root (run it through e2e/isolated as root)")
	}
	interfaces, err := net.Interfaces()
	if err != nil {
		return err
	}
	hasIP := false
	for _, i := range interfaces {
		if i.Flags&net.FlagLoopback == 0 && !strings.HasPrefix(i.Name, "cni") && !strings.HasPrefix(i.Name, "veth") &&
			!strings.HasPrefix(i.Name, "kube-") {
			return fmt.Errorf("refusing to run a node outside a private network namespace: found interface %s (run it through e2e/isolated)", i.Name)
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.String() == nodeIP {
				hasIP = true
			}
		}
	}
	if !hasIP {
		return fmt.Errorf("the node address %s is not on lo (e2e/isolated puts it there)", nodeIP)
	}
	list, err := mounts()
	if err != nil {
		return err
	}
	// The last mount at a point is the one in sight (mountinfo lists them in mount order).
	tmpfs := map[string]bool{}
	for _, m := range list {
		tmpfs[m.point] = m.fsType == "tmpfs"
	}
	for _, dir := range []string{"/run", "/var/log/pods", "/var/log/containers"} {
		if !tmpfs[dir] {
			return fmt.Errorf("%s is not a tmpfs of its own: run the node through e2e/isolated, which makes one in a private mount namespace", dir)
		}
	}
	return nil
}

// mount is one line of /proc/self/mountinfo: where, and what file system type.
type mount struct{ point, fsType string }

// mounts lists this mount namespace's mounts, from /proc/self/mountinfo.
func mounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var all []mount
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": the mount point
		// is the fifth field, the type the first after " - ".
		fields := strings.Fields(scanner.Text())
		for i, field := range fields {
			if field == "-" && i+1 < len(fields) && len(fields) > 4 {
				all = append(all, mount{point: fields[4], fsType: fields[i+1]})
				break
			}
		}
	}
	return all, scanner.Err()
}

// cgroupHierarchies lists the mount points of the cgroup v1 hierarchies (not the empty
// cgroup2 "unified" one): kubelet's cgroupfs driver needs the v1 controllers. With all, the
// cgroup2 mounts too: runc makes each container's cgroup there as well.
func cgroupHierarchies(all bool) ([]string, error) {
	list, err := mounts()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range list {
		if m.fsType == "cgroup" || all && m.fsType == "cgroup2" {
			dirs = append(dirs, m.point)
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New("no cgroup v1 hierarchy is mounted (this node runs on cgroup v1 hosts)")
	}
	sort.Strings(dirs)
	return dirs, nil
}

// makeCgroupRoot makes the node's own cgroup in every hierarchy, so that stopping the node can
// find, kill and remove everything its pods left.
func makeCgroupRoot(name string) (string, error) {
	hierarchies, err := cgroupHierarchies(false)
	if err != nil {
		return "", err
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "/" + name, fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) == "cpuset" || strings.Contains(filepath.Base(h), "cpuset") {
			// A new cpuset starts empty; it takes no task until it has CPUs and memory nodes.
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				value, err := os.ReadFile(filepath.Join(h, file))
				if err != nil {
					return "/" + name, err
				}
				if err := os.WriteFile(filepath.Join(dir, file), value, 0o644); err != nil {
					return "/" + name, fmt.Errorf("%s/%s: %w", dir, file, err)
				}
			}
		}
	}
	return "/" + name, nil
}

// removeCgroupRoot kills every process left in the node's cgroups (containers outlive kubelet
// and containerd) and removes the tree, deepest first, from every hierarchy, cgroup2 included.
func removeCgroupRoot(root string) error {
	hierarchies, err := cgroupHierarchies(true)
	if err != nil {
		return err
	}
	var errs []error
	for attempt := 0; attempt < 50; attempt++ {
		left := 0
		for _, h := range hierarchies {
			_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				procs, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
				for _, line := range strings.Fields(string(procs)) {
					if pid, err := strconv.Atoi(line); err == nil {
						left++
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
				return nil
			})
		}
		if left == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		// Deepest first: a cgroup with children cannot be removed.
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, dir := range dirs {
			var err error
			for try := 0; try < 20; try++ {
				if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(50 * time.Millisecond) // EBUSY while a killed task is still exiting
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// startNode starts containerd (importing the images of imagesDir), kube-scheduler, kubelet
// and kube-proxy, and returns once the Node is Ready.
func startNode(ctx context.Context, o options, dir, self, server string, f pkiFiles) (n *node, err error) {
	for _, name := range []string{"kubelet", "kube-proxy", "kube-scheduler"} {
		if _, ok := commands[name]; !ok {
			return nil, fmt.Errorf("this ebb-cluster was built without %s (the k8s-1.28 build is node-less)", name)
		}
	}
	if err := checkNodeIsolation(o.nodeIP); err != nil {
		return nil, err
	}
	n = &node{name: fmt.Sprintf("ebb-node-%08x", rand.Uint32())}
	defer func() {
		if err != nil {
			n.stop()
		}
	}()
	if n.lock, err = lockNode(ctx, o.readyTimeout); err != nil {
		return n, err
	}
	if n.cgroupRoot, err = makeCgroupRoot(n.name); err != nil {
		return n, err
	}
	n.state = filepath.Join(runDir, n.name)
	for _, sub := range []string{"containerd", "kubelet", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(filepath.Join(n.state, sub), 0o755); err != nil {
			return n, err
		}
	}
	logs := filepath.Join(dir, "logs")
	// Processes of the namespace itself (the API server calling a webhook's Service, the suite
	// scraping one) reach Service addresses too: kube-proxy rewrites them on the way out, but
	// a packet first needs a route to leave by. The namespace has no default route.
	if out, err := exec.CommandContext(ctx, "ip", "route", "replace", serviceCIDR, "dev", "lo").CombinedOutput(); err != nil {
		return n, fmt.Errorf("route to the Service range: %v: %s", err, strings.TrimSpace(string(out)))
	}

	// containerd, then the images (the sandbox image first of all).
	socket := filepath.Join(n.state, "containerd.sock")
	containerdPath, err := exec.LookPath(o.containerd)
	if err != nil {
		return n, fmt.Errorf("%s: %w (.ci/run installs it)", o.containerd, err)
	}
	major, err := containerdMajor(ctx, containerdPath)
	if err != nil {
		return n, err
	}
	// containerd starts its shims from PATH: the ones built beside it, not another release's.
	_ = os.Setenv("PATH", filepath.Dir(containerdPath)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := writeContainerdConfig(dir, n.state, socket, major); err != nil {
		return n, err
	}
	containerd, err := startProcess(ctx, filepath.Join(logs, "containerd.log"), containerdPath,
		"--config", filepath.Join(dir, "containerd.toml"))
	if err != nil {
		return n, err
	}
	n.children = append(n.children, containerd)
	if err := waitFor(ctx, 30*time.Second, containerd, func() error {
		return exec.CommandContext(ctx, o.ctr, "--address", socket, "version").Run()
	}); err != nil {
		return n, fmt.Errorf("containerd: %w (log: %s)", err, containerd.log)
	}
	if err := importImages(ctx, o, socket); err != nil {
		return n, err
	}

	// kube-scheduler
	port, err := freePort()
	if err != nil {
		return n, err
	}
	schedulerKubeconfig := filepath.Join(dir, "kube-scheduler.kubeconfig")
	scheduler, err := startChild(ctx, self, filepath.Join(logs, "kube-scheduler.log"), []string{
		"kube-scheduler",
		"--kubeconfig=" + schedulerKubeconfig,
		"--authentication-kubeconfig=" + schedulerKubeconfig,
		"--authorization-kubeconfig=" + schedulerKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
		"--profiling=false",
		"--v=1",
	})
	if err != nil {
		return n, err
	}
	n.children = append(n.children, scheduler)

	// kubelet
	if err := writeKubeletConfig(dir, n.state, o.nodeIP, socket, n.cgroupRoot, f); err != nil {
		return n, err
	}
	kubelet, err := startChild(ctx, self, filepath.Join(logs, "kubelet.log"), []string{
		"kubelet",
		"--config=" + filepath.Join(dir, "kubelet.yaml"),
		"--kubeconfig=" + filepath.Join(dir, "kubelet.kubeconfig"),
		"--root-dir=" + filepath.Join(n.state, "kubelet"),
		"--cert-dir=" + filepath.Join(dir, "pki", "kubelet"),
		"--hostname-override=" + nodeName,
		"--node-ip=" + o.nodeIP,
		"--v=1",
	})
	if err != nil {
		return n, err
	}
	n.children = append(n.children, kubelet)

	// kube-proxy
	if err := writeKubeProxyConfig(dir); err != nil {
		return n, err
	}
	proxy, err := startChild(ctx, self, filepath.Join(logs, "kube-proxy.log"), []string{
		"kube-proxy", "--config=" + filepath.Join(dir, "kube-proxy.yaml"), "--v=1",
	})
	if err != nil {
		return n, err
	}
	n.children = append(n.children, proxy)

	if err := waitNodeReady(ctx, server, f, o.readyTimeout, kubelet); err != nil {
		return n, fmt.Errorf("node: %w (log: %s)", err, kubelet.log)
	}
	return n, nil
}

// stop stops the node's processes, then kills what its pods left and removes its cgroups,
// mounts and state, and lets the next node in.
func (n *node) stop() {
	if n == nil {
		return
	}
	stopChildren(n.children)
	n.children = nil
	if n.cgroupRoot != "" {
		if err := removeCgroupRoot(n.cgroupRoot); err != nil {
			fmt.Fprintf(os.Stderr, "ebb-cluster: %v\n", err)
		}
	}
	if n.state != "" {
		if err := removeState(n.state); err != nil {
			fmt.Fprintf(os.Stderr, "ebb-cluster: %v\n", err)
		}
	}
	if n.lock != nil {
		_ = n.lock.Close() // releases the flock
	}
}

// lockNode takes the namespace's node lock, waiting for a node that is still stopping.
func lockNode(ctx context.Context, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(nodeLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another node of this namespace still runs after %s (%s)", timeout, nodeLock)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// removeState unmounts what the kubelet and containerd mounted under state (volumes, rootfs
// overlays) and the pods' network namespaces (/run/netns/cni-*), deepest first, and removes
// the directory.
func removeState(state string) error {
	list, err := mounts()
	if err != nil {
		return err
	}
	var points []string
	for _, m := range list {
		if m.point == state || strings.HasPrefix(m.point, state+"/") || strings.HasPrefix(m.point, "/run/netns/cni-") {
			points = append(points, m.point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
	return os.RemoveAll(state)
}

// exited reports the first of the node's processes to exit.
func (n *node) exited() <-chan error {
	out := make(chan error, 1)
	for _, c := range n.children {
		go func(c *child) {
			if err, ok := <-c.exited; ok {
				out <- fmt.Errorf("%s exited: %v (log: %s)", c.name, err, c.log)
			}
		}(c)
	}
	return out
}

func writeContainerdConfig(dir, state, socket string, major int) error {
	cni := filepath.Join(state, "cni")
	// CNI: one bridge with host-local addresses from this node's pod range, and portmap.
	conflist := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "ebb",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(cni, "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conflist, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cni, "net.d", "10-ebb.conflist"), data, 0o644); err != nil {
		return err
	}
	// Every path is the node's own.
	root, opt := filepath.Join(state, "containerd", "root"), filepath.Join(state, "containerd", "opt")
	runState, conf := filepath.Join(state, "containerd", "state"), filepath.Join(cni, "net.d")
	var config string
	if major >= 2 {
		config = fmt.Sprintf(containerdConfig2, root, runState, socket, opt, pauseImage, cniBinDir(), conf)
	} else {
		config = fmt.Sprintf(containerdConfig16, root, runState, socket, opt, pauseImage, cniBinDir(), conf)
	}
	return os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(config), 0o644)
}

// containerdConfig2 is containerd 2's configuration (version 4: the CRI plugin split into
// runtime and images), importing nothing from the host's /etc/containerd. Without
// CAP_SYS_RESOURCE (this VM) runc cannot lower oom_score_adj: keep it.
const containerdConfig2 = `version = 4
root = %[1]q
state = %[2]q
imports = []
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[plugins."io.containerd.server.v1.grpc"]
  address = %[3]q

[plugins."io.containerd.server.v1.ttrpc"]
  address = "%[3]s.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %[5]q

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%[6]q]
    conf_dir = %[7]q
`

// containerdConfig16 is containerd 1.6's (Debian 12's, the fallback; format version 2).
const containerdConfig16 = `version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`

// containerdMajor is the major version `containerd --version` reports ("containerd
// github.com/containerd/containerd/v2 v2.4.2 ..." or "containerd github.com/containerd/containerd
// 1.6.20~ds1 ...").
func containerdMajor(ctx context.Context, binary string) (int, error) {
	out, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return 0, fmt.Errorf("%s --version: %w", binary, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return 0, fmt.Errorf("%s --version: unexpected %q", binary, out)
	}
	version := strings.TrimPrefix(fields[2], "v")
	major, err := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	if err != nil {
		return 0, fmt.Errorf("%s --version: no version in %q", binary, out)
	}
	return major, nil
}

// cniBinDir is where Debian's containernetworking-plugins puts the plugins.
func cniBinDir() string {
	for _, dir := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if _, err := os.Stat(filepath.Join(dir, "bridge")); err == nil {
			return dir
		}
	}
	return "/usr/lib/cni"
}

// importImages imports every OCI archive of --images into containerd's k8s.io namespace.
func importImages(ctx context.Context, o options, socket string) error {
	if o.images == "" {
		return errors.New("--node needs --images DIR (OCI archives; .ci/images builds them, pause.tar included)")
	}
	archives, err := filepath.Glob(filepath.Join(o.images, "*.tar"))
	if err != nil {
		return err
	}
	if len(archives) == 0 {
		return fmt.Errorf("no image archive (*.tar) in %s", o.images)
	}
	for _, archive := range archives {
		out, err := exec.CommandContext(ctx, o.ctr, "--address", socket, "-n", "k8s.io", "images", "import",
			"--no-unpack=false", archive).CombinedOutput()
		if err != nil {
			return fmt.Errorf("import %s: %v: %s", archive, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func writeKubeletConfig(dir, state, nodeIP, socket, cgroupRoot string, f pkiFiles) error {
	// Pods get no cluster DNS (nothing ebb installs resolves a name: clients use the
	// `kubernetes` Service's address from their environment); their resolv.conf is this.
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("options ndots:1\n"), 0o644); err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 hosts are deprecated in 1.35, still supported on request.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
failSwapOn: false
containerRuntimeEndpoint: unix://%s
address: %s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: %s
tlsPrivateKeyFile: %s
# As on any cluster: callers prove who they are (a client certificate of the cluster's CA, or a
# token the API server reviews) and the API server decides what they may do (SubjectAccessReview
# as the node, which the Node authorizer allows).
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
clusterDNS: []
resolvConf: %s
evictionHard: {memory.available: "1Mi", nodefs.available: "0%%", imagefs.available: "0%%", nodefs.inodesFree: "0%%", imagefs.inodesFree: "0%%"}
# Images are imported, never pulled: a collected one could not come back.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
makeIPTablesUtilChains: false
protectKernelDefaults: false
serializeImagePulls: false
volumePluginDir: %s
`, cgroupRoot, socket, nodeIP, f.kubeletServingCert, f.kubeletServingKey, f.ca, resolv,
		filepath.Join(state, "kubelet-plugins"))
	return os.WriteFile(filepath.Join(dir, "kubelet.yaml"), []byte(config), 0o644)
}

func writeKubeProxyConfig(dir string) error {
	healthz, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
clusterCIDR: %s
hostnameOverride: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
# 0: leave the conntrack sysctls as they are (they are not this namespace's to set).
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, filepath.Join(dir, "kube-proxy.kubeconfig"), clusterCIDR, nodeName, healthz, metrics)
	return os.WriteFile(filepath.Join(dir, "kube-proxy.yaml"), []byte(config), 0o644)
}

// startProcess starts a program that is not this binary (containerd) the way startChild does.
func startProcess(ctx context.Context, logFile, program string, args ...string) (*child, error) {
	path, err := exec.LookPath(program)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (.ci/run installs it)", program, err)
	}
	c, err := startChild(ctx, path, logFile, args)
	if c != nil {
		c.name = filepath.Base(program)
	}
	return c, err
}

// waitFor polls check until it succeeds, the child exits or the timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, c *child, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-c.exited:
			return fmt.Errorf("exited before ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %s: %v", timeout, last)
}

// waitNodeReady waits until the Node reports Ready (kubelet registered it, the runtime and
// the network are up).
func waitNodeReady(ctx context.Context, server string, f pkiFiles, timeout time.Duration, kubelet *child) error {
	client, err := adminClient(f, false)
	if err != nil {
		return err
	}
	return waitFor(ctx, timeout, kubelet, func() error {
		resp, err := client.Get(server + "/api/v1/nodes/" + nodeName)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET node: %d", resp.StatusCode)
		}
		var node struct {
			Status struct {
				Conditions []struct{ Type, Status, Message string }
			}
		}
		if err := json.Unmarshal(body, &node); err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == "Ready" {
				if c.Status == "True" {
					return nil
				}
				return fmt.Errorf("node not Ready: %s", c.Message)
			}
		}
		return errors.New("node has no Ready condition yet")
	})
}

// adminClient is an HTTP client with the admin's certificate, trusting the cluster's CA.
func adminClient(f pkiFiles, insecure bool) (*http.Client, error) {
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(f.ca)
	if err != nil {
		return nil, err
	}
	pool.AppendCertsFromPEM(caPEM)
	admin, err := tls.LoadX509KeyPair(f.adminCert, f.adminKey)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{admin}, InsecureSkipVerify: insecure,
		}},
	}, nil
}
