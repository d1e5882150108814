package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process started by Start. Its methods are safe for concurrent use.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's result, set before exited is closed
}

// Start starts cmd with its standard output and error written to log, and closes log (when it
// is an io.Closer) once the process has exited. On error log is closed too and nothing runs.
func Start(cmd *exec.Cmd, log io.Writer) (*Process, error) {
	closeLog := func() {
		if c, ok := log.(io.Closer); ok {
			_ = c.Close()
		}
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		closeLog()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		closeLog()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed once the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process ended (exec.Cmd.Wait's error: nil for exit status 0); nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Alive returns nil while the process runs, and an error naming its PID and exit once it has
// exited.
func (p *Process) Alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("pid %d exited: %v", p.Pid(), p.state())
	default:
		return nil
	}
}

// state is the exit as exec.Cmd.ProcessState prints it ("exit status 1", "signal: killed").
func (p *Process) state() any {
	if p.cmd.ProcessState != nil {
		return p.cmd.ProcessState
	}
	return p.err
}

// Signal sends sig to the process.
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stop ends the process the polite way: SIGTERM, then SIGKILL when it still runs after grace;
// it returns once the process has exited. The error says that SIGKILL was needed; a process
// that had already exited is no error.
func (p *Process) Stop(grace time.Duration) error {
	if p.Alive() != nil {
		return nil
	}
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("pid %d ignored SIGTERM for %s: killed", p.Pid(), grace)
}

// Kill SIGKILLs the process, as `kill -9` or an OOM kill would, and waits at most timeout (a
// hang deadline) for it to exit.
func (p *Process) Kill(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL pid %d: %w", p.Pid(), err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("pid %d still running %s after SIGKILL", p.Pid(), timeout)
	}
}

// WaitReady waits until ready, when not nil, returns nil and url answers 200 (each request 1 s),
// polling every 200 ms. It fails at once when the process exits, and when timeout (a hang
// deadline) passes or ctx ends first; the error then names url and ready's last error.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, url string, ready func() error) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		if err := p.Alive(); err != nil {
			return fmt.Errorf("%w during its start", err)
		}
		var err error
		if ready != nil {
			err = ready()
		}
		if err == nil {
			err = httpOK(hc, url)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d not ready within %s: %w", p.Pid(), timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// httpOK GETs url and wants status 200.
func httpOK(hc *http.Client, url string) error {
	resp, err := hc.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}
