package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dnsplane/dnsplane/internal/testing/harness"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// controller is one tool running as a separate process.
type controller struct {
	proc     *harness.Process
	readyURL string
}

// controllerArgs returns the command line of tool in world w. equal: both get
// --kube-api-qps=1000 --kube-api-burst=1000. Every listener is on 127.0.0.1.
func controllerArgs(c config, w *world, tool string, equal bool) (args []string, readyURL string, err error) {
	metrics, err1 := ports.Free()
	probe, err2 := ports.Free()
	dns, err3 := ports.Free()
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, "", err
	}
	if tool == toolDNSPlane {
		args = []string{filepath.Join(c.bin, "manager"),
			"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
			"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
			"--local-dns-addr=127.0.0.1:" + strconv.Itoa(dns),
			"--local-dir=" + filepath.Join(w.dir, "manager"),
			"--owner-id=bench"}
		args = append(args, c.dnsplaneArgs...)
		readyURL = "http://127.0.0.1:" + strconv.Itoa(probe) + "/readyz"
	} else {
		args = []string{filepath.Join(c.bin, "external-dns"),
			"--source=crd", "--crd-source-apiversion=externaldns.k8s.io/v1alpha1", "--crd-source-kind=DNSEndpoint",
			"--provider=pdns", "--pdns-server=" + w.proxyURL, "--pdns-api-key=" + w.pdns.key,
			"--registry=txt", "--txt-owner-id=bench", "--interval=10s", "--policy=sync", // v0.22 wants --policy set
			"--kubeconfig=" + w.kubeconfig, "--metrics-address=127.0.0.1:" + strconv.Itoa(metrics)}
		for j := range zones {
			args = append(args, "--domain-filter="+zoneName(j))
		}
		readyURL = "http://127.0.0.1:" + strconv.Itoa(metrics) + "/healthz"
	}
	if equal {
		args = append(args, "--kube-api-qps=1000", "--kube-api-burst=1000")
	}
	return args, readyURL, nil
}

// startController starts tool in w, its output to <w.dir>/<tool>.log. The command line holds
// the run's throw-away PowerDNS key; it is never logged.
func startController(c config, w *world, tool string, equal bool) (*controller, error) {
	args, readyURL, err := controllerArgs(c, w, tool, equal)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(w.dir, tool+".log"))
	if err != nil {
		return nil, fmt.Errorf("controller log: %w", err)
	}
	if err := dropCached(args[0]); err != nil {
		return nil, fmt.Errorf("start %s: %w", tool, err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.kubeconfig)
	if tool == toolDNSPlane {
		cmd.Env = append(cmd.Env, c.dnsplaneEnv...) // last wins
	}
	// harness.Start closes the log once the process has exited.
	p, err := harness.Start(cmd, logFile)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", tool, err)
	}
	return &controller{proc: p, readyURL: readyURL}, nil
}

// alive returns an error once the process has exited.
func (ctl *controller) alive() error {
	if err := ctl.proc.Alive(); err != nil {
		return fmt.Errorf("controller %w (see its log)", err)
	}
	return nil
}

// waitReady waits until the controller's health endpoint answers 200 (each probe 1 s); it fails
// at once when the controller exits.
func (ctl *controller) waitReady(ctx context.Context, timeout time.Duration) error {
	if err := ctl.proc.WaitReady(ctx, timeout, ctl.readyURL, nil); err != nil {
		return fmt.Errorf("controller: %w (see its log)", err)
	}
	return nil
}

// stop sends SIGTERM to the controller's PID, SIGKILL after grace, and waits for it.
func (ctl *controller) stop(grace time.Duration) error {
	if err := ctl.proc.Stop(grace); err != nil {
		return fmt.Errorf("controller %w", err)
	}
	return nil
}

// memory returns the process's VmRSS and VmHWM (peak RSS) in MiB, from /proc/<pid>/status.
func (ctl *controller) memory() (rss, hwm float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", ctl.proc.Pid()))
	if err != nil {
		return 0, 0, fmt.Errorf("process status: %w", err)
	}
	defer func() { _ = f.Close() }()
	return parseProcStatus(bufio.NewScanner(f))
}

// parseProcStatus reads VmRSS and VmHWM ("VmHWM:   123456 kB") in MiB from a /proc/<pid>/status
// scanner; a missing field is an error.
func parseProcStatus(s *bufio.Scanner) (rss, hwm float64, err error) {
	found := 0
	for s.Scan() {
		key, val, ok := strings.Cut(s.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s %q: %w", key, val, err)
		}
		if key == "VmRSS" {
			rss = kb / 1024
		} else {
			hwm = kb / 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("VmRSS or VmHWM missing from /proc/<pid>/status")
	}
	return rss, hwm, s.Err()
}

// dropCached writes back path's dirty pages and drops the file from the page cache
// (posix_fadvise(2) POSIX_FADV_DONTNEED; pages no process maps), so that every run starts its
// tool's binary as a node does, read from disk. The peak RSS counts the binary's mapped pages,
// and how many one fault maps depends on how the page cache holds the file (Linux maps whole
// large folios): right after go build wrote it, dnsplane's file-backed RSS at 1,000 endpoints
// was 70-76 MiB, read from disk 54 MiB, while external-dns's, built long before, was 68 MiB
// either way.
func dropCached(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	return nil
}
