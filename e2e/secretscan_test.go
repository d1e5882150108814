//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/secretscan"
)

// secretScan is the suite's last check (internal/testing/secretscan): no value of any Secret
// that any cluster holds (the PowerDNS API key the tests gave each cluster among them) appears in
// a manager's log, an Event, the status of a DNSZone, DNSEndpoint, DNSRecord or Gslb, or (for
// the managers this harness started) a manager's /metrics. The logs are the managers' files in
// local mode and the logs of their Pods (label control-plane=controller-manager) on kind. It
// returns what it found, values masked, or nil; it also reports how much it looked at.
func (e *env) secretScan() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := secretscan.New()
	var errs []error
	var logBytes, scrapes int
	// First every cluster's Secrets, so that every text is checked against every value.
	for _, c := range e.clusters {
		var secrets corev1.SecretList
		if err := c.C().List(ctx, &secrets); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: list Secrets: %w", c.geo, err))
			continue
		}
		for i := range secrets.Items {
			s.AddSecret(&secrets.Items[i])
		}
	}
	for _, c := range e.clusters {
		if err := secretscan.Sweep(ctx, c.C(), s, &dnsv1.DNSZoneList{}, &dnsv1.DNSEndpointList{}, &dnsv1.DNSRecordList{}, &dnsv1.GslbList{}); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.geo, err))
		}
		logs, err := c.managerLogs(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: manager logs: %w", c.geo, err))
		}
		for where, text := range logs {
			logBytes += len(text)
			s.Check(where, text)
		}
		if addr := c.metricsAddr(); addr != "" {
			text, err := get(ctx, "http://"+addr+"/metrics")
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster %s: /metrics: %w", c.geo, err))
			}
			scrapes++
			s.Check("metrics of manager "+c.geo, text)
		}
	}
	fmt.Fprintf(os.Stderr, "e2e: secret scan: %d needles, %d bytes of manager logs, %d /metrics scrapes\n", s.Needles(), logBytes, scrapes)
	return errors.Join(append(errs, s.Err())...)
}

// managerLogs returns the cluster's manager logs by where they come from: its log file (local
// mode), or each container's log of each manager Pod.
func (c *cluster) managerLogs(ctx context.Context) (map[string]string, error) {
	if c.logPath != "" {
		b, err := os.ReadFile(c.logPath)
		return map[string]string{"log of manager " + c.geo: string(b)}, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kcfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	// The chart's label, and config/default's.
	for _, sel := range []string{"app.kubernetes.io/name=dnsplane", "control-plane=controller-manager"} {
		if err := podLogs(ctx, cs, sel, out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// podLogs adds the log of every container of every Pod that selector selects to out.
func podLogs(ctx context.Context, cs kubernetes.Interface, selector string, out map[string]string) error {
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		for _, ct := range p.Spec.Containers {
			b, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ct.Name}).DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("logs of %s/%s %s: %w", p.Namespace, p.Name, ct.Name, err)
			}
			out["log of Pod "+p.Namespace+"/"+p.Name+" "+ct.Name] = string(b)
		}
	}
	return nil
}

// metricsAddr is the --metrics-bind-address of a manager this harness started, else "".
func (c *cluster) metricsAddr() string {
	for _, a := range c.args {
		if v, ok := strings.CutPrefix(a, "--metrics-bind-address="); ok {
			return v
		}
	}
	return ""
}

// get returns the body of a GET of url.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return string(b), err
}
