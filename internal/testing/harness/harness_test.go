package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// start starts bash -c script with $0 the test's temp dir, and its log there; the test's cleanup
// kills what is left.
func start(t *testing.T, script string) (*Process, string) {
	t.Helper()
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(exec.Command("bash", "-c", script, dir), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(testrun.HangTimeout) })
	return p, dir
}

// sleeper ends a script of start: a sleep whose command line names the dir.
const sleeper = `exec -a "$0/sleeper" sleep 600`

// waitSleeper waits until ProcessesNaming(dir) finds p, and only p, as the sleeper.
func waitSleeper(t *testing.T, p *Process, dir string) {
	t.Helper()
	testrun.Eventually(t, time.Minute, "ProcessesNaming finds the sleeper", func() error {
		if got := ProcessesNaming(dir); len(got) != 1 || got[0].PID != p.Pid() || got[0].Cmdline != dir+"/sleeper 600" {
			return fmt.Errorf("ProcessesNaming(%s) = %v, want only pid %d as %s/sleeper 600", dir, got, p.Pid(), dir)
		}
		return nil
	})
}

func TestProcess_StopEndsAPoliteProcessWithSIGTERM(t *testing.T) {
	p, dir := start(t, "echo started; "+sleeper)
	if err := p.Alive(); err != nil {
		t.Fatalf("Alive = %v, want nil while it runs", err)
	}
	waitSleeper(t, p, dir)
	if err := p.Stop(testrun.HangTimeout); err != nil {
		t.Fatalf("Stop: %v, want nil (sleep ends at SIGTERM)", err)
	}
	if p.Alive() == nil || p.Err() == nil || !strings.Contains(p.Err().Error(), "terminated") {
		t.Errorf("after Stop: Alive %v, Err %v; want an exit by SIGTERM", p.Alive(), p.Err())
	}
	if got := ProcessesNaming(dir); len(got) != 0 {
		t.Errorf("ProcessesNaming after Stop = %v, want none", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "started\n" {
		t.Errorf("log = %q, want the process's output", b)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop of an exited process: %v, want nil", err)
	}
}

func TestProcess_StopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	p, dir := start(t, `trap "" TERM; echo ready; `+sleeper)
	testrun.Eventually(t, time.Minute, "the process ignores SIGTERM", func() error {
		if b, _ := os.ReadFile(filepath.Join(dir, "log")); string(b) != "ready\n" {
			return fmt.Errorf("log %q", b)
		}
		return nil
	})
	err := p.Stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "ignored SIGTERM") {
		t.Fatalf("Stop: %v, want an error saying SIGKILL was needed", err)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process exited")
	}
}

func TestProcess_Kill(t *testing.T) {
	p, _ := start(t, sleeper)
	if err := p.Kill(testrun.HangTimeout); err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Alive after Kill = %v, want an exit by SIGKILL", err)
	}
}

func TestProcess_WaitReady(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	defer cancel()

	p, dir := start(t, sleeper)
	marker := filepath.Join(dir, "ready")
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = os.WriteFile(marker, nil, 0o600)
	}()
	if err := p.WaitReady(ctx, testrun.HangTimeout, ok.URL, func() error { _, err := os.Stat(marker); return err }); err != nil {
		t.Fatalf("WaitReady: %v, want nil once the file exists and the URL answers 200", err)
	}

	exits, _ := start(t, "exit 3")
	if err := exits.WaitReady(ctx, testrun.HangTimeout, ok.URL, func() error { return os.ErrNotExist }); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("WaitReady of a process that exits: %v, want its exit", err)
	}

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	if err := p.WaitReady(ctx, 300*time.Millisecond, notFound.URL, nil); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("WaitReady of a URL answering 404: %v, want the status named once the deadline passes", err)
	}
}

func TestReapPIDFile_EndsTheRecordedProcessesNamingTheDir(t *testing.T) {
	p, dir := start(t, sleeper)
	other, otherDir := start(t, sleeper) // recorded, but does not name dir: left alone
	waitSleeper(t, p, dir)
	waitSleeper(t, other, otherDir)
	// As pkg/localcp writes it (json.MarshalIndent).
	record := fmt.Sprintf("{\n  \"owner\": 1,\n  \"processes\": [\n    {\n      \"name\": \"etcd\",\n      \"pid\": %d\n    },\n    {\n      \"name\": \"kube-apiserver\",\n      \"pid\": %d\n    }\n  ]\n}\n", p.Pid(), other.Pid())
	if err := os.WriteFile(filepath.Join(dir, "localcp.pid"), []byte(record), 0o600); err != nil {
		t.Fatal(err)
	}
	ReapPIDFile(dir)
	select {
	case <-p.Exited():
	case <-time.After(testrun.HangTimeout):
		t.Fatal("the recorded process naming the dir still runs")
	}
	if err := other.Alive(); err != nil {
		t.Errorf("a recorded process that does not name the dir was ended: %v", err)
	}
	ReapPIDFile(t.TempDir()) // no file: nothing to do
}
