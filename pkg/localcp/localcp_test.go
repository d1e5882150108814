package localcp

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
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// The stale-process test re-runs this test binary as a manager that starts a control plane and
// is then SIGKILLed; these variables make it do so.
const (
	helperDirEnv = "LOCALCP_TEST_HELPER_DIR"
	helperBinEnv = "LOCALCP_TEST_HELPER_BIN"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperDirEnv); dir != "" {
		runHelper(dir, os.Getenv(helperBinEnv))
		return
	}
	// controller-runtime's own log (envtest, client) is not what these tests check.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}

// runHelper starts a control plane, says READY and waits to be killed.
func runHelper(dir, bin string) {
	ctrllog.SetLogger(logr.Discard())
	_, err := Start(context.Background(), Options{Dir: dir, BinDirs: []string{bin}, Log: logr.Discard()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	select {}
}

// binDir returns <repo>/bin, failing the test when the control-plane binaries are not there.
func binDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod above %s", wd)
		}
		root = parent
	}
	bin := filepath.Join(root, "bin")
	if _, err := findBinaries([]string{bin}); err != nil {
		t.Fatalf("control-plane binaries missing; run hack/envtest-bins.sh first: %v", err)
	}
	return bin
}

func startPlane(t *testing.T, dir string) (*ControlPlane, time.Duration) {
	t.Helper()
	began := time.Now()
	cp, err := Start(t.Context(), Options{Dir: dir, BinDirs: []string{binDir(t)}, Log: testr.New(t)})
	if err != nil {
		t.Fatalf("Start(%s): %v", dir, err)
	}
	took := time.Since(began)
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return cp, took
}

func clientFor(t *testing.T, cp *ControlPlane) client.Client {
	t.Helper()
	c, err := newClient(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestStart_RestartKeepsObjects(t *testing.T) {
	dir := t.TempDir()
	cp, cold := startPlane(t, dir)
	c := clientFor(t, cp)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "survivor", Namespace: "default"},
		Data:       map[string]string{"k": "v"},
	}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := cp.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, pidFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PID file after a clean stop: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, runDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run dir (certificates) after a clean stop: %v, want it removed", err)
	}

	cp2, warm := startPlane(t, dir)
	t.Logf("start times: cold %s, restart %s", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	var got corev1.ConfigMap
	if err := clientFor(t, cp2).Get(t.Context(), client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatalf("ConfigMap after restart: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("ConfigMap data after restart = %v, want k=v", got.Data)
	}
	for _, c := range []string{etcdName, apiServerName, controllerName} {
		if fi, err := os.Stat(filepath.Join(dir, logsDir, c+".log")); err != nil || fi.Size() == 0 {
			t.Errorf("log of %s: %v (want a non-empty file)", c, err)
		}
	}
}

func widgetCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:                   "object",
					XPreserveUnknownFields: new(true),
				}},
			}},
		},
	}
}

const gadgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.file.example.test
spec:
  group: file.example.test
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestStart_InstallsCRDsEstablished installs CRDs from a manifest directory and from memory,
// on a fresh directory and again (as updates) on a restart, and returns only once they are
// Established; the caller's CRD objects stay untouched.
func TestStart_InstallsCRDsEstablished(t *testing.T) {
	dir, crdDir, bin := t.TempDir(), t.TempDir(), binDir(t)
	if err := os.WriteFile(filepath.Join(crdDir, "gadgets.yaml"), []byte(gadgetCRDYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	inMemory := widgetCRD("mem.example.test")
	for _, run := range []string{"fresh", "restart"} {
		cp, err := Start(t.Context(), Options{
			Dir: dir, BinDirs: []string{bin}, Log: testr.New(t),
			CRDPaths: []string{crdDir}, CRDs: []*apiextensionsv1.CustomResourceDefinition{inMemory},
		})
		if err != nil {
			t.Fatalf("%s Start: %v", run, err)
		}
		t.Cleanup(func() { _ = cp.Stop() })
		c := clientFor(t, cp)
		for _, name := range []string{"gadgets.file.example.test", "widgets.mem.example.test"} {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &crd); err != nil {
				t.Fatalf("%s: CRD %s: %v", run, name, err)
			}
			if !established(&crd) {
				t.Errorf("%s: CRD %s not Established when Start returned: %+v", run, name, crd.Status.Conditions)
			}
		}
		if inMemory.ResourceVersion != "" || len(inMemory.Status.Conditions) != 0 {
			t.Errorf("%s: Start modified the caller's CRD: rv=%q", run, inMemory.ResourceVersion)
		}
		if err := cp.Stop(); err != nil {
			t.Fatalf("%s Stop: %v", run, err)
		}
	}
}

func TestStart_NamespaceDeletionCompletes(t *testing.T) {
	cp, _ := startPlane(t, t.TempDir())
	c := clientFor(t, cp)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inside", Namespace: ns.Name}}
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	// Without the namespace controller the namespace stays Terminating forever.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 90*time.Second, true,
		func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			return apierrors.IsNotFound(err), nil
		})
	if err != nil {
		t.Fatalf("namespace %s still there after 90s: %v", ns.Name, err)
	}
}

