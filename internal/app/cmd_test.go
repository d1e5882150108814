package app

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnsplane/dnsplane/internal/testing/harness"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/internal/version"
)

// runMainEnv, when set in a child of this test binary, makes TestMain_VersionPrintsAndExitsZero
// run Main with the space-separated arguments it holds, and exit with its code, as the manager
// binary's main does.
const runMainEnv = "DNSPLANE_TEST_RUN_MAIN_ARGS"

// TestMain_VersionPrintsAndExitsZero: `manager --version` prints one line,
// "dnsplane <version> (revision <rev>, <goversion>)", and exits 0 before any other flag is
// validated or anything starts: here with an invalid --local-dns-addr beside it, and --local,
// which would otherwise start a control plane in --local-dir. It runs Main itself, in a child
// of the test binary, so the exit code is Main's.
func TestMain_VersionPrintsAndExitsZero(t *testing.T) {
	if args, ok := os.LookupEnv(runMainEnv); ok {
		os.Exit(Main(strings.Fields(args)))
	}
	for _, args := range [][]string{
		{"--version"},
		{"-version"},
		{"--local", "--local-dir=" + t.TempDir(), "--local-dns-addr=not-a-host-port", "--version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMain_VersionPrintsAndExitsZero$")
			cmd.Env = append(os.Environ(), runMainEnv+"="+strings.Join(args, " "))
			cmd.Dir = dir // --local-dir's default, .dnsplane, would land here
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil {
				t.Fatalf("%v: %v, want exit 0; stderr: %s", args, err, stderr.String())
			}
			if want := version.Get().String() + "\n"; stdout.String() != want {
				t.Errorf("%v printed %q, want exactly %q", args, stdout.String(), want)
			}
			if stderr.Len() != 0 {
				t.Errorf("%v wrote to stderr: %s", args, stderr.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%v created %d entries in the working directory", args, len(entries))
			}
		})
	}
}

// TestParseFlags_VersionSkipsValidation: --version parses with values that would otherwise be
// refused.
func TestParseFlags_VersionSkipsValidation(t *testing.T) {
	o, _, err := parseFlags([]string{"--soa-poll-interval=0s", "--pprof-bind-address=:6060", "--version"})
	if err != nil || !o.version {
		t.Fatalf("parseFlags with --version: version=%v, err=%v; want true, nil", o.version, err)
	}
	if _, _, err := parseFlags([]string{"--soa-poll-interval=0s"}); err == nil {
		t.Fatal("--soa-poll-interval=0s without --version was accepted")
	}
}

// runLocalEnv, when set in a child of this test binary, makes TestMain_LocalStopsAtAnyMoment run
// Main with --local in the directory it names, and exit with its code.
const runLocalEnv = "DNSPLANE_TEST_RUN_LOCAL_DIR"

