//go:build e2e

// Package e2e is dnsplane's end-to-end suite: the product as users run it. It drives clusters only
// through their kubeconfigs (kubectl's view: objects, conditions, Events) and DNS (what `dig`
// sees), so the same tests run against
//
//   - `make e2e`: clusters this harness makes itself. Each one is `bin/manager --local` as a
//     separate process (its own etcd, kube-apiserver and kube-controller-manager, started by the
//     manager as `make run` does) with its embedded DNS server on 127.0.0.1N:<shared port>, and
//     one real PowerDNS on loopback as the shared "cloud";
//   - `make e2e-kind` (hack/e2e-kind.sh): kind clusters running config/default, passed in with
//     E2E_KUBECONFIGS, E2E_DNS_ADDRS and the E2E_PDNS_* variables.
//
// Environment (all optional; without E2E_KUBECONFIGS the harness makes its own clusters):
//
//	E2E_KUBECONFIGS    comma list of kubeconfig paths, one per cluster (2 or 3; the geo tags are
//	                   eu, us, ap in that order and owner IDs cluster-<geo>)
//	E2E_DNS_ADDRS      comma list of each cluster's embedded DNS server, host:port, as the test
//	                   process reaches it
//	E2E_PDNS_API_URL, E2E_PDNS_API_KEY, E2E_PDNS_DNS_ADDR
//	                   a PowerDNS reachable from the managers and this process (default: start
//	                   one with hack/pdns.sh)
//	E2E_KILL_CMD, E2E_RESTART_CMD
//	                   with E2E_KUBECONFIGS: shell commands that SIGKILL and restart cluster
//	                   $E2E_CLUSTER's manager (KUBECONFIG is set); hack/e2e-kind.sh sets them
//	E2E_KEEP           keep the work directory (manager logs, control-plane data) after the run
package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/harness"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// Timing of the managers this harness starts (and that hack/e2e-kind.sh passes to its managers).
const (
	heartbeatInterval  = 2 * time.Second
	heartbeatThreshold = 10 * time.Second
	gslbInterval       = time.Second
	gslbPeerTimeout    = 500 * time.Millisecond
)

var geos = []string{"eu", "us", "ap"}

// env is the whole test bed.
type env struct {
	root     string // work directory (local mode)
	repo     string
	local    bool // clusters made by this harness
	clusters []*cluster
	pdns     pdnsServer
	pdnsDir  string // set when this harness started PowerDNS
	pdnsProc *hackrun.PDNS
}

type pdnsServer struct {
	APIURL, Key, DNSAddr string
}

// cluster is one cluster: how to reach its API server and DNS server, and (local mode) its
// manager process.
type cluster struct {
	idx     int
	geo     string
	ownerID string
	dnsAddr string // the embedded DNS server, as this process reaches it
	glueIP  string // the glue address its zones get ("" when unknown, e.g. a pod IP)

	mu     sync.Mutex
	kcfg   string
	client client.Client

	// local mode
	dir        string
	args       []string
	logPath    string
	probeAddr  string
	proc       *harness.Process // nil before the first start and after kill
	restarts   int
	scheme     *runtime.Scheme
	remoteKill string // env mode
	remoteUp   string
}