func TestStart_TwoDirsSideBySide(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	a, _ := startPlane(t, dirA)
	b, _ := startPlane(t, dirB)

	if a.KubeconfigPath() == b.KubeconfigPath() || a.Config().Host == b.Config().Host {
		t.Fatalf("control planes share a kubeconfig or server: %s %s, %s %s",
			a.KubeconfigPath(), a.Config().Host, b.KubeconfigPath(), b.Config().Host)
	}
	// Each kubeconfig file reaches its own control plane only.
	only := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a", Namespace: "default"}}
	if err := clientFor(t, a).Create(t.Context(), only); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cp   *ControlPlane
		want bool
	}{{a, true}, {b, false}} {
		cfg, err := clientcmd.BuildConfigFromFlags("", tc.cp.KubeconfigPath())
		if err != nil {
			t.Fatalf("load %s: %v", tc.cp.KubeconfigPath(), err)
		}
		c, err := newClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Get(t.Context(), client.ObjectKeyFromObject(only), &corev1.ConfigMap{})
		if found := err == nil; found != tc.want || (err != nil && !apierrors.IsNotFound(err)) {
			t.Errorf("through %s: ConfigMap found=%v err=%v, want found=%v", tc.cp.KubeconfigPath(), found, err, tc.want)
		}
	}

	t.Run("SameDirIsRefused", func(t *testing.T) {
		_, err := Start(t.Context(), Options{Dir: dirA, BinDirs: []string{binDir(t)}, Log: testr.New(t)})
		if !errors.Is(err, ErrDirInUse) {
			t.Fatalf("second Start on a live dir: %v, want ErrDirInUse", err)
		}
	})
}

// TestStart_StaleProcessesAreReaped kills a manager (a helper process running Start) with SIGKILL,
// as a terminal's kill -9 would: kube-controller-manager dies with it (Pdeathsig), etcd and
// kube-apiserver are orphaned, and the next Start on the same dir stops them and resumes.
func TestStart_StaleProcessesAreReaped(t *testing.T) {
	dir, bin := t.TempDir(), binDir(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperDirEnv+"="+dir, helperBinEnv+"="+bin)
	var stderr strings.Builder
	helper.Stderr = &stderr
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line) == "READY"
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = helper.Wait()
			t.Fatalf("helper did not start its control plane: %s", stderr.String())
		}
	case <-time.After(5 * time.Minute):
		_ = helper.Process.Kill()
		t.Fatalf("helper not ready after 5m: %s", stderr.String())
	}

	stale, err := readPIDFile(dir)
	if err != nil || len(stale) != 3 {
		_ = helper.Process.Kill()
		t.Fatalf("PID file of the helper: %v %+v, want 3 processes", err, stale)
	}
	t.Cleanup(func() { // never leave an orphan behind, whatever the outcome
		for _, p := range stale {
			if alive(p.PID) {
				_ = terminate(p.PID, 5*time.Second)
			}
		}
	})
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	for _, p := range stale {
		switch p.Component {
		case controllerName:
			if !waitGone(p.PID, 10*time.Second) {
				t.Errorf("%s (pid %d) outlived its parent: Pdeathsig not set?", p.Component, p.PID)
			}
		default:
			if !alive(p.PID) {
				t.Fatalf("%s (pid %d) died with the helper: nothing left to reap, the test proves nothing", p.Component, p.PID)
			}
		}
	}

	cp, _ := startPlane(t, dir)
	for _, p := range stale {
		if alive(p.PID) {
			t.Errorf("stale %s (pid %d) still runs after a new Start", p.Component, p.PID)
		}
	}
	if err := clientFor(t, cp).List(t.Context(), &corev1.NamespaceList{}); err != nil {
		t.Errorf("resumed control plane does not answer: %v", err)
	}
}