// TestMain_LocalStopsAtAnyMoment: `manager --local` told to stop (SIGTERM, as
// a terminal's Ctrl-C sends SIGINT) at any moment of its start exits, and leaves no process of
// its control plane behind, with exit code 0: while the control plane starts, right after it is
// up (the manager building and syncing its caches: it could wait for them for ever, its API
// server stopped under it), and once ready. Once the manager runs, its control plane stops after
// it (the log's order). It runs Main in a child of the test binary, in the repository root as
// `make run` does (the control plane's binaries are in bin/), so the signal goes through Main's
// own handling. The deadline only catches a hang.
func TestMain_LocalStopsAtAnyMoment(t *testing.T) {
	if dir, ok := os.LookupEnv(runLocalEnv); ok {
		os.Exit(Main([]string{"--local", "--local-dir=" + dir, "--local-dns-addr=127.0.0.1:0",
			"--metrics-bind-address=0", "--health-probe-bind-address=" + os.Getenv(runLocalEnv+"_PROBE")}))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("control-plane binaries missing; run hack/envtest-bins.sh first: %v", err)
		}
	}
	const hang = 3 * time.Minute
	for _, c := range []struct {
		name string
		// when returns once the moment to signal has come.
		when func(t *testing.T, dir, probe string)
	}{
		// The control plane's log directory is made after Main's signal handler is set up
		// (a signal before that kills the child by its default action, which is not the case
		// under test) and before any of its processes is up. A fixed sleep raced the child's
		// start on a busy machine (a cold CI at load 47: the signal came first).
		{"while the control plane starts", func(t *testing.T, dir, _ string) {
			testrun.Eventually(t, hang, "the control plane's log directory is made", func() error {
				_, err := os.Stat(filepath.Join(dir, "logs"))
				return err
			})
		}},
		{"as soon as the control plane is up", func(t *testing.T, dir, _ string) {
			testrun.Eventually(t, hang, "the kubeconfig is written", func() error {
				_, err := os.Stat(filepath.Join(dir, "kubeconfig"))
				return err
			})
		}},
		{"once ready", func(t *testing.T, _, probe string) {
			testrun.Eventually(t, hang, "/readyz answers 200", func() error {
				resp, err := http.Get("http://" + probe + "/readyz")
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
		}},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(c.name+", "+sig.String(), func(t *testing.T) {
				dir := t.TempDir()
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				probe := l.Addr().String()
				_ = l.Close()
				cmd := exec.Command(os.Args[0], "-test.run=^TestMain_LocalStopsAtAnyMoment$")
				cmd.Env = append(os.Environ(), runLocalEnv+"="+dir, runLocalEnv+"_PROBE="+probe)
				cmd.Dir = root
				var out bytes.Buffer
				p, err := harness.Start(cmd, &out)
				if err != nil {
					t.Fatal(err)
				}
				c.when(t, dir, probe)
				signalled := time.Now()
				if err := p.Signal(sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-p.Exited():
					t.Logf("exited %s after the signal: %v", time.Since(signalled).Round(time.Millisecond), p.Err())
					if err := p.Err(); err != nil {
						t.Errorf("exit: %v, want 0 (a stop asked for is no failure); output:\n%s", err, out.String())
					}
				case <-time.After(hang):
					_ = p.Kill(hang)
					t.Fatalf("still running %s after %s; its output:\n%s", hang, sig, out.String())
				}
				// Once the manager runs, the control plane stops after it: its API server went away
				// under the manager before (localcp stopped at the signal too), and caches that had
				// not synced then never did.
				log := out.String()
				managerDone := strings.Index(log, "Wait completed, proceeding to shutdown the manager")
				if strings.Contains(log, `"starting manager"`) {
					if i := strings.Index(log, "context done, stopping local control plane"); i >= 0 {
						t.Errorf("the control plane stopped at the signal, beside the manager; output:\n%s", log)
					}
					if stopped := strings.LastIndex(log, "local control plane stopped"); managerDone < 0 || stopped < managerDone {
						t.Errorf("the control plane did not stop after the manager (manager done at %d, control plane stopped at %d); output:\n%s", managerDone, stopped, log)
					}
				}
				for _, left := range harness.ProcessesNaming(dir + "/") {
					t.Errorf("pid %d of %s survived the manager: %s", left.PID, dir, left.Cmdline)
				}
			})
		}
	}
}

// TestSetGCPercent_DefaultsAndTheEnvironmentWins: the manager runs its collector at
// GOGC=defaultGCPercent (30) unless GOGC is in its environment.
func TestSetGCPercent_DefaultsAndTheEnvironmentWins(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "100")
	setGCPercent(logr.Discard())
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100 in the environment the percent is %d, want 100", got)
	}
	if err := os.Unsetenv("GOGC"); err != nil { // t.Setenv restores it at cleanup
		t.Fatal(err)
	}
	setGCPercent(logr.Discard())
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("without GOGC the percent is %d, want %d", got, defaultGCPercent)
	}
}
