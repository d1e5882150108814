package app_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// The environment of the test binary re-executed as the leader of TestReplicas_LeaderKilled.
const (
	leaderKubeconfigEnv = "DNSPLANE_TEST_LEADER_KUBECONFIG"
	leaderHostEnv       = "DNSPLANE_TEST_LEADER_HOST"
	// killZone is the zone the leader process creates, with killRecords A records.
	killZone    = "kill.test"
	killRecords = 50
)

func TestMain(m *testing.M) {
	if kc := os.Getenv(leaderKubeconfigEnv); kc != "" {
		if err := runLeader(kc, os.Getenv(leaderHostEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "leader process:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// killName returns the i-th name of killZone and its address.
func killName(i int) (name, ip string) {
	return fmt.Sprintf("k%d.%s", i, killZone), fmt.Sprintf("192.0.2.%d", i+1)
}

// runLeader is the separate leader process: a replica of replicaConfig on host against the API
// server of kubeconfig. Once it leads, it creates killZone with killRecords records, prints
// "PUBLISHED <zone ID>", and runs until it is killed.
func runLeader(kubeconfig, host string) error {
	log := zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.InfoLevel))
	ctrllog.SetLogger(log)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	c := replicaConfig(cfg, host)
	c.Log = log
	ctx := context.Background()
	a, err := app.New(ctx, c)
	if err != nil {
		return fmt.Errorf("app.New: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	select {
	case <-a.Manager.Elected():
	case err := <-done:
		return fmt.Errorf("manager stopped before it led: %w", err)
	}
	for a.ZoneSync.Ready(nil) != nil { // the zone store loaded from its objects
		time.Sleep(100 * time.Millisecond)
	}
	id, err := publishKillZone(a)
	if err != nil {
		return err
	}
	fmt.Println("PUBLISHED " + id)
	return <-done
}

// publishKillZone creates killZone through a's local provider and publishes its records, in at
// most a minute; it returns the zone's provider ID.
func publishKillZone(a *app.App) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zone, err := a.Local.EnsureZone(ctx, provider.ZoneSpec{Name: killZone, CallerReference: "kill"})
	if err != nil {
		return "", fmt.Errorf("ensure zone %s: %w", killZone, err)
	}
	var changes []provider.Change
	for i := range killRecords {
		changes = append(changes, aSet(killName(i)))
	}
	if err := a.Local.ApplyChanges(ctx, zone.ID, changes); err != nil {
		return "", fmt.Errorf("publish %d records in %s: %w", killRecords, killZone, err)
	}
	return zone.ID, nil
}

// writeKubeconfig writes a kubeconfig of cfg (envtest's admin: host, CA, client certificate)
// into dir and returns its path.
func writeKubeconfig(t *testing.T, cfg *rest.Config, dir string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("write kubeconfig: %v", err)
	}
	return path
}

// startLeaderProcess re-executes the test binary as runLeader on host and waits (at most two
// minutes) for it to say PUBLISHED; it returns the process and the zone's ID. The process is killed at cleanup if it still runs; its log
// is in the test's log when the test fails.
func startLeaderProcess(t *testing.T, cfg *rest.Config, host string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), leaderKubeconfigEnv+"="+writeKubeconfig(t, cfg, dir), leaderHostEnv+"="+host)
	logPath := filepath.Join(dir, "leader.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the leader process: %v", err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("leader process log:\n%s", tail(string(b), 60))
		}
	})
	id := waitLine(t, stdout, "PUBLISHED ", 2*time.Minute)
	return cmd, id
}

// waitLine reads r until a line that starts with prefix and returns the rest of that line,
// failing the test after timeout or at EOF; the rest of r is drained in the background.
func waitLine(t *testing.T, r io.Reader, prefix string, timeout time.Duration) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		ok := false
		for sc.Scan() {
			if rest, has := strings.CutPrefix(sc.Text(), prefix); has && !ok {
				ok = true
				found <- rest
			}
		}
		close(found)
	}()
	select {
	case rest, ok := <-found:
		if !ok {
			t.Fatalf("the leader process ended before it said %q", prefix)
		}
		return rest
	case <-time.After(timeout):
		t.Fatalf("the leader process did not say %q within %s", prefix, timeout)
	}
	return ""
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestReplicas_LeaderKilled: every replica serves through a SIGKILL of the leader: the leader is
// a separate OS process (this test binary re-executed, runLeader on 127.0.0.33), the follower
// runs in the test (127.0.0.34), both with replicaConfig on one envtest API server. During a
// steady query loop against the follower for every name the leader published, the leader gets
// SIGKILL (no lease release, no store flush): every answer must be NOERROR with the name's
// address (no REFUSED, SERVFAIL, timeout or wrong address), and once the follower leads, a new
// record published through it is answered. The takeover time and the answer counts are logged.
func TestReplicas_LeaderKilled(t *testing.T) {
	usableLoopback(t, "127.0.0.33", "127.0.0.34")
	cfg := envtest.Start(t, "../..")
	dnsService(t, cfg)
	leader, zoneID := startLeaderProcess(t, cfg, "127.0.0.33")
	follower := startReplica(t, cfg, "127.0.0.34")
	if follower.leads() {
		t.Fatal("the follower leads while the leader process runs")
	}
	names := map[string]string{}
	for i := range killRecords {
		name, ip := killName(i)
		names[name] = ip
	}
	testrun.Eventually(t, time.Minute, "the follower answers every published name", func() error {
		for name, ip := range names {
			if err := answered(follower.addr, name, ip); err != nil {
				return err
			}
		}
		return nil
	})
	loop := followerLoop(t, follower.addr, names)
	time.Sleep(500 * time.Millisecond) // some answers before the kill, for the record
	killed := time.Now()
	if err := leader.Process.Kill(); err != nil {
		t.Fatalf("SIGKILL the leader process: %v", err)
	}
	_ = leader.Wait()
	testrun.Eventually(t, 2*time.Minute, "the follower leads", func() error {
		if !follower.leads() {
			return fmt.Errorf("not yet, %s after the kill", time.Since(killed).Round(time.Millisecond))
		}
		return nil
	})
	takeover := time.Since(killed)
	publish(t, follower, zoneID, aSet("after."+killZone, "198.51.100.1"))
	testrun.Eventually(t, 10*time.Second, "the new leader answers its new record", func() error {
		return answered(follower.addr, "after."+killZone, "198.51.100.1")
	})
	loop.Stop()
	t.Logf("SIGKILL of the leader process: the follower led %s later; its answers through the kill and the takeover: %s",
		takeover.Round(time.Millisecond), loop)
	checkLoop(t, loop)
}
