package localcp

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const pollInterval = 100 * time.Millisecond

func newClient(cfg *rest.Config) (client.Client, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// waitForDefaultNamespace waits until the API server has bootstrapped (on a fresh etcd it creates
// the default namespace some time after /healthz turns OK).
func waitForDefaultNamespace(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	c, err := newClient(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		return c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{}) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("wait for namespace default: %w", err)
	}
	return nil
}

// installCRDs creates or updates the CRDs found in paths and the given ones (copied, so the
// caller's stay untouched), then waits until every one is Established and its resources are in
// discovery.
func installCRDs(ctx context.Context, cfg *rest.Config, paths []string, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	if len(paths) == 0 && len(crds) == 0 {
		return nil
	}
	copies := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, crd := range crds {
		copies[i] = crd.DeepCopy()
	}
	installed, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              paths,
		CRDs:               copies,
		ErrorIfPathMissing: true,
		MaxTime:            timeout,
		PollInterval:       pollInterval,
	})
	if err != nil {
		return fmt.Errorf("install CRDs: %w", err)
	}
	c, err := newClient(cfg)
	if err != nil {
		return err
	}
	for _, crd := range installed {
		err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
				return false, nil //nolint:nilerr // not there yet
			}
			return established(&got), nil
		})
		if err != nil {
			return fmt.Errorf("wait for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// writeKubeconfig writes a kubeconfig for cfg's server and client certificate, atomically and
// readable by the owner only.
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b, 0o600)
}
