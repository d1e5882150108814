package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nodePorts returns the dns Service's type and its ports as "53:30053/UDP" (":0" without a node
// port), in order.
func nodePorts(ctx context.Context, t *testing.T, c client.Client) (corev1.ServiceType, []string) {
	t.Helper()
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: releaseName + "-dns"}, &svc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol))
	}
	return svc.Spec.Type, out
}

// TestHelmUpgradeSwitchesTheDNSServiceType: the dns Service switched between types, with the real
// helm against a real API server (which allocates node ports as a cluster's does): helm upgrade
// patches with a strategic merge patch, whose merge key for Service ports is the port number
// alone, so that switching the dns Service from ClusterIP to NodePort with a fixed node port
// gives it to the first port only and the API server a random one to TCP
// (kubernetes/kubernetes#105610). The chart refuses that upgrade with the workaround (delete the
// Service first) instead of leaving TCP on another node port; NodePort to ClusterIP, and a
// NodePort whose node port Kubernetes chooses, upgrade in place.
func TestHelmUpgradeSwitchesTheDNSServiceType(t *testing.T) {
	helmBin(t)
	kc, c := startHelmEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := []string{"--kubeconfig", kc, "--namespace", releaseNS}
	nodePort := []string{"--set", "dns.service.type=NodePort", "--set", "dns.service.nodePort=30053"}
	clusterIP := []string{"--set", "dns.service.type=ClusterIP"}
	want := func(step string, wantType corev1.ServiceType, wantPorts ...string) {
		t.Helper()
		typ, ports := nodePorts(ctx, t, c)
		if typ != wantType || strings.Join(ports, ",") != strings.Join(wantPorts, ",") {
			t.Fatalf("%s: the dns Service is %s %v, want %s %v", step, typ, ports, wantType, wantPorts)
		}
	}

	helm(t, append(append([]string{"install", releaseName, chartDir, "--create-namespace"}, on...), nodePort...)...)
	want("install as NodePort 30053", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")
	helm(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), clusterIP...)...)
	want("NodePort to ClusterIP", corev1.ServiceTypeClusterIP, "53:0/UDP", "53:0/TCP")

	out, err := helmErr(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), nodePort...)...)
	if err == nil || !strings.Contains(err.Error(), "kubernetes/kubernetes#105610") || !strings.Contains(err.Error(), "delete service "+releaseName+"-dns") {
		t.Fatalf("ClusterIP to NodePort 30053 in place: %v (%s), want the chart's refusal naming kubernetes#105610 and the workaround", err, out)
	}
	want("the refused upgrade", corev1.ServiceTypeClusterIP, "53:0/UDP", "53:0/TCP")

	// The workaround: delete the Service, then upgrade; it is created with both node ports.
	deleteDNSService(ctx, t, c)
	helm(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), nodePort...)...)
	want("ClusterIP to NodePort 30053 after deleting the Service", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")
	helm(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), nodePort...)...)
	want("the same values again", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")

	// A node port Kubernetes chooses: no fixed number to lose, the switch is done in place.
	helm(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), clusterIP...)...)
	helm(t, append(append([]string{"upgrade", releaseName, chartDir}, on...), "--set", "dns.service.type=NodePort")...)
	typ, ports := nodePorts(ctx, t, c)
	if typ != corev1.ServiceTypeNodePort || len(ports) != 2 || strings.HasSuffix(strings.Split(ports[0], "/")[0], ":0") || strings.HasSuffix(strings.Split(ports[1], "/")[0], ":0") {
		t.Fatalf("ClusterIP to NodePort without a fixed node port: %s %v, want both ports with a node port", typ, ports)
	}
	t.Logf("ClusterIP to NodePort, node ports chosen by Kubernetes: %v", ports)
}

