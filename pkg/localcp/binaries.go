package localcp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The versions hack/envtest-bins.sh builds, naming the version cache directories.
const (
	KubernetesVersion = "v1.37.2"
	EtcdVersion       = "v3.6.16"
)

// ErrBinaryNotFound is returned (wrapped) by Start when a control-plane binary is in none of the
// binary directories.
var ErrBinaryNotFound = errors.New("control-plane binary not found")

// Component names: the binaries' names, and the names of their log files.
const (
	etcdName       = "etcd"
	apiServerName  = "kube-apiserver"
	controllerName = "kube-controller-manager"
)

// DefaultBinDirs returns where Start looks for binaries when Options.BinDirs is empty: bin/ in the
// working directory, then the version cache that hack/envtest-bins.sh fills,
// ${XDG_CACHE_HOME:-~/.cache}/dnsplane/{kubernetes-v1.37.2,etcd-v3.6.16}.
func DefaultBinDirs() []string {
	dirs := []string{"bin"}
	if cache, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs,
			filepath.Join(cache, "dnsplane", "kubernetes-"+KubernetesVersion),
			filepath.Join(cache, "dnsplane", "etcd-"+EtcdVersion))
	}
	return dirs
}

// binaries are the absolute paths of the control-plane binaries.
type binaries struct {
	etcd, apiServer, controllerManager string
}

// findBinaries looks each binary up in dirs, in order; the first executable file wins.
func findBinaries(dirs []string) (binaries, error) {
	var b binaries
	for name, dst := range map[string]*string{
		etcdName:       &b.etcd,
		apiServerName:  &b.apiServer,
		controllerName: &b.controllerManager,
	} {
		p, err := findBinary(name, dirs)
		if err != nil {
			return binaries{}, err
		}
		*dst = p
	}
	return b, nil
}

func findBinary(name string, dirs []string) (string, error) {
	for _, dir := range dirs {
		p, err := filepath.Abs(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is in none of %q; build the binaries with hack/envtest-bins.sh",
		ErrBinaryNotFound, name, dirs)
}
