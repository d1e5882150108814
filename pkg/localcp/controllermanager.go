package localcp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// controllers are the only kube-controller-manager controllers the local control plane runs:
// owner-reference cascading deletion and namespace deletion. There are no nodes, pods or
// service-account tokens to manage.
const controllers = "garbage-collector-controller,namespace-controller"

// controllerManager is a running kube-controller-manager that Start launched itself.
type controllerManager struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited and been reaped
}

// startControllerManager starts kube-controller-manager on a free loopback port and waits until
// its /healthz answers. It retries with another port when the process exits early (the port may
// have been taken between picking and binding it).
func startControllerManager(ctx context.Context, path, kubeconfig string, out *os.File, timeout time.Duration) (*controllerManager, error) {
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cm, err := launchControllerManager(path, kubeconfig, port, out)
		if err != nil {
			return nil, err
		}
		err = cm.waitHealthy(ctx, port, timeout)
		if err == nil {
			return cm, nil
		}
		_ = cm.stop(5 * time.Second)
		if !errors.Is(err, errExitedEarly) {
			return nil, err
		}
		lastErr = err
	}
	return nil, lastErr
}

var errExitedEarly = errors.New("exited before it was healthy")

func launchControllerManager(path, kubeconfig string, port int, out *os.File) (*controllerManager, error) {
	cmd := exec.Command(path,
		"--kubeconfig="+kubeconfig,
		"--controllers="+controllers,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so a terminal's Ctrl-C reaches the manager, which stops the
		// control plane in order; and killed with us if we die without stopping it.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", controllerName, err)
	}
	cm := &controllerManager{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(cm.done)
	}()
	return cm, nil
}

func (cm *controllerManager) waitHealthy(ctx context.Context, port int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The controller manager serves a self-signed certificate on loopback; only its health
	// is read here, nothing is sent.
	hc := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	defer hc.CloseIdleConnections()
	url := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/healthz"
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := hc.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-cm.done:
			return fmt.Errorf("%s %w (%s)", controllerName, errExitedEarly, cm.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("wait for %s /healthz: %w", controllerName, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits for the exit.
func (cm *controllerManager) stop(grace time.Duration) error {
	if cm == nil {
		return nil
	}
	pgid := -cm.cmd.Process.Pid
	select {
	case <-cm.done:
		return nil
	default:
	}
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-cm.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-cm.done
	return fmt.Errorf("%s did not stop within %s; killed", controllerName, grace)
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