var suite *env

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) (code int) {
	// The suite's clients log through controller-runtime: errors only, to stderr.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	e := &env{}
	suite = e
	// Ctrl-C or SIGTERM: stop everything we started before exiting.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigc
		fmt.Fprintf(os.Stderr, "e2e: %v: stopping every process\n", s)
		e.teardown()
		os.Exit(130)
	}()
	start := time.Now()
	if err := e.setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		e.dumpLogs(os.Stderr, 60)
		e.teardown()
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: test bed ready in %s: %d clusters, PowerDNS dns %s api %s\n",
		time.Since(start).Round(100*time.Millisecond), len(e.clusters), e.pdns.DNSAddr, e.pdns.APIURL)
	code = m.Run()
	if err := e.secretScan(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if err := e.teardown(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e teardown: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func (e *env) setup() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	e.repo = filepath.Dir(wd) // e2e/ is one level below the repo root
	if kc := os.Getenv("E2E_KUBECONFIGS"); kc != "" {
		return e.setupFromEnv(kc)
	}
	e.local = true
	if e.root, err = os.MkdirTemp("", "dnsplane-e2e-"); err != nil {
		return err
	}
	if err := e.startPDNS(); err != nil {
		return err
	}
	return e.startLocalClusters(3)
}

func (e *env) setupFromEnv(kc string) error {
	cfgs := splitList(kc)
	addrs := splitList(os.Getenv("E2E_DNS_ADDRS"))
	if len(addrs) != len(cfgs) {
		return fmt.Errorf("E2E_DNS_ADDRS has %d entries, E2E_KUBECONFIGS %d", len(addrs), len(cfgs))
	}
	if len(cfgs) < 2 || len(cfgs) > len(geos) {
		return fmt.Errorf("E2E_KUBECONFIGS: want 2 or 3 clusters, got %d", len(cfgs))
	}
	e.pdns = pdnsServer{APIURL: os.Getenv("E2E_PDNS_API_URL"), Key: os.Getenv("E2E_PDNS_API_KEY"), DNSAddr: os.Getenv("E2E_PDNS_DNS_ADDR")}
	if e.pdns.APIURL == "" {
		var err error
		if e.root, err = os.MkdirTemp("", "dnsplane-e2e-"); err != nil {
			return err
		}
		if err := e.startPDNS(); err != nil {
			return err
		}
	}
	for i, path := range cfgs {
		c := &cluster{idx: i, geo: geos[i], ownerID: "cluster-" + geos[i], dnsAddr: addrs[i], kcfg: path,
			scheme: newScheme(), remoteKill: os.Getenv("E2E_KILL_CMD"), remoteUp: os.Getenv("E2E_RESTART_CMD")}
		if err := c.connect(); err != nil {
			return fmt.Errorf("cluster %s: %w", c.geo, err)
		}
		e.clusters = append(e.clusters, c)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = dnsv1.AddToScheme(s)
	return s
}

// --- PowerDNS, through hack/pdns.sh (internal/testing/hackrun, as pdnstest) ---

func (e *env) startPDNS() error {
	p, err := hackrun.StartPDNS(context.Background(), e.repo, filepath.Join(e.root, "pdns"), fmt.Sprintf("e2e-key-%d", time.Now().UnixNano()))
	if err != nil {
		return err
	}
	e.pdnsProc, e.pdnsDir = p, p.Dir
	e.pdns = pdnsServer{APIURL: p.APIURL, Key: p.Key, DNSAddr: p.DNSAddr}
	return nil
}

// --- local clusters: bin/manager --local, one process each ---

func (e *env) startLocalClusters(n int) error {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("127.0.0.1%d", i+1)
	}
	p, err := ports.Shared(hosts...)
	if err != nil {
		return err
	}
	port := strconv.Itoa(p)
	manager := filepath.Join(e.repo, "bin", "manager")
	if _, err := os.Stat(manager); err != nil {
		return fmt.Errorf("%s: %w (make e2e builds it)", manager, err)
	}
	for i := range n {
		c := &cluster{idx: i, geo: geos[i], ownerID: "cluster-" + geos[i], glueIP: hosts[i],
			dnsAddr: net.JoinHostPort(hosts[i], port), dir: filepath.Join(e.root, geos[i]), scheme: newScheme()}
		c.kcfg = filepath.Join(c.dir, "kubeconfig")
		c.logPath = filepath.Join(e.root, "manager-"+c.geo+".log")
		metrics, err1 := ports.Free()
		probe, err2 := ports.Free()
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		c.probeAddr = "127.0.0.1:" + strconv.Itoa(probe)
		var peers []string
		for j := range n {
			if j != i {
				peers = append(peers, geos[j]+"="+net.JoinHostPort(hosts[j], port))
			}
		}
		c.args = []string{manager,
			"--local", "--local-dir=" + c.dir,
			"--local-dns-addr=" + c.dnsAddr,
			"--owner-id=" + c.ownerID,
			"--geo-tag=" + c.geo,
			"--ext-gslb-clusters=" + strings.Join(peers, ","),
			"--heartbeat-interval=" + heartbeatInterval.String(),
			"--heartbeat-threshold=" + heartbeatThreshold.String(),
			"--gslb-interval=" + gslbInterval.String(),
			"--gslb-peer-timeout=" + gslbPeerTimeout.String(),
			"--soa-poll-interval=2s",
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
			"--health-probe-bind-address=" + c.probeAddr,
			// Debug logs: the secret scan (secretScan) reads them.
			"--zap-log-level=debug",
		}
		// E2E_MANAGER_ARGS adds flags to every manager, e.g. "--zap-log-level=debug".
		c.args = append(c.args, strings.Fields(os.Getenv("E2E_MANAGER_ARGS"))...)
		e.clusters = append(e.clusters, c)
	}
	// Start them side by side, as three users would.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range e.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(e.repo)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// start runs the manager process and waits until its kubeconfig is written and /readyz answers.
func (c *cluster) start(repo string) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	// The kubeconfig is rewritten on each start (new ports, new certificates): wait for the new one.
	_ = os.Remove(c.kcfg)
	// Fresh metrics and probe ports on every start: a port free at the first start may be taken
	// (an ephemeral client port) by the time of a restart.
	metrics, err1 := ports.Free()
	probe, err2 := ports.Free()
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	c.probeAddr = "127.0.0.1:" + strconv.Itoa(probe)
	for i, a := range c.args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			c.args[i] = "--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics)
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			c.args[i] = "--health-probe-bind-address=" + c.probeAddr
		}
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "\n===== e2e: start #%d at %s: %s\n", c.restarts, time.Now().Format(time.RFC3339Nano), strings.Join(c.args, " "))
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Dir = repo // the control-plane binaries are found in ./bin, as with `make run`
	// harness.Start closes the log once the process has exited.
	p, err := harness.Start(cmd, logf)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.proc = p
	c.restarts++
	c.mu.Unlock()
	kubeconfig := func() error { _, err := os.Stat(c.kcfg); return err }
	if err := p.WaitReady(context.Background(), 3*time.Minute, "http://"+c.probeAddr+"/readyz", kubeconfig); err != nil {
		return fmt.Errorf("manager %s: %w (log %s)", c.geo, err, c.logPath)
	}
	return c.connect()
}

