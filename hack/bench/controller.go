package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/ports"
)

// controller is one tool running as a separate process.
type controller struct {
	cmd      *exec.Cmd
	logFile  *os.File
	readyURL string
	done     chan struct{}
	err      error // the process's exit, once done is closed
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
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+w.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", tool, err)
	}
	ctl := &controller{cmd: cmd, logFile: logFile, readyURL: readyURL, done: make(chan struct{})}
	go func() {
		ctl.err = cmd.Wait()
		close(ctl.done)
	}()
	return ctl, nil
}

// alive returns an error once the process has exited.
func (ctl *controller) alive() error {
	select {
	case <-ctl.done:
		return fmt.Errorf("controller (pid %d) exited: %v (see its log)", ctl.cmd.Process.Pid, ctl.err)
	default:
		return nil
	}
}

// waitReady waits until the controller's health endpoint answers 200 (each probe 1 s).
func (ctl *controller) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		if err := ctl.alive(); err != nil {
			return err
		}
		if resp, err := client.Get(ctl.readyURL); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s", ctl.readyURL, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the controller's PID, SIGKILL after grace, and waits for it.
func (ctl *controller) stop(grace time.Duration) error {
	defer func() { _ = ctl.logFile.Close() }()
	if ctl.alive() != nil {
		return nil
	}
	_ = ctl.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ctl.done:
		return nil
	case <-time.After(grace):
	}
	_ = ctl.cmd.Process.Kill()
	<-ctl.done
	return fmt.Errorf("controller (pid %d) ignored SIGTERM for %s: killed", ctl.cmd.Process.Pid, grace)
}

// memory returns the process's VmRSS and VmHWM (peak RSS) in MiB, from /proc/<pid>/status.
func (ctl *controller) memory() (rss, hwm float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", ctl.cmd.Process.Pid))
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