// TestReapStale_LeavesForeignProcessesAlone pins that a PID file naming a process that is not
// ours (PID reused, another binary, another dir) never gets it killed.
func TestReapStale_LeavesForeignProcessesAlone(t *testing.T) {
	dir := t.TempDir()
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	info, err := readProc(sleeper.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	pid := sleeper.Process.Pid
	records := []proc{
		{Component: etcdName, PID: pid, Exe: "/nonexistent/etcd", StartTime: info.startTime}, // other binary
		{Component: etcdName, PID: pid, Exe: info.args[0], StartTime: info.startTime + 1},    // PID reused
		{Component: etcdName, PID: pid, Exe: info.args[0], StartTime: info.startTime},        // dir not named
	}
	if err := writePIDFile(dir, records); err != nil {
		t.Fatal(err)
	}
	if err := reapStale(testr.New(t), dir, time.Second); err != nil {
		t.Fatalf("reapStale: %v", err)
	}
	if !alive(pid) {
		t.Fatal("reapStale killed a process that is not ours")
	}
	if _, err := os.Stat(filepath.Join(dir, pidFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("PID file after reaping: %v, want it removed", err)
	}
}

// TestStart_CancelledStartLeavesNoProcess cancels the context while etcd and kube-apiserver are
// starting: Start fails and no process of the directory survives.
func TestStart_CancelledStartLeavesNoProcess(t *testing.T) {
	dir, bin := t.TempDir(), binDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	cp, err := Start(ctx, Options{Dir: dir, BinDirs: []string{bin}, Log: testr.New(t)})
	if err == nil {
		_ = cp.Stop()
		t.Skip("the control plane started within 1.5s; nothing was cancelled")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Start with a cancelled context: %v, want context.DeadlineExceeded", err)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmdline), dir+"/") {
			t.Errorf("pid %d of %s survived the cancelled start: %q", pid, dir, cmdline)
			_ = terminate(pid, time.Second)
		}
	}
}

func TestStart_MissingBinariesNameTheScript(t *testing.T) {
	_, err := Start(t.Context(), Options{Dir: t.TempDir(), BinDirs: []string{t.TempDir()}})
	if !errors.Is(err, ErrBinaryNotFound) || !strings.Contains(err.Error(), "hack/envtest-bins.sh") {
		t.Fatalf("Start without binaries: %v, want ErrBinaryNotFound naming hack/envtest-bins.sh", err)
	}
}

// TestLockDir_InUseNamesTheHoldersPID: after `kill -9` of make, the manager
// keeps running and holds the directory; the next start must say which PID holds it (the owner
// recorded in localcp.pid), not only that the directory is in use.
func TestLockDir_InUseNamesTheHoldersPID(t *testing.T) {
	dir := t.TempDir()
	held, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Close() }()
	if err := writePIDFile(dir, nil); err != nil {
		t.Fatal(err)
	}
	_, err = lockDir(dir) // a second open file description: flock refuses it, as for another process
	if !errors.Is(err, ErrDirInUse) {
		t.Fatalf("second lock: %v, want ErrDirInUse", err)
	}
	for _, want := range []string{"PID " + strconv.Itoa(os.Getpid()), filepath.Join(dir, pidFile), "kill " + strconv.Itoa(os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