func (c *cluster) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kcfg)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.Timeout = 15 * time.Second
	cl, err := client.New(cfg, client.Options{Scheme: c.scheme})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.client = cl
	c.mu.Unlock()
	return nil
}

// C is the cluster's client (renewed on restart: a local control plane gets new ports).
func (c *cluster) C() client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

func (c *cluster) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	return c.proc.Pid()
}

// kill SIGKILLs the manager, as `kill -9` or an OOM kill would: its control plane keeps running,
// orphaned, until the next start reaps it (the apiserver stays reachable meanwhile).
func (c *cluster) kill(t *testing.T) {
	t.Helper()
	if !suite.local {
		c.runRemote(t, c.remoteKill, "E2E_KILL_CMD")
		return
	}
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p == nil {
		t.Fatalf("manager %s is not running", c.geo)
	}
	if err := p.Kill(testrun.HangTimeout); err != nil {
		t.Fatalf("kill manager %s: %v", c.geo, err)
	}
	c.mu.Lock()
	c.proc = nil
	c.mu.Unlock()
	// A test that fails while this cluster is down leaves it running for the next ones.
	t.Cleanup(func() {
		if c.pid() == 0 {
			if err := c.start(suite.repo); err != nil {
				t.Errorf("restart manager %s after the test: %v", c.geo, err)
			}
		}
	})
}

// restart starts the manager again on the same --local-dir and waits until it is ready.
func (c *cluster) restart(t *testing.T) {
	t.Helper()
	if !suite.local {
		c.runRemote(t, c.remoteUp, "E2E_RESTART_CMD")
		return
	}
	if c.pid() != 0 {
		t.Fatalf("manager %s is still running", c.geo)
	}
	if err := c.start(suite.repo); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) runRemote(t *testing.T, command, name string) {
	t.Helper()
	if command == "" {
		t.Skipf("%s is not set: cannot kill or restart managers of these clusters", name)
	}
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kcfg, "E2E_CLUSTER="+strconv.Itoa(c.idx), "E2E_GEO="+c.geo)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s for %s: %v\n%s", name, c.geo, err, out)
	}
	if err := c.connect(); err != nil {
		t.Fatal(err)
	}
}

// stop ends a manager the polite way (SIGTERM: it stops its control plane), SIGKILL after 45s.
func (c *cluster) stop() error {
	c.mu.Lock()
	p := c.proc
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	if err := p.Stop(45 * time.Second); err != nil {
		return fmt.Errorf("manager %s: %w", c.geo, err)
	}
	return nil
}

var teardownOnce sync.Once

