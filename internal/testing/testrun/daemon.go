package testrun

import (
	"bytes"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Daemon is a server process a test started (Start): its combined output and whether it
// exited.
type Daemon struct {
	out    bytes.Buffer
	exited chan error
}

// Start starts cmd with its output captured and stops it when the test ends: SIGTERM, then
// SIGKILL after 10 s. When the test failed, the cleanup logs the output.
func Start(t testing.TB, cmd *exec.Cmd) *Daemon {
	t.Helper()
	d := &Daemon{exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &d.out, &d.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", cmd.Path, d.out.String())
		}
	})
	return d
}

// Exited returns an error with the process's output once it has exited, nil while it runs.
// The output is read only after the process is gone, when nothing writes it any more.
func (d *Daemon) Exited() error {
	select {
	case err := <-d.exited:
		d.exited <- err
		return fmt.Errorf("exited: %v\n%s", err, d.out.String())
	default:
		return nil
	}
}