// TestHelmRollbackKeepsBothNodePortsOrRefuses: helm rollback renders nothing (it applies the
// stored manifest of an older revision with the same strategic merge patch), so the chart's
// template check cannot see it. An upgrade without the values file (only --set image.tag)
// turns the NodePort 30053 Service into a ClusterIP one; rolling back to the NodePort revision would give 30053 to UDP
// only and TCP a random node port. The chart's ValidatingAdmissionPolicy refuses that patch
// (the Service keeps its ports, helm rollback fails naming the workaround); after the documented
// `kubectl delete service`, the same rollback creates the Service with 30053 on both ports.
func TestHelmRollbackKeepsBothNodePortsOrRefuses(t *testing.T) {
	helmBin(t)
	kc, c := startHelmEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := []string{"--kubeconfig", kc, "--namespace", releaseNS}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("dns:\n  service: {type: NodePort, nodePort: 30053}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(step string, wantType corev1.ServiceType, wantPorts ...string) {
		t.Helper()
		typ, ports := nodePorts(ctx, t, c)
		if typ != wantType || strings.Join(ports, ",") != strings.Join(wantPorts, ",") {
			t.Fatalf("%s: the dns Service is %s %v, want %s %v", step, typ, ports, wantType, wantPorts)
		}
	}
	helm(t, append([]string{"install", releaseName, chartDir, "--create-namespace", "-f", values}, on...)...)
	want("revision 1: NodePort 30053", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")
	waitGuardActive(ctx, t, c)
	// With only --set: a value left out falls back to the chart's default (with no value at all,
	// helm reuses the release's).
	helm(t, append([]string{"upgrade", releaseName, chartDir, "--set", "image.tag=v2"}, on...)...)
	want("revision 2: upgraded with --set image.tag only", corev1.ServiceTypeClusterIP, "53:0/UDP", "53:0/TCP")

	out, err := helmErr(t, append([]string{"rollback", releaseName, "1"}, on...)...)
	typ, ports := nodePorts(ctx, t, c)
	t.Logf("helm rollback to revision 1: %v %s; the dns Service is %s %v", err, out, typ, ports)
	if err == nil {
		want("rolled back to revision 1", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")
		return
	}
	if !strings.Contains(err.Error(), "kubernetes/kubernetes#105610") || !strings.Contains(err.Error(), "delete service "+releaseName+"-dns") {
		t.Fatalf("helm rollback failed with %v, want the chart's refusal naming kubernetes#105610 and the workaround", err)
	}
	want("the refused rollback", corev1.ServiceTypeClusterIP, "53:0/UDP", "53:0/TCP")

	deleteDNSService(ctx, t, c)
	helm(t, append([]string{"rollback", releaseName, "1"}, on...)...)
	want("rolled back to revision 1 after deleting the Service", corev1.ServiceTypeNodePort, "53:30053/UDP", "53:30053/TCP")
}

// deleteDNSService deletes the dns Service and waits until it is gone.
func deleteDNSService(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	svc := &corev1.Service{}
	svc.Namespace, svc.Name = releaseNS, releaseName+"-dns"
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the dns Service deleted", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}

// waitGuardActive waits until the API server enforces the chart's node port policy on the dns
// Service (a policy takes effect once the API server's informer has it): a server-side dry-run
// update giving TCP another node port is refused.
func waitGuardActive(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var policies admissionregistrationv1.ValidatingAdmissionPolicyList
	if err := c.List(ctx, &policies); err != nil {
		t.Fatal(err)
	}
	if len(policies.Items) == 0 {
		t.Log("the chart rendered no ValidatingAdmissionPolicy")
		return
	}
	eventually(t, time.Minute, "the dns Service's node port policy enforced", func() error {
		var svc corev1.Service
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: releaseName + "-dns"}, &svc); err != nil {
			return err
		}
		svc.Spec.Ports[1].NodePort = 30054
		if err := c.Update(ctx, &svc, client.DryRunAll); err == nil {
			return errors.New("a dry-run update with TCP on node port 30054 was accepted")
		} else if !strings.Contains(err.Error(), "kubernetes/kubernetes#105610") {
			return err
		}
		return nil
	})
}