// teardown stops every manager (and so its control plane), reaps control-plane processes that a
// SIGKILLed manager left behind (by the PIDs in <local-dir>/localcp.pid), stops PowerDNS, and
// then checks that no process naming the work directory is left.
func (e *env) teardown() (err error) {
	teardownOnce.Do(func() {
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range e.clusters {
			if !e.local {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				harness.ReapPIDFile(c.dir)
			}()
		}
		wg.Wait()
		if e.pdnsProc != nil {
			if err := e.pdnsProc.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if e.root != "" {
			if left := harness.ProcessesNaming(e.root); len(left) > 0 {
				names := make([]string, len(left))
				for i, p := range left {
					names[i] = p.String()
				}
				errs = append(errs, fmt.Errorf("processes left running: %s", strings.Join(names, "; ")))
				for _, p := range left {
					_ = syscall.Kill(p.PID, syscall.SIGKILL)
				}
			} else {
				fmt.Fprintf(os.Stderr, "e2e: teardown: no manager, etcd, kube-apiserver, kube-controller-manager or pdns_server left under %s\n", e.root)
			}
			if os.Getenv("E2E_KEEP") != "" {
				fmt.Fprintf(os.Stderr, "e2e: kept %s\n", e.root)
			} else {
				_ = os.RemoveAll(e.root)
			}
		}
		err = errors.Join(errs...)
	})
	return err
}

// --- ports ---

// --- failure output ---

// dumpLogs writes the tail of every manager's log.
func (e *env) dumpLogs(w interface{ Write([]byte) (int, error) }, lines int) {
	for _, c := range e.clusters {
		if c.logPath == "" {
			continue
		}
		fmt.Fprintf(w, "----- last %d lines of %s\n%s\n", lines, c.logPath, tail(c.logPath, lines))
	}
}

func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		ring = append(ring, sc.Text())
		if len(ring) > n {
			ring = ring[1:]
		}
	}
	return strings.Join(ring, "\n")
}

// onFailure registers the dump of every cluster's dnsplane objects, their conditions and recent
// Events, and the managers' log tails, for when t fails.
func onFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var b strings.Builder
		dumpObjects(&b)
		suite.dumpLogs(&b, 40)
		t.Log("\n" + b.String())
	})
}

func dumpObjects(b *strings.Builder) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range suite.clusters {
		fmt.Fprintf(b, "===== cluster %s (%s, dns %s)\n", c.geo, c.ownerID, c.dnsAddr)
		cl := c.C()
		var zones dnsv1.DNSZoneList
		if err := cl.List(ctx, &zones); err != nil {
			fmt.Fprintf(b, "  list DNSZones: %v\n", err)
		}
		for _, o := range zones.Items {
			fmt.Fprintf(b, "  DNSZone %s/%s zone=%s zoneID=%s ns=%v%s\n", o.Namespace, o.Name, o.Spec.Zone, o.Status.ZoneID, o.Status.NameServers, conds(o.Status.Conditions))
		}
		var eps dnsv1.DNSEndpointList
		if err := cl.List(ctx, &eps); err != nil {
			fmt.Fprintf(b, "  list DNSEndpoints: %v\n", err)
		}
		for _, o := range eps.Items {
			plan := ""
			if o.Status.Plan != nil {
				plan = o.Status.Plan.ID
			}
			fmt.Fprintf(b, "  DNSEndpoint %s/%s strategy=%s plan=%s applied=%s%s\n", o.Namespace, o.Name, o.Spec.Strategy, plan, o.Status.AppliedPlan, conds(o.Status.Conditions))
		}
		var recs dnsv1.DNSRecordList
		if err := cl.List(ctx, &recs); err != nil {
			fmt.Fprintf(b, "  list DNSRecords: %v\n", err)
		}
		for _, o := range recs.Items {
			fmt.Fprintf(b, "  DNSRecord %s/%s rootHost=%s owners=%+v%s\n", o.Namespace, o.Name, o.Spec.RootHost, o.Status.Owners, conds(o.Status.Conditions))
		}
		var gslbs dnsv1.GslbList
		if err := cl.List(ctx, &gslbs); err != nil {
			fmt.Fprintf(b, "  list Gslbs: %v\n", err)
		}
		for _, o := range gslbs.Items {
			fmt.Fprintf(b, "  Gslb %s/%s health=%v records=%v peers=%+v%s\n", o.Namespace, o.Name, o.Status.ServiceHealth, o.Status.HealthyRecords, o.Status.Peers, conds(o.Status.Conditions))
		}
		for _, ev := range recentEvents(ctx, cl, 15) {
			fmt.Fprintf(b, "  Event %s\n", ev)
		}
	}
}

func conds(cs []metav1Condition) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n      %s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func recentEvents(ctx context.Context, cl client.Client, n int) []string {
	var list corev1EventList
	if err := cl.List(ctx, &list); err != nil {
		return []string{err.Error()}
	}
	sort.Slice(list.Items, func(i, j int) bool { return eventTime(list.Items[i]).Before(eventTime(list.Items[j])) })
	var out []string
	for _, ev := range list.Items {
		if ev.Source.Component == "" && ev.ReportingController == "" {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s %s/%s %s: %s", eventTime(ev).Format("15:04:05"), ev.Type, ev.InvolvedObject.Kind,
			ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason, ev.Message))
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
