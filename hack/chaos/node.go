package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/harness"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// node is one member's manager process, run as the member's own user.
type node struct {
	idx      int
	name     string
	user     string
	uid, gid uint32
	dir      string // owned by the user: the local control plane, zones, kubeconfig
	dnsAddr  string
	peers    string // --ext-gslb-clusters
	repo     string // the control-plane binaries are found in its bin/
	manager  string
	timing   timing
	logPath  string

	mu    sync.Mutex
	proc  *harness.Process
	start int
}

// timing is the Gslb timing every member runs with.
type timing struct {
	Interval, Timeout time.Duration // healthCheck intervalSeconds, timeoutSeconds
	Failure           int           // healthCheck failureThreshold
	Reconcile         time.Duration // --gslb-interval
	PeerTimeout       time.Duration // --gslb-peer-timeout
}

// kubeconfig is the path of the member's local kubeconfig.
func (n *node) kubeconfig() string { return filepath.Join(n.dir, "local", "kubeconfig") }

// args is the manager's command line with fresh metrics and probe ports and the clock offset.
func (n *node) args(skew time.Duration) ([]string, string, error) {
	metrics, err1 := ports.Free()
	probe, err2 := ports.Free()
	if err := errors.Join(err1, err2); err != nil {
		return nil, "", err
	}
	probeAddr := "127.0.0.1:" + strconv.Itoa(probe)
	args := []string{n.manager, "--local", "--local-dir=" + filepath.Join(n.dir, "local"),
		"--local-dns-addr=" + n.dnsAddr, "--owner-id=cluster-" + n.name, "--geo-tag=" + n.name,
		"--ext-gslb-clusters=" + n.peers,
		"--gslb-interval=" + n.timing.Reconcile.String(), "--gslb-peer-timeout=" + n.timing.PeerTimeout.String(),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics), "--health-probe-bind-address=" + probeAddr,
		"--zap-log-level=info"}
	if skew != 0 {
		args = append(args, "--gslb-clock-offset="+skew.String())
	}
	return args, probeAddr, nil
}

// run starts the manager as the member's user (its own session) and waits until /readyz
// answers and the kubeconfig is written.
func (n *node) run(ctx context.Context, skew time.Duration) error {
	args, probeAddr, err := n.args(skew)
	if err != nil {
		return err
	}
	_ = os.Remove(n.kubeconfig()) // rewritten on each start: wait for the new one
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.start++
	fmt.Fprintf(logf, "\n===== chaos: start #%d at %s: %s\n", n.start, time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	n.mu.Unlock()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = n.repo
	cmd.Env = []string{"HOME=" + n.dir, "TMPDIR=" + n.dir, "PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: n.uid, Gid: n.gid, Groups: []uint32{}}}
	p, err := harness.Start(cmd, logf)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	kc := func() error { _, err := os.Stat(n.kubeconfig()); return err }
	if err := p.WaitReady(ctx, 5*time.Minute, "http://"+probeAddr+"/readyz", kc); err != nil {
		return fmt.Errorf("manager %s: %w (log %s)", n.name, err, n.logPath)
	}
	return nil
}

// kill SIGKILLs the manager, as an OOM kill would; its control plane keeps running until the
// next start reaps it.
func (n *node) kill() error {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Kill(30 * time.Second)
}

// stop ends the manager politely (SIGTERM, SIGKILL after 15 s).
func (n *node) stop() {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p != nil {
		_ = p.Stop(15 * time.Second)
	}
}
